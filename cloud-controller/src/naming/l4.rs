//! Names of backend-service (RBS) network load balancers, as GKE's controller (kubernetes/ingress-gce,
//! pkg/utils/namer/l4_namer.go) derives them, so objects svcnet makes are the ones a GKE user knows:
//! `k8s2-{uid}-{ns}-{name}-{hash}` for the backend service, the per-service health check and the
//! nodes firewall; `k8s2-{uid}-l4-shared-hc` for the shared health check; `k8s2-{proto}-...` for the
//! per-protocol forwarding rules of mixed-protocol Services. `{uid}` is a hash of the kube-system
//! namespace's UID, `{hash}` one of uid, namespace and name ([`content_hash`], upstream
//! common.ContentHash). The single-protocol IPv4 forwarding rule and its address keep the legacy
//! `a<uid>` name (upstream l4netlb.go `frName`), like the target-pool rule.

use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::naming::{Ipv6Names, instance_group_name, json_str, load_balancer_name, validate_gce_name};

const PREFIX: &str = "k8s2";
/// Upstream maximumL4CombinedLength: the budget of `{ns}-{name}` (63 - k8s2, 4 dashes, 8 + 8).
const MAX_COMBINED: usize = 39;
const MAX_NAME: usize = 63;
/// Upstream clusterUIDLength and the suffix hash length.
const HASH_LEN: usize = 8;
const SHARED_HC_SUFFIX: &str = "l4-shared-hc";
const HC_FIREWALL_SUFFIX: &str = "-fw";
/// ingress-gce's `-ipv6` suffix of a dual-stack LB's IPv6 objects (namer and loadbalancers).
pub(crate) const IPV6_SUFFIX: &str = "-ipv6";

/// Upstream common.ContentHash: the first `n` bytes of sha256(s), each mod 36 as `0-9a-z`.
pub(crate) fn content_hash(s: &str, n: usize) -> String {
    const CHARS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    Sha256::digest(s.as_bytes())
        .iter()
        .take(n)
        .map(|b| char::from(CHARS[usize::from(*b) % CHARS.len()]))
        .collect()
}

/// `s` cut to at most `n` bytes (on a char boundary, so hostile input cannot panic; names reaching
/// here are DNS labels, i.e. ASCII, where this is upstream's byte slice).
fn cut(s: &str, n: usize) -> &str {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

/// Upstream namer.TrimFieldsEvenly: longer fields give up more, rounding remainders go to the
/// first fields.
pub(crate) fn trim_fields_evenly(max: usize, fields: &[&str]) -> Vec<String> {
    let total: usize = fields.iter().map(|f| f.len()).sum();
    if max == 0 || total <= max {
        return fields.iter().map(|f| (*f).to_owned()).collect();
    }
    let excess = total - max;
    let mut lengths: Vec<usize> = fields
        .iter()
        .map(|f| (f.len() - f.len() * excess / total).saturating_sub(1))
        .collect();
    let remaining = max.saturating_sub(lengths.iter().sum());
    for l in lengths.iter_mut().take(remaining) {
        *l += 1;
    }
    fields
        .iter()
        .zip(lengths)
        .map(|(f, l)| cut(f, l).to_owned())
        .collect()
}

/// Upstream GetSuffixedName: `name` cut so that `name + suffix` fits 63 characters.
pub(crate) fn suffixed(name: &str, suffix: &str) -> String {
    format!("{}{suffix}", cut(name, MAX_NAME.saturating_sub(suffix.len())))
}

/// The L4 namer of one cluster: `{uid}` = ContentHash(kube-system UID, 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct L4Namer {
    uid: String,
}

impl L4Namer {
    pub(crate) fn new(kube_system_uid: &str) -> Self {
        L4Namer {
            uid: content_hash(kube_system_uid, HASH_LEN),
        }
    }

    fn suffix(&self, namespace: &str, name: &str) -> String {
        content_hash(&format!("{};{namespace};{name}", self.uid), HASH_LEN)
    }

    fn trimmed(namespace: &str, name: &str, max: usize) -> String {
        trim_fields_evenly(max, &[namespace, name]).join("-")
    }

    /// Upstream L4Backend: the backend service, the nodes firewall (L4Firewall) and the
    /// per-service health check (L4HealthCheck with shared = false).
    pub(crate) fn backend(&self, namespace: &str, name: &str) -> String {
        [
            PREFIX,
            &self.uid,
            &Self::trimmed(namespace, name, MAX_COMBINED),
            &self.suffix(namespace, name),
        ]
        .join("-")
    }

    /// Upstream L4HealthCheck.
    pub(crate) fn health_check(&self, namespace: &str, name: &str, shared: bool) -> String {
        if shared {
            [PREFIX, &self.uid, SHARED_HC_SUFFIX].join("-")
        } else {
            self.backend(namespace, name)
        }
    }

    /// Upstream L4HealthCheckFirewall.
    pub(crate) fn health_check_firewall(&self, namespace: &str, name: &str, shared: bool) -> String {
        if shared {
            format!("{}{HC_FIREWALL_SUFFIX}", self.health_check(namespace, name, true))
        } else {
            suffixed(&self.backend(namespace, name), HC_FIREWALL_SUFFIX)
        }
    }

    /// Upstream L4IPv6Firewall: the IPv6 nodes firewall, the backend name + `-ipv6`.
    pub(crate) fn ipv6_firewall(&self, namespace: &str, name: &str) -> String {
        suffixed(&self.backend(namespace, name), IPV6_SUFFIX)
    }

