//! Chain names exactly as upstream kube-proxy computes them: prefix + the first 16 characters of
//! base32(sha256(portName + protocol [+ endpoint])).

use data_encoding::BASE32;
use sha2::{Digest, Sha256};

pub const KUBE_SERVICES: &str = "KUBE-SERVICES";
pub const KUBE_EXTERNAL_SERVICES: &str = "KUBE-EXTERNAL-SERVICES";
pub const KUBE_NODEPORTS: &str = "KUBE-NODEPORTS";
pub const KUBE_POSTROUTING: &str = "KUBE-POSTROUTING";
pub const KUBE_MARK_MASQ: &str = "KUBE-MARK-MASQ";
pub const KUBE_FORWARD: &str = "KUBE-FORWARD";
pub const KUBE_PROXY_FIREWALL: &str = "KUBE-PROXY-FIREWALL";
pub const KUBE_PROXY_CANARY: &str = "KUBE-PROXY-CANARY";
pub const KUBE_FIREWALL: &str = "KUBE-FIREWALL";

/// nfacct counters upstream's rules feed (pkg/proxy/metrics): INVALID packets dropped in KUBE-FORWARD,
/// and NodePort connections accepted on 127.0.0.0/8.
pub const NFACCT_CT_STATE_INVALID_DROPPED: &str = "ct_state_invalid_dropped_pkts";
pub const NFACCT_LOCALHOST_NODEPORTS: &str = "localhost_nps_accepted_pkts";

pub const SVC_PREFIX: &str = "KUBE-SVC-";
pub const SVL_PREFIX: &str = "KUBE-SVL-";
pub const EXT_PREFIX: &str = "KUBE-EXT-";
pub const FW_PREFIX: &str = "KUBE-FW-";
pub const SEP_PREFIX: &str = "KUBE-SEP-";
/// svcnet's own destination-prefix dispatch chains (tree layout). Not an upstream name.
pub const DST_PREFIX: &str = "KUBE-DST-";
/// svcnet's own endpoint-group chains under a large KUBE-SVC/KUBE-SVL chain (tree layout, see
/// `render/endpoints.rs`). Not an upstream name; no upstream chain starts with it.
pub const EPG_PREFIX: &str = "KUBE-EPG-";

fn hash16(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
    }
    let encoded = BASE32.encode(&h.finalize());
    encoded[..16].to_string()
}

/// `KUBE-SVC-…` for a service port name like `default/hostnames` and a lower-case protocol.
pub fn svc_chain(port_name: &str, proto: &str) -> String {
    format!("{SVC_PREFIX}{}", hash16(&[port_name, proto]))
}

pub fn svl_chain(port_name: &str, proto: &str) -> String {
    format!("{SVL_PREFIX}{}", hash16(&[port_name, proto]))
}

pub fn ext_chain(port_name: &str, proto: &str) -> String {
    format!("{EXT_PREFIX}{}", hash16(&[port_name, proto]))
}

pub fn fw_chain(port_name: &str, proto: &str) -> String {
    format!("{FW_PREFIX}{}", hash16(&[port_name, proto]))
}

/// `KUBE-SEP-…`; `endpoint` is `ip:port`, IPv6 in brackets (`[fd00::1]:80`).
pub fn sep_chain(port_name: &str, proto: &str, endpoint: &str) -> String {
    format!("{SEP_PREFIX}{}", hash16(&[port_name, proto, endpoint]))
}

/// Dispatch chain for one destination prefix (tree layout).
pub fn dst_chain(prefix: &str) -> String {
    format!("{DST_PREFIX}{}", hash16(&[prefix]))
}

/// Endpoint-group chain `group` (a path like `3.1` in the tree) under the service chain `owner`.
/// The owner's full name goes into the hash, so the groups of a KUBE-SVC and a KUBE-SVL chain (or of
/// two services) never share a name; the distinct prefix keeps them apart from every other kind.
pub fn epg_chain(owner: &str, group: &str) -> String {
    // The space cannot occur in a chain name, so (owner, group) pairs cannot run into each other.
    format!("{EPG_PREFIX}{}", hash16(&[owner, " ", group]))
}

/// Chains whose whole content svcnet owns and may flush/delete when stale.
pub fn is_service_chain(name: &str) -> bool {
    [
        SVC_PREFIX, SVL_PREFIX, EXT_PREFIX, FW_PREFIX, SEP_PREFIX, DST_PREFIX, EPG_PREFIX,
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Current upstream names an unnamed port `ns/name` (pkg/proxy/types.go, fmtPortName); the vectors
    // are the chain names kube-proxy v1.34 writes for these ports.
    #[test]
    fn current_upstream_vectors() {
        assert_eq!(svc_chain("default/hostnames", "tcp"), "KUBE-SVC-YN5D6RYVEVZOH44Q");
        assert_eq!(
            sep_chain("default/hostnames", "tcp", "10.76.0.9:9376"),
            "KUBE-SEP-Z2UFIHORS27IVXDM"
        );
        assert_eq!(
            svc_chain("kube-system/kube-dns:dns", "udp"),
            "KUBE-SVC-TCOU7JCQXEZGVUNU"
        );
    }

    // The hash itself against the 2017 walkthroughs (Kubernetes 1.5 printed an unnamed port with a
    // trailing colon, so its strings differ; the function is the same).
    #[test]
    fn seed_vectors() {
        assert_eq!(
            svc_chain("default/hostnames:", "tcp"),
            "KUBE-SVC-NWV5X2332I4OT4T3"
        );
        assert_eq!(
            sep_chain("default/hostnames:", "tcp", "10.76.0.9:9376"),
            "KUBE-SEP-EV2NQKURMPKCP5UI"
        );
        assert_eq!(
            sep_chain("default/hostnames:", "tcp", "10.76.0.10:9376"),
            "KUBE-SEP-BWZ646KDVNVKXICT"
        );
        assert_eq!(
            svc_chain("kube-system/kube-dns:dns", "udp"),
            "KUBE-SVC-TCOU7JCQXEZGVUNU"
        );
        assert_eq!(
            svc_chain("default/kubernetes:https", "tcp"),
            "KUBE-SVC-NPX46M4PTMTKRN6Y"
        );
    }

    #[test]
    fn protocol_changes_hash() {
        assert_ne!(svc_chain("default/x", "tcp"), svc_chain("default/x", "udp"));
        assert_ne!(svc_chain("default/x", "tcp"), svl_chain("default/x", "tcp"));
    }

    #[test]
    fn names_fit_iptables_limit() {
        for n in [
            svc_chain("a/b:c", "sctp"),
            sep_chain("a/b:c", "tcp", "[fd00::1]:80"),
            dst_chain("10.0.0.0/8"),
            epg_chain(&svl_chain("a/b:c", "tcp"), "15.15.15"),
        ] {
            assert!(n.len() <= 28, "{n}");
        }
        assert!(is_service_chain("KUBE-DST-AAAA"));
        assert!(is_service_chain(&epg_chain("KUBE-SVC-X", "0")));
        assert!(!is_service_chain("KUBE-SERVICES"));
        assert!(!is_service_chain("DOCKER"));
    }
}
