use serde_json::json;

use super::render;
use crate::state::Node;

fn nodes() -> Vec<Node> {
    vec![
        Node {
            name: "node-1".into(),
            ns: "x".into(),
            ip: "10.128.0.2".into(),
            index: 1,
            pod_cidr: "10.64.0.0/24".into(),
        },
        Node {
            name: "node-2".into(),
            ns: "y".into(),
            ip: "10.128.0.3".into(),
            index: 2,
            pod_cidr: "10.64.1.0/24".into(),
        },
    ]
}

#[test]
fn rule_applies_to_tagged_nodes_with_ports_and_ranges() {
    let instances = vec![
        json!({"networkInterfaces": [{"networkIP": "10.128.0.2"}], "tags": {"items": ["web"]}}),
        json!({"networkInterfaces": [{"networkIP": "10.128.0.3"}], "tags": {"items": ["other"]}}),
    ];
    let fws = vec![json!({
        "name": "k8s-fw-a", "direction": "INGRESS", "targetTags": ["web"],
        "sourceRanges": ["192.0.2.0/24"], "destinationRanges": ["203.0.113.5"],
        "allowed": [{"IPProtocol": "tcp", "ports": ["80", "30000-30005"]}]
    })];
    let out = render(&fws, &instances, &nodes());
    assert!(
        out.contains("-A LAB-FW -o n1 -s 192.0.2.0/24 -d 203.0.113.5 -p tcp --dport 80 "),
        "{out}"
    );
    assert!(out.contains("--dport 30000:30005"), "{out}");
    assert!(!out.contains("-o n2"), "untagged node must not be opened: {out}");
    assert!(out.ends_with("-A LAB-FW -j DROP\nCOMMIT\n"));
}

#[test]
fn disabled_and_egress_rules_open_nothing() {
    let instances = vec![json!({"networkInterfaces": [{"networkIP": "10.128.0.2"}]})];
    let fws = vec![
        json!({"name": "a", "disabled": true, "allowed": [{"IPProtocol": "tcp"}]}),
        json!({"name": "b", "direction": "EGRESS", "allowed": [{"IPProtocol": "tcp"}]}),
        json!({"name": "c", "allowed": [{"IPProtocol": "all"}]}),
    ];
    let out = render(&fws, &instances, &nodes());
    assert!(!out.contains("\"a\"") && !out.contains("\"b\""), "{out}");
    // No target tags: every node, every protocol.
    assert!(
        out.contains("-A LAB-FW -o n1 -s 0.0.0.0/0 -d 0.0.0.0/0 -m comment --comment \"c\" -j ACCEPT"),
        "{out}"
    );
    assert!(out.contains("-o n2"), "{out}");
}
