use super::Metrics;

#[test]
fn counters_render_with_their_labels() {
    let m = Metrics::new();
    m.gce_call("create_firewall", "ok");
    m.gce_call("create_firewall", "ok");
    m.gce_call("delete_address", "already_done");
    m.sync("service", "retryable");
    m.set_leader(true);
    let text = m.render();
    assert!(
        text.contains(r#"svcnet_cloud_controller_gce_calls_total{call="create_firewall",result="ok"} 2"#),
        "{text}"
    );
    assert!(text.contains(r#"result="already_done"} 1"#), "{text}");
    assert!(
        text.contains(r#"svcnet_cloud_controller_syncs_total{controller="service",result="retryable"} 1"#),
        "{text}"
    );
    assert!(text.contains("svcnet_cloud_controller_leader 1"), "{text}");
}
