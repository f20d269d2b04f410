//! Expected names are ingress-gce's own test vectors (pkg/utils/namer/l4_namer_test.go TestL4Namer,
//! utils_test.go TestTrimFieldsEvenly; kube-system UID `kubesystem-uid1` as in frontendnamer_test.go).

use super::*;

const KUBE_SYSTEM_UID: &str = "kubesystem-uid1";
const LONG1: &str = "012345678901234567890123456789012345678901234567890123456789abc";
const LONG2: &str = "012345678901234567890123456789012345678901234567890123456789pqr";

#[test]
fn simple_service_names_match_ingress_gce() {
    let n = L4Namer::new(KUBE_SYSTEM_UID);
    let backend = "k8s2-7kpbhpki-namespace-name-956p2p7x";
    assert_eq!(n.backend("namespace", "name"), backend);
    assert_eq!(n.health_check("namespace", "name", false), backend);
    assert_eq!(
        n.health_check_firewall("namespace", "name", false),
        "k8s2-7kpbhpki-namespace-name-956p2p7x-fw"
    );
    assert_eq!(
        n.health_check("namespace", "name", true),
        "k8s2-7kpbhpki-l4-shared-hc"
    );
    assert_eq!(
        n.health_check_firewall("namespace", "name", true),
        "k8s2-7kpbhpki-l4-shared-hc-fw"
    );
    assert_eq!(
        n.forwarding_rule("namespace", "name", "TCP"),
        "k8s2-tcp-7kpbhpki-namespace-name-956p2p7x"
    );
    assert_eq!(
        n.forwarding_rule("namespace", "name", "L3_DEFAULT"),
        "k8s2-l3-7kpbhpki-namespace-name-956p2p7x"
    );
}

#[test]
fn long_namespace_and_name_are_trimmed_as_ingress_gce_does() {
    let n = L4Namer::new(KUBE_SYSTEM_UID);
    assert_eq!(
        n.backend(LONG1, LONG2),
        "k8s2-7kpbhpki-01234567890123456789-0123456789012345678-hwm400mg"
    );
    assert_eq!(
        n.health_check_firewall(LONG1, LONG2, false),
        "k8s2-7kpbhpki-01234567890123456789-0123456789012345678-hwm40-fw"
    );
    assert_eq!(
        n.forwarding_rule(LONG1, LONG2, "udp"),
        "k8s2-udp-7kpbhpki-012345678901234567-01234567890123456-hwm400mg"
    );
    assert_eq!(
        n.forwarding_rule(LONG1, LONG2, "L3_DEFAULT"),
        "k8s2-l3-7kpbhpki-012345678901234567-012345678901234567-hwm400mg"
    );
    for name in [
        n.backend(LONG1, LONG2),
        n.health_check_firewall(LONG1, LONG2, false),
    ] {
        assert!(name.len() <= 63, "{name}");
    }
}

#[test]
fn trim_fields_evenly_matches_upstream_cases() {
    let l = "01234567890123456789012345678901234567890123456789";
    assert_eq!(trim_fields_evenly(100, &[l, l]), [l, l]);
    assert_eq!(trim_fields_evenly(50, &[l, l]), [&l[..25], &l[..25]]);
    assert_eq!(trim_fields_evenly(10, &[l, l, l]), [&l[..4], &l[..3], &l[..3]]);
    assert_eq!(trim_fields_evenly(3, &[l, l, l]), [&l[..1], &l[..1], &l[..1]]);
    assert_eq!(trim_fields_evenly(1, &[l, &l[..1]]), [&l[..1], ""]);
    assert_eq!(trim_fields_evenly(5, &[l, &l[..1]]), [&l[..5], ""]);
    // Non-ASCII never panics on a cut (a hostile API server is not a DNS-label validator).
    assert!(trim_fields_evenly(5, &["ééééééé", "ééé"]).concat().len() <= 5);
}

#[test]
fn rbs_names_reuse_the_legacy_rule_name_and_the_shared_groups() {
    let n = L4Namer::new(KUBE_SYSTEM_UID);
    let uid = "4f6b2c1e-9a3d-4b8e-8c7f-0123456789ab";
    let names = RbsNames::new(
        &n,
        "0123456789abcdef",
        ("namespace", "name", uid),
        "Service namespace/name",
    )
    .expect("valid names");
    assert_eq!(names.lb, "a4f6b2c1e9a3d4b8e8c7f0123456789a");
    assert_eq!(names.backend, "k8s2-7kpbhpki-namespace-name-956p2p7x");
    assert_eq!(names.shared_health_check, "k8s2-7kpbhpki-l4-shared-hc");
    assert_eq!(
        names.shared_health_check_firewall,
        "k8s2-7kpbhpki-l4-shared-hc-fw"
    );
    assert_eq!(
        names.local_health_check_firewall,
        "k8s2-7kpbhpki-namespace-name-956p2p7x-fw"
    );
    assert_eq!(names.instance_group, "k8s-ig--0123456789abcdef");
    assert_eq!(names.ipv6.rule, "a4f6b2c1e9a3d4b8e8c7f0123456789a-ipv6");
    assert_eq!(names.ipv6.firewall, "k8s2-7kpbhpki-namespace-name-956p2p7x-ipv6");
    assert_eq!(
        names.ipv6.shared_health_check_firewall,
        "k8s2-7kpbhpki-l4-shared-hc-fw-ipv6"
    );
    assert_eq!(
        names.ipv6.local_health_check_firewall,
        "k8s2-7kpbhpki-namespace-name-956p2p7x-fw-ipv6"
    );
    // A name GCE would refuse is an error before any call.
    assert!(RbsNames::new(&n, "c", ("Bad_NS", "x", uid), "o").is_err());
}

#[test]
fn ipv6_names_keep_their_suffix_within_63_characters() {
    let n = L4Namer::new(KUBE_SYSTEM_UID);
    let backend = n.backend(LONG1, LONG2);
    assert_eq!(backend.len(), 63);
    let fw = n.ipv6_firewall(LONG1, LONG2);
    assert_eq!(fw, format!("{}-ipv6", &backend[..58]));
    let hc_fw = n.ipv6_health_check_firewall(LONG1, LONG2, false);
    assert_eq!(hc_fw, format!("{}-fw-ipv6", &backend[..55]));
    // The IPv4 and IPv6 firewalls of one Service never share a name.
    assert_ne!(fw, backend);
    assert_ne!(hc_fw, n.health_check_firewall(LONG1, LONG2, false));
}
