use serde_json::json;

use super::{render, render6};
use crate::lb_targets::{Hop, InternalRule};

fn nodes() -> Vec<Hop> {
    vec![
        ("10.128.0.2".into(), "n1".into()),
        ("10.128.0.3".into(), "n2".into()),
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
    let out = render(&fws, &instances, &nodes(), &[]);
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
    let out = render(&fws, &instances, &nodes(), &[]);
    assert!(!out.contains("\"a\"") && !out.contains("\"b\""), "{out}");
    // No target tags: every node, every protocol.
    assert!(
        out.contains("-A LAB-FW -o n1 -s 0.0.0.0/0 -d 0.0.0.0/0 -m comment --comment \"c\" -j ACCEPT"),
        "{out}"
    );
    assert!(out.contains("-o n2"), "{out}");
}

#[test]
fn the_vm_is_filtered_like_the_outside_clients_and_nodes_are_not() {
    let out = render(&[], &[], &nodes(), &[]);
    assert!(out.contains("-A FORWARD -i cl+ -j LAB-FW\n"), "{out}");
    assert!(out.contains("-A FORWARD -i vm -j LAB-FW\n"), "{out}");
    assert!(!out.contains("-i n1"), "node traffic is not filtered: {out}");
    // Replies first, then the internal-address check, then the rules.
    let pos = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s} missing: {out}"));
    assert!(pos("ESTABLISHED,RELATED") < pos("-A FORWARD -j LAB-ILB"));
    assert!(pos("-A FORWARD -j LAB-ILB") < pos("-A FORWARD -i cl+ -j LAB-FW"));
}

fn ilb(name: &str, ip: &str, proto: Option<&str>, ports: &[&str]) -> InternalRule {
    InternalRule {
        name: name.into(),
        ip: ip.into(),
        protocol: proto.map(str::to_owned),
        ports: ports.iter().map(|p| p.to_string()).collect(),
    }
}

#[test]
fn internal_address_closed_to_outside_and_to_other_ports() {
    let internal = [
        ilb("a-tcp", "10.128.0.5", Some("tcp"), &["80", "8000-8002"]),
        ilb("a-udp", "10.128.0.5", Some("udp"), &["53"]),
        ilb("b-all", "10.128.0.6", Some("tcp"), &[]),
    ];
    let out = render(&[], &[], &nodes(), &internal);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("-A LAB-ILB")).collect();
    assert_eq!(
        lines,
        [
            "-A LAB-ILB -i cl+ -d 10.128.0.5/32 -m comment --comment \"internal address\" -j DROP",
            "-A LAB-ILB -i cl+ -d 10.128.0.6/32 -m comment --comment \"internal address\" -j DROP",
            "-A LAB-ILB -d 10.128.0.5/32 -p tcp --dport 80 -m comment --comment \"a-tcp\" -j RETURN",
            "-A LAB-ILB -d 10.128.0.5/32 -p tcp --dport 8000:8002 -m comment --comment \"a-tcp\" -j RETURN",
            // The UDP rule on the same address returns before that address's final drop.
            "-A LAB-ILB -d 10.128.0.5/32 -p udp --dport 53 -m comment --comment \"a-udp\" -j RETURN",
            // allPorts: every port of the protocol.
            "-A LAB-ILB -d 10.128.0.6/32 -p tcp -m comment --comment \"b-all\" -j RETURN",
            "-A LAB-ILB -d 10.128.0.5/32 -m comment --comment \"not forwarded\" -j DROP",
            "-A LAB-ILB -d 10.128.0.6/32 -m comment --comment \"not forwarded\" -j DROP",
        ]
    );
}

#[test]
fn l3_default_rule_forwards_every_protocol() {
    let out = render(&[], &[], &nodes(), &[ilb("l3", "10.128.0.7", None, &[])]);
    assert!(
        out.contains("-A LAB-ILB -d 10.128.0.7/32 -m comment --comment \"l3\" -j RETURN\n"),
        "{out}"
    );
}

