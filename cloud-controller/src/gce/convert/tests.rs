use google_cloud_compute_v1::model;

use super::{from_model, prune, to_model};
use crate::objects::{Firewall, FirewallAllowed, ForwardingRule};

#[test]
fn firewall_mirror_round_trips_through_the_client_model() {
    let fw = Firewall {
        name: "k8s-fw-a1".into(),
        description: "{\"kubernetes.io/service-name\":\"default/web\"}".into(),
        network: "https://x/compute/v1/projects/p/global/networks/default".into(),
        source_ranges: vec!["0.0.0.0/0".into()],
        destination_ranges: vec!["203.0.113.5".into()],
        target_tags: vec!["node".into()],
        allowed: vec![FirewallAllowed {
            ip_protocol: "tcp".into(),
            ports: vec!["80".into(), "443".into()],
        }],
    };
    let m: model::Firewall = to_model("t", &fw).expect("to model");
    assert_eq!(m.name.as_deref(), Some("k8s-fw-a1"));
    assert_eq!(m.allowed[0].ports, ["80", "443"]);
    let back: Firewall = from_model("t", &m).expect("from model");
    assert_eq!(back, fw);
}

#[test]
fn empty_fields_are_left_to_gce_defaults() {
    let fr = ForwardingRule {
        name: "a1".into(),
        ip_address: "203.0.113.5".into(),
        ip_protocol: "TCP".into(),
        port_range: "80-443".into(),
        target: "t".into(),
        ..Default::default()
    };
    let m: model::ForwardingRule = to_model("t", &fr).expect("to model");
    assert!(m.network_tier.is_none(), "empty tier not sent: {m:?}");
    assert_eq!(m.ip_address.as_deref(), Some("203.0.113.5"));
    let mut v = serde_json::json!({"a": "", "b": [], "c": {"d": null, "e": 1}, "f": [{"g": ""}]});
    prune(&mut v);
    assert_eq!(v, serde_json::json!({"c": {"e": 1}, "f": [{}]}));
}
