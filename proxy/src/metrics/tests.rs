use super::*;

fn encode(r: &Registry) -> String {
    let mut s = String::new();
    prometheus_client::encoding::text::encode(&mut s, r).expect("encode");
    s
}

#[test]
fn upstream_names_and_labels() {
    let (m, r) = Metrics::new();
    m.restore_failures
        .get_or_create(&family_labels(IpFamily::V4))
        .inc();
    m.rules_total
        .get_or_create(&table_labels(IpFamily::V4, "nat"))
        .set(7);
    m.sync_full_duration
        .get_or_create(&family_labels(IpFamily::V6))
        .observe(0.01);
    m.endpoint_changes_total.inc();
    let text = encode(&r);
    for want in [
        "kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family=\"IPv4\"} 1",
        "kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv4\",table=\"nat\"} 7",
        "kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 1",
        "kubeproxy_sync_proxy_rules_endpoint_changes_total 1",
        "# TYPE kubeproxy_sync_proxy_rules_service_changes_pending gauge",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn network_programming_buckets_match_upstream() {
    let b = network_programming_buckets();
    assert_eq!(b.len(), 1 + 2 + 59 + 12 + 7);
    assert_eq!(&b[..4], &[0.0, 0.25, 0.5, 1.0]);
    assert_eq!(b.last().copied(), Some(300.0));
    assert!(b.windows(2).all(|w| w[0] < w[1]));
}
