use super::*;

#[test]
fn load_balancer_name_is_a_plus_uid_without_dashes_cut_to_32() {
    let name = load_balancer_name("4f6b2c1e-9a3d-4b8e-8c7f-0123456789ab");
    assert_eq!(name, "a4f6b2c1e9a3d4b8e8c7f0123456789a");
    assert_eq!(name.len(), 32);
    assert_eq!(
        load_balancer_name("abc-def"),
        "aabcdef",
        "short UIDs are not padded"
    );
    // Non-ASCII input must not panic on the cut.
    assert_eq!(load_balancer_name(&"é".repeat(40)).chars().count(), 32);
}

#[test]
fn derived_names_match_upstream() {
    let lb = "a4f6b2c1e9a3d4b8e8c7f0123456789a";
    assert_eq!(firewall_name(lb), "k8s-fw-a4f6b2c1e9a3d4b8e8c7f0123456789a");
    assert_eq!(
        nodes_health_check_name("0123456789abcdef"),
        "k8s-0123456789abcdef-node"
    );
    assert_eq!(
        nodes_health_check_firewall_name("0123456789abcdef"),
        "k8s-0123456789abcdef-node-http-hc"
    );
    assert_eq!(local_health_check_name(lb), lb);
    assert_eq!(
        local_health_check_firewall_name(lb),
        "k8s-a4f6b2c1e9a3d4b8e8c7f0123456789a-http-hc"
    );
}

#[test]
fn route_names_cut_cluster_name_to_26() {
    let uid = "0b5a8f7e-1111-2222-3333-444455556666";
    assert_eq!(route_name("svcnet", uid), format!("svcnet-{uid}"));
    let long = "a-very-long-cluster-name-that-goes-on";
    let name = route_name(long, uid);
    assert_eq!(name, format!("a-very-long-cluster-name-t-{uid}"));
    assert_eq!(name.len(), 63, "26 + 1 + 36 is exactly GCE's limit");
    assert!(is_valid_gce_name(&name));
    // Multi-byte input is cut on a char boundary instead of panicking.
    assert!(route_prefix(&"ü".repeat(20)).ends_with('-'));
}

#[test]
fn gce_name_pattern() {
    for ok in ["a", "k8s-fw-abc", "a1", &format!("a{}", "b".repeat(62))] {
        assert!(is_valid_gce_name(ok), "{ok}");
    }
    for bad in [
        "",
        "1abc",
        "abc-",
        "Abc",
        "a_b",
        "a.b",
        &format!("a{}", "b".repeat(63)),
        "k8s-Cluster-node",
    ] {
        assert!(!is_valid_gce_name(bad), "{bad}");
    }
    let e = validate_gce_name("Bad", "Service default/web", "config.cluster_id").unwrap_err();
    assert_eq!(e.field(), "config.cluster_id");
}

#[test]
fn lb_names_reject_bad_cluster_id() {
    let e = LbNames::new(
        "4f6b2c1e-9a3d-4b8e-8c7f-0123456789ab",
        "Bad_ID",
        "Service default/web",
    )
    .unwrap_err();
    assert_eq!(e.metric_label(), "invalid_name");
    assert!(LbNames::new("4f6b2c1e-9a3d-4b8e-8c7f-0123456789ab", "0123456789abcdef", "x").is_ok());
}

#[test]
fn descriptions_are_upstream_bytes_for_plain_names() {
    assert_eq!(
        service_description("default/web"),
        r#"{"kubernetes.io/service-name":"default/web"}"#
    );
    assert_eq!(
        firewall_description("default/web", "203.0.113.1"),
        r#"{"kubernetes.io/service-name":"default/web", "kubernetes.io/service-ip":"203.0.113.1"}"#
    );
    assert_eq!(
        cluster_description("abc"),
        r#"{"kubernetes.io/cluster-id":"abc"}"#
    );
}

#[test]
fn descriptions_escape_hostile_strings() {
    let hostile = "a\"b\\c\nd\u{0}e</script>\u{2028}";
    for desc in [
        service_description(hostile),
        firewall_description(hostile, "\"1.2.3.4"),
        cluster_description(hostile),
    ] {
        let v: serde_json::Value = serde_json::from_str(&desc).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
        let obj = v.as_object().unwrap();
        assert!(obj.values().any(|x| x == hostile), "{desc}");
        assert!(!desc.contains('\n'), "no raw newline in {desc:?}");
    }
}