    /// Upstream L4IPv6HealthCheckFirewall: `…-l4-shared-hc-fw-ipv6` or the backend name cut to
    /// fit `-fw-ipv6`.
    pub(crate) fn ipv6_health_check_firewall(&self, namespace: &str, name: &str, shared: bool) -> String {
        if shared {
            format!(
                "{}{IPV6_SUFFIX}",
                self.health_check_firewall(namespace, name, true)
            )
        } else {
            suffixed(
                &self.backend(namespace, name),
                &format!("{HC_FIREWALL_SUFFIX}{IPV6_SUFFIX}"),
            )
        }
    }

    /// Upstream L4ForwardingRule: `k8s2-{proto}-{uid}-{ns}-{name}-{hash}`, `L3_DEFAULT` as `l3`.
    #[cfg_attr(not(test), expect(dead_code, reason = "mixed-protocol rules, not built yet"))]
    pub(crate) fn forwarding_rule(&self, namespace: &str, name: &str, protocol: &str) -> String {
        let mut proto = protocol.to_lowercase();
        if proto == "l3_default" {
            proto = "l3".to_owned();
        }
        let budget = MAX_COMBINED.saturating_sub(proto.len() + 1);
        [
            PREFIX,
            &proto,
            &self.uid,
            &Self::trimmed(namespace, name, budget),
            &self.suffix(namespace, name),
        ]
        .join("-")
    }
}

/// ingress-gce's L4LBResourceDescription (pkg/utils/utils.go) of a Service's object: service name,
/// `api-version` `ga`, the IP when known (`service-ip`, omitted when empty).
pub(crate) fn l4_description(service_name: &str, ip: &str) -> String {
    let ip = if ip.is_empty() {
        String::new()
    } else {
        format!(",\"networking.gke.io/service-ip\":{}", json_str(ip))
    };
    format!(
        "{{\"networking.gke.io/service-name\":{},\"networking.gke.io/api-version\":\"ga\"{ip}}}",
        json_str(service_name)
    )
}

/// The description of an object all ETP Cluster Services share: upstream's
/// L4LBSharedResourcesDesc with the LB type (`XLB` for the health check; the firewall gets ""),
/// and an empty service name (that field has no omitempty upstream).
pub(crate) fn l4_shared_description(lb_type: &str) -> String {
    let text =
        format!("This resource is shared by all L4 {lb_type} Services using ExternalTrafficPolicy: Cluster.");
    format!(
        "{{\"networking.gke.io/service-name\":\"\",\"networking.gke.io/api-version\":\"ga\",\"networking.gke.io/resource-description\":{}}}",
        json_str(&text)
    )
}

/// Every name of one RBS network load balancer (single protocol, IPv4, instance-group backends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RbsNames {
    /// `a<uid>`: the forwarding rule and the address reserved while it is made.
    pub lb: String,
    /// `k8s2-{uid}-{ns}-{name}-{hash}`: backend service, nodes firewall, per-service health check.
    pub backend: String,
    /// `k8s2-{uid}-l4-shared-hc` and its firewall `…-fw` (ETP Cluster).
    pub shared_health_check: String,
    pub shared_health_check_firewall: String,
    /// The per-service check (ETP Local) is named like the backend; its firewall `…-fw`.
    pub local_health_check_firewall: String,
    /// The per-zone instance groups shared with the internal LBs (`k8s-ig--<cluster id>`).
    pub instance_group: String,
    /// The IPv6 objects of a dual-stack or IPv6-only Service (ingress-gce l4netlbipv6.go): the
    /// rule `a<uid>-ipv6`, the nodes firewall `…-ipv6`, the health-check firewalls `…-fw-ipv6`.
    pub ipv6: Ipv6Names,
}

impl RbsNames {
    /// Names of the Service `namespace/name` (uid `service_uid`); `object` names it in errors.
    pub(crate) fn new(
        namer: &L4Namer,
        cluster_id: &str,
        (namespace, name, service_uid): (&str, &str, &str),
        object: &str,
    ) -> Result<Self> {
        let lb = load_balancer_name(service_uid);
        let names = RbsNames {
            ipv6: Ipv6Names {
                rule: suffixed(&lb, IPV6_SUFFIX),
                firewall: namer.ipv6_firewall(namespace, name),
                shared_health_check_firewall: namer.ipv6_health_check_firewall(namespace, name, true),
                local_health_check_firewall: namer.ipv6_health_check_firewall(namespace, name, false),
            },
            lb,
            backend: namer.backend(namespace, name),
            shared_health_check: namer.health_check(namespace, name, true),
            shared_health_check_firewall: namer.health_check_firewall(namespace, name, true),
            local_health_check_firewall: namer.health_check_firewall(namespace, name, false),
            instance_group: instance_group_name(cluster_id),
        };
        validate_gce_name(&names.lb, object, "metadata.uid")?;
        // Namespace and name are DNS labels, but a hostile API server could send anything.
        validate_gce_name(&names.backend, object, "metadata.name")?;
        validate_gce_name(&names.local_health_check_firewall, object, "metadata.name")?;
        validate_gce_name(&names.ipv6.local_health_check_firewall, object, "metadata.name")?;
        validate_gce_name(&names.instance_group, object, "config.cluster_id")?;
        Ok(names)
    }
}

impl crate::naming::GuardNames for RbsNames {
    fn firewalls(&self) -> [&String; 3] {
        [
            &self.backend,
            &self.shared_health_check_firewall,
            &self.local_health_check_firewall,
        ]
    }
    fn health_checks(&self) -> [&String; 2] {
        [&self.shared_health_check, &self.backend]
    }
}

#[cfg(test)]
mod tests;