#[test]
fn nodes_sharing_one_link_get_each_rule_once() {
    let bridge: Vec<Hop> = vec![
        ("172.18.0.2".into(), "br0".into()),
        ("172.18.0.3".into(), "br0".into()),
        ("172.18.0.4".into(), "br0".into()),
    ];
    let instances = vec![
        json!({"networkInterfaces": [{"networkIP": "172.18.0.2"}], "tags": {"items": ["web"]}}),
        json!({"networkInterfaces": [{"networkIP": "172.18.0.3"}], "tags": {"items": ["web"]}}),
        json!({"networkInterfaces": [{"networkIP": "172.18.0.4"}], "tags": {"items": ["other"]}}),
    ];
    let fws = vec![
        json!({"name": "k8s-fw-a", "targetTags": ["web"],
            "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}]}),
        json!({"name": "none", "targetTags": ["absent"], "allowed": [{"IPProtocol": "all"}]}),
    ];
    let out = render(&fws, &instances, &bridge, &[]);
    let accepts: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with("-j ACCEPT") && l.starts_with("-A LAB-FW"))
        .collect();
    assert_eq!(
        accepts,
        [
            "-A LAB-FW -o br0 -s 0.0.0.0/0 -d 0.0.0.0/0 -p tcp --dport 80 -m comment --comment \"k8s-fw-a\" -j ACCEPT"
        ],
        "{out}"
    );
}

/// The IPv4 firewall of a dual-stack RBS Service and its `-ipv6` twin, as ingress-gce makes them.
fn dual_stack_firewalls() -> Vec<serde_json::Value> {
    vec![
        json!({"name": "k8s2-x", "sourceRanges": ["0.0.0.0/0"], "destinationRanges": ["203.0.113.9"],
            "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}]}),
        json!({"name": "k8s2-x-ipv6", "sourceRanges": ["0::0/0"],
            "destinationRanges": ["2001:db8:4000::1:0:0"],
            "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}, {"IPProtocol": "icmp"}]}),
        // No source ranges: GCE's default source, IPv4 anywhere only.
        json!({"name": "open-v4", "allowed": [{"IPProtocol": "udp", "ports": ["53"]}]}),
    ]
}

#[test]
fn each_family_gets_only_its_own_ranges() {
    let instances = vec![json!({"networkInterfaces": [{"networkIP": "10.128.0.2"}]})];
    let one = vec![("10.128.0.2".to_owned(), "n1".to_owned())];
    let v4 = render(&dual_stack_firewalls(), &instances, &one, &[]);
    assert!(
        v4.contains("-s 0.0.0.0/0 -d 203.0.113.9 -p tcp --dport 80"),
        "{v4}"
    );
    assert!(v4.contains("-p udp --dport 53"), "{v4}");
    assert!(!v4.contains("k8s2-x-ipv6") && !v4.contains("::"), "{v4}");
    let v6 = render6(&dual_stack_firewalls(), &instances, &one, &[]);
    assert!(
        v6.contains("-A LAB-FW -o n1 -s 0::0/0 -d 2001:db8:4000::1:0:0 -p tcp --dport 80 -m comment --comment \"k8s2-x-ipv6\" -j ACCEPT"),
        "{v6}"
    );
    assert!(!v6.contains("203.0.113.9") && !v6.contains("open-v4"), "{v6}");
    assert!(!v6.contains("-p icmp"), "IPv4's ICMP has no IPv6 line: {v6}");
    assert!(v6.ends_with("-A LAB-FW -j DROP\nCOMMIT\n"), "{v6}");
}

#[test]
fn ipv6_internal_rule_closes_its_96_in_the_ipv6_table_only() {
    let instances = vec![json!({"networkInterfaces": [{"networkIP": "10.128.0.2"}]})];
    let internal = vec![
        InternalRule {
            name: "ailb".into(),
            ip: "10.128.0.5".into(),
            protocol: Some("tcp".into()),
            ports: vec!["80".into()],
        },
        InternalRule {
            name: "ailb-ipv6".into(),
            ip: "fd20:0:1::1:0:0/96".into(),
            protocol: Some("tcp".into()),
            ports: vec!["80".into()],
        },
    ];
    let v4 = render(&[], &instances, &nodes(), &internal);
    assert!(v4.contains("-A LAB-ILB -i cl+ -d 10.128.0.5/32"), "{v4}");
    assert!(!v4.contains("fd20"), "{v4}");
    let v6 = render6(&[], &instances, &nodes(), &internal);
    assert!(v6.contains("-A LAB-ILB -i cl+ -d fd20:0:1::1:0:0/96 "), "{v6}");
    assert!(
        v6.contains(
            "-A LAB-ILB -d fd20:0:1::1:0:0/96 -p tcp --dport 80 -m comment --comment \"ailb-ipv6\" -j RETURN"
        ),
        "{v6}"
    );
    assert!(!v6.contains("10.128.0.5"), "{v6}");
}
