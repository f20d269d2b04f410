//! Unit tests of the nftables renderer, one rule family at a time: each builds a small cluster from
//! YAML and checks the exact text upstream's nftables proxier writes.

use super::naming::*;
use super::*;
use crate::config::{DetectLocal, Layout, NodePortAddresses, RenderConfig};
use crate::fixtures::node;
use crate::model::{Family, ProxyState};
use crate::offline::input::parse_objects;

fn cfg() -> RenderConfig {
    crate::fixtures::cfg(Layout::Flat)
}

fn render_yaml(yaml: &str, cfg: &RenderConfig) -> Ruleset {
    inputs_yaml(yaml, cfg).render()
}

fn inputs_yaml(yaml: &str, cfg: &RenderConfig) -> Inputs {
    let objs = parse_objects(yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    Inputs::new(&state, node(), cfg.clone())
}

/// A chain's rules as text (comment appended as nft prints it).
fn rules(r: &Ruleset, chain: &str) -> Vec<String> {
    r.chain(chain)
        .unwrap_or_else(|| panic!("no chain {chain}"))
        .rules
        .iter()
        .map(|r| match &r.comment {
            Some(c) => format!("{} comment {}", r.text, quote(c)),
            None => r.text.clone(),
        })
        .collect()
}

/// The `add element` lines of one set or map.
fn elements(r: &Ruleset, container: &str) -> Vec<String> {
    r.text()
        .lines()
        .filter(|l| l.starts_with("add element ") && l.split(' ').nth(4) == Some(container))
        .map(|l| {
            l.split_once(" { ")
                .map(|(_, e)| e.trim_end_matches(" }").to_string())
                .unwrap_or_default()
        })
        .collect()
}

fn svc(name: &str, spec: &str) -> String {
    format!("---\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n")
}

fn svc_status(name: &str, spec: &str, lb_ip: &str) -> String {
    format!(
        "{}status: {{loadBalancer: {{ingress: [{{ip: {lb_ip}}}]}}}}\n",
        svc(name, spec)
    )
}

/// `(ip, node, conditions)` endpoints of one TCP port.
fn eps(svc: &str, family: &str, list: &[(&str, &str, &str)], port: u16) -> String {
    let mut s = format!(
        "---\nkind: EndpointSlice\nmetadata: {{name: {svc}-x, namespace: default, labels: {{kubernetes.io/service-name: {svc}}}}}\naddressType: {family}\nports: [{{port: {port}, protocol: TCP}}]\nendpoints:\n"
    );
    for (ip, node, cond) in list {
        s.push_str(&format!(
            "- {{addresses: [\"{ip}\"], conditions: {cond}, nodeName: {node}}}\n"
        ));
    }
    s
}

const READY: &str = "{ready: true}";
const TERMINATING: &str = "{ready: false, serving: true, terminating: true}";

fn chain_names(name: &str) -> ServiceNames {
    ServiceNames::new(&crate::model::ServicePortName {
        namespace: "default".into(),
        name: name.into(),
        port: String::new(),
        protocol: crate::model::Protocol::Tcp,
    })
}

#[test]
fn base_chains_and_jumps() {
    let r = render_yaml("", &cfg());
    let text = r.text();
    assert!(text.starts_with("add table ip kube-proxy { comment \"rules for kube-proxy\" ; }\n"));
    assert!(
        text.contains(
            "add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }\n"
        )
    );
    assert!(text.contains(
        "add chain ip kube-proxy filter-prerouting-pre-dnat { type filter hook prerouting priority -110 ; }\n"
    ));
    assert!(
        text.contains(
            "add chain ip kube-proxy nat-postrouting { type nat hook postrouting priority 100 ; }\n"
        )
    );
    assert_eq!(
        rules(&r, FILTER_OUTPUT),
        vec![
            "ct state new jump service-endpoints-check",
            "ct state new jump cluster-ips-check"
        ]
    );
    assert_eq!(rules(&r, NAT_OUTPUT), vec!["jump services"]);
    assert_eq!(
        rules(&r, MASQUERADING),
        vec![
            "mark and 0x4000 == 0 return",
            "mark set mark xor 0x4000",
            "masquerade fully-random"
        ]
    );
    assert_eq!(rules(&r, MARK_MASQ), vec!["mark set mark or 0x4000"]);
    // No service CIDRs known: only the reject rule.
    assert_eq!(
        rules(&r, CLUSTER_IPS_CHECK),
        vec!["ip daddr @cluster-ips reject comment \"Reject traffic to invalid ports of ClusterIPs\""]
    );
    assert_eq!(
        r.chain(REJECT_CHAIN).and_then(|c| c.comment.as_deref()),
        Some("helper for @no-endpoint-services / @no-endpoint-nodeports")
    );
}

#[test]
fn nodeports_on_every_local_address() {
    let r = render_yaml("", &cfg());
    assert_eq!(
        rules(&r, SERVICES),
        vec![
            "ip daddr . meta l4proto . th dport vmap @service-ips",
            "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
        ]
    );
    assert_eq!(
        rules(&r, NODEPORT_ENDPOINTS_CHECK),
        vec!["ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports"]
    );
    assert!(
        !r.text().contains("nodeport-ips"),
        "no nodeport-ips set when all addresses match"
    );
}

#[test]
fn nodeport_addresses_fill_the_set_without_loopback() {
    let cfg = RenderConfig {
        nodeport_addresses: NodePortAddresses::parse(&["10.140.0.0/16".into(), "127.0.0.0/8".into()])
            .expect("cidrs"),
        ..cfg()
    };
    let mut node = node();
    node.interface_ips = vec![
        node.ips[0],
        "10.150.0.2".parse().expect("ip"),
        "127.0.0.1".parse().expect("ip"),
    ];
    let r = render(&ProxyState::default(), &node, &cfg);
    assert_eq!(
        rules(&r, SERVICES)[1],
        "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports"
    );
    assert_eq!(elements(&r, NODEPORT_IPS), vec!["10.140.0.2"]);
}

/// `primary` is one address per family, the node's first (upstream's NodeIPs), even when the Node
/// lists more InternalIPs.
#[test]
fn primary_nodeport_address_is_the_first_ip_of_the_family() {
    let mut node = node();
    node.ips
        .extend(["10.140.0.9", "fd00::2", "fd00::3"].map(|ip| ip.parse::<std::net::IpAddr>().expect("ip")));
    node.interface_ips = node.ips.clone();
    for (family, want) in [
        (Family::V4, node.ips[0].to_string()),
        (Family::V6, "fd00::2".to_string()),
    ] {
        let cfg = RenderConfig {
            family,
            nodeport_addresses: NodePortAddresses::parse(&["primary".into()]).expect("primary"),
            ..cfg()
        };
        let r = render(&ProxyState::default(), &node, &cfg);
        assert_eq!(elements(&r, NODEPORT_IPS), vec![want]);
    }
}

#[test]
fn service_cidrs_and_masquerade_bit() {
    let cfg = RenderConfig {
        service_cidrs: vec![
            "10.96.0.0/16".parse().expect("cidr"),
            "fd00:96::/112".parse().expect("cidr"),
            "10.97.0.0/16".parse().expect("cidr"),
        ],
        masquerade_bit: 0,
        ..cfg()
    };
    let r = render_yaml("", &cfg);
    assert_eq!(
        rules(&r, CLUSTER_IPS_CHECK)[1],
        "ip daddr { 10.96.0.0/16,10.97.0.0/16 } drop comment \"Drop traffic to unallocated ClusterIPs\""
    );
    assert_eq!(rules(&r, MARK_MASQ), vec!["mark set mark or 0x1"]);
}

#[test]
fn ipv6_family_words() {
    let cfg = RenderConfig {
        family: Family::V6,
        detect_local: DetectLocal::ClusterCidr(vec!["fd00:10::/64".parse().expect("cidr")]),
        ..cfg()
    };
    let y = svc(
        "web",
        "{clusterIP: 10.79.0.1, clusterIPs: [10.79.0.1, \"fd00:79::1\"], ipFamilies: [IPv4, IPv6], ports: [{port: 80, protocol: TCP}]}",
    ) + &eps("web", "IPv6", &[("fd00:10::5", "node-1", READY)], 8080);
    let r = render_yaml(&y, &cfg);
    let text = r.text();
    assert!(text.starts_with("add table ip6 kube-proxy "));
    assert!(text.contains(
        "add set ip6 kube-proxy cluster-ips { type ipv6_addr ; comment \"Active ClusterIPs\" ; }\n"
    ));
    assert_eq!(
        rules(&r, SERVICES)[1],
        "fib daddr type local ip6 daddr != ::1 meta l4proto . th dport vmap @service-nodeports"
    );
    let n = chain_names("web");
    assert_eq!(
        rules(&r, &n.cluster)[0],
        "ip6 daddr fd00:79::1 ip6 saddr != fd00:10::/64 jump mark-for-masquerade"
    );
    let ep = "endpoint-".to_string() + &hash_and_truncate("default/web/tcp/__fd00.10..5/8080");
    assert_eq!(
        rules(&r, &ep),
        vec![
            "ip6 saddr fd00:10::5 jump mark-for-masquerade",
            "meta l4proto tcp dnat to [fd00:10::5]:8080"
        ]
    );
    assert_eq!(elements(&r, CLUSTER_IPS), vec!["fd00:79::1"]);
}

#[test]
fn no_endpoints_reject_everywhere() {
    let y = svc_status(
        "web",
        "{type: LoadBalancer, clusterIP: 10.79.0.1, externalIPs: [192.0.2.7], ports: [{port: 80, protocol: TCP, nodePort: 30080}]}",
        "198.51.100.9",
    );
    let r = render_yaml(&y, &cfg());
    let c = "comment \"default/web\" : goto reject-chain";
    assert_eq!(
        elements(&r, NO_ENDPOINT_SERVICES),
        vec![
            format!("10.79.0.1 . tcp . 80 {c}"),
            format!("192.0.2.7 . tcp . 80 {c}"),
            format!("198.51.100.9 . tcp . 80 {c}"),
        ]
    );
    assert_eq!(
        elements(&r, NO_ENDPOINT_NODEPORTS),
        vec![format!("tcp . 30080 {c}")]
    );
    assert!(elements(&r, SERVICE_IPS).is_empty());
    assert!(
        r.chains().iter().all(|c| !is_service_chain(&c.name)),
        "no service chains"
    );
}

#[test]
fn external_policy_local_without_local_endpoints() {
    let y = svc_status(
        "web",
        "{type: LoadBalancer, externalTrafficPolicy: Local, clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP, nodePort: 30080}]}",
        "198.51.100.9",
    ) + &eps("web", "IPv4", &[("10.76.1.5", "node-2", READY)], 8080);
    let r = render_yaml(&y, &cfg());
    let n = chain_names("web");
    assert_eq!(
        rules(&r, &n.external),
        vec![
            format!(
                "ip saddr 10.76.0.0/14 goto {} comment \"short-circuit pod traffic\"",
                n.cluster
            ),
            "fib saddr type local jump mark-for-masquerade comment \"masquerade local traffic\"".to_string(),
            format!(
                "fib saddr type local goto {} comment \"short-circuit local traffic\"",
                n.cluster
            ),
        ]
    );
    assert_eq!(
        elements(&r, NO_ENDPOINT_SERVICES),
        vec!["198.51.100.9 . tcp . 80 comment \"default/web\" : drop"]
    );
    assert_eq!(
        elements(&r, NO_ENDPOINT_NODEPORTS),
        vec!["tcp . 30080 comment \"default/web\" : drop"]
    );
    assert!(r.chain(&n.local).is_none());
    let s = r.services.values().next().expect("one port");
    assert!(s.no_local_external && !s.no_local_internal);
}

#[test]
fn external_policy_local_with_local_endpoint() {
    let y = svc(
        "web",
        "{type: NodePort, externalTrafficPolicy: Local, clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP, nodePort: 30080}]}",
    ) + &eps(
        "web",
        "IPv4",
        &[("10.76.1.5", "node-2", READY), ("10.76.0.5", "node-1", READY)],
        8080,
    );
    let r = render_yaml(&y, &cfg());
    let n = chain_names("web");
    assert_eq!(rules(&r, &n.external).last(), Some(&format!("goto {}", n.local)));
    let local = rules(&r, &n.local);
    assert_eq!(
        local.len(),
        1,
        "no masquerade rule: internal traffic uses the cluster chain"
    );
    assert!(local[0].starts_with("numgen random mod 1 vmap { 0 : goto endpoint-"));
    assert!(rules(&r, &n.cluster)[1].starts_with("numgen random mod 2 vmap { 0 : goto endpoint-"));
    assert_eq!(
        elements(&r, SERVICE_NODEPORTS),
        vec![format!("tcp . 30080 : goto {}", n.external)]
    );
}

#[test]
fn internal_policy_local_uses_the_local_chain() {
    let y = svc(
        "web",
        "{internalTrafficPolicy: Local, clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP}]}",
    ) + &eps("web", "IPv4", &[("10.76.0.5", "node-1", READY)], 8080);
    let r = render_yaml(&y, &cfg());
    let n = chain_names("web");
    assert_eq!(
        elements(&r, SERVICE_IPS),
        vec![format!("10.79.0.1 . tcp . 80 : goto {}", n.local)]
    );
    assert_eq!(
        rules(&r, &n.local)[0],
        "ip daddr 10.79.0.1 ip saddr != 10.76.0.0/14 jump mark-for-masquerade"
    );
    assert!(r.chain(&n.cluster).is_none());

    // No local endpoint: internal traffic dropped.
    let y = svc(
        "web",
        "{internalTrafficPolicy: Local, clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP}]}",
    ) + &eps("web", "IPv4", &[("10.76.1.5", "node-2", READY)], 8080);
    let r = render_yaml(&y, &cfg());
    assert_eq!(
        elements(&r, NO_ENDPOINT_SERVICES),
        vec!["10.79.0.1 . tcp . 80 comment \"default/web\" : drop"]
    );
}

#[test]
fn session_affinity_sets_and_rules() {
    let y = svc(
        "web",
        "{clusterIP: 10.79.0.1, sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}, ports: [{port: 80, protocol: TCP}]}",
    ) + &eps(
        "web",
        "IPv4",
        &[("10.76.0.5", "node-1", READY), ("10.76.0.6", "node-1", READY)],
        8080,
    );
    let r = render_yaml(&y, &cfg());
    let n = chain_names("web");
    let base5 = hash_and_truncate("default/web/tcp/__10.76.0.5/8080");
    let base6 = hash_and_truncate("default/web/tcp/__10.76.0.6/8080");
    assert_eq!(
        rules(&r, &n.cluster),
        vec![
            "ip daddr 10.79.0.1 ip saddr != 10.76.0.0/14 jump mark-for-masquerade".to_string(),
            format!("ip saddr @affinity-{base5} goto endpoint-{base5}"),
            format!("ip saddr @affinity-{base6} goto endpoint-{base6}"),
            format!("numgen random mod 2 vmap {{ 0 : goto endpoint-{base5} , 1 : goto endpoint-{base6} }}"),
        ]
    );
    assert_eq!(
        rules(&r, &format!("endpoint-{base5}")),
        vec![
            "ip saddr 10.76.0.5 jump mark-for-masquerade".to_string(),
            format!("update @affinity-{base5} {{ ip saddr }}"),
            "meta l4proto tcp dnat to 10.76.0.5:8080".to_string(),
        ]
    );
    assert!(r.text().contains(&format!(
        "add set ip kube-proxy affinity-{base5} {{ type ipv4_addr ; flags dynamic,timeout ; timeout 600s ; }}\n"
    )));
}

#[test]
fn source_ranges_firewall() {
    let spec = |ranges: &str| {
        svc_status(
            "web",
            &format!(
                "{{type: LoadBalancer, clusterIP: 10.79.0.1, loadBalancerSourceRanges: {ranges}, ports: [{{port: 80, protocol: TCP, nodePort: 30080}}]}}"
            ),
            "198.51.100.9",
        ) + &eps("web", "IPv4", &[("10.76.0.5", "node-1", READY)], 8080)
    };
    let n = chain_names("web");
    let r = render_yaml(&spec("[203.0.113.0/25, 198.51.100.0/24]"), &cfg());
    assert_eq!(
        rules(&r, &n.firewall),
        vec!["ip saddr != { 203.0.113.0/25 , 198.51.100.0/24 } drop"]
    );
    assert_eq!(
        elements(&r, FIREWALL_IPS),
        vec![format!("198.51.100.9 . tcp . 80 : goto {}", n.firewall)]
    );
    // A range holding the node lets the VIP itself through (node-local VIPs loop back).
    let r = render_yaml(&spec("[10.140.0.0/16]"), &cfg());
    assert_eq!(
        rules(&r, &n.firewall),
        vec!["ip saddr != { 10.140.0.0/16 , 198.51.100.9 } drop"]
    );
    // Ranges of the other family only: restricted, nothing allowed (svcnet fails closed).
    let r = render_yaml(&spec("[\"2001:db8::/64\"]"), &cfg());
    assert_eq!(rules(&r, &n.firewall), vec!["drop"]);
}

#[test]
fn masquerade_all_and_interface_detection() {
    let y = svc(
        "web",
        "{type: LoadBalancer, externalTrafficPolicy: Local, clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP, nodePort: 30080}]}",
    ) + &eps("web", "IPv4", &[("10.76.0.5", "node-1", READY)], 8080);
    let n = chain_names("web");
    let all = RenderConfig {
        masquerade_all: true,
        ..cfg()
    };
    let r = render_yaml(&y, &all);
    assert_eq!(
        rules(&r, &n.cluster)[0],
        "ip daddr 10.79.0.1 jump mark-for-masquerade"
    );
    let prefix = RenderConfig {
        detect_local: DetectLocal::InterfaceNamePrefix("veth".into()),
        ..cfg()
    };
    let r = render_yaml(&y, &prefix);
    assert_eq!(
        rules(&r, &n.cluster)[0],
        "ip daddr 10.79.0.1 iifname != veth* jump mark-for-masquerade"
    );
    assert_eq!(
        rules(&r, &n.external)[0],
        format!(
            "iifname veth* goto {} comment \"short-circuit pod traffic\"",
            n.cluster
        )
    );
    let none = RenderConfig {
        detect_local: DetectLocal::None,
        ..cfg()
    };
    let r = render_yaml(&y, &none);
    assert!(
        rules(&r, &n.cluster)[0].starts_with("numgen "),
        "no masquerade rule without a detector"
    );
    assert!(rules(&r, &n.external)[0].starts_with("fib saddr type local jump"));
}

#[test]
fn terminating_fallback_and_topology() {
    let y = svc(
        "web",
        "{clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP}]}",
    ) + &eps("web", "IPv4", &[("10.76.0.5", "node-1", TERMINATING)], 8080);
    let r = render_yaml(&y, &cfg());
    let n = chain_names("web");
    assert!(rules(&r, &n.cluster)[1].contains("__10.76.0.5/8080"));

    let mut node = node();
    node.labels
        .insert("topology.kubernetes.io/zone".into(), "a".into());
    let y = svc(
        "web",
        "{clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP}]}",
    ) + "---\nkind: EndpointSlice\nmetadata: {name: web-x, namespace: default, labels: {kubernetes.io/service-name: web}}\naddressType: IPv4\nports: [{port: 8080, protocol: TCP}]\nendpoints:\n- {addresses: [10.76.0.5], hints: {forZones: [{name: a}]}}\n- {addresses: [10.76.0.6], hints: {forZones: [{name: b}]}}\n";
    let objs = parse_objects(&y).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4);
    let r = render(&state, &node, &cfg());
    let pick = &rules(&r, &n.cluster)[1];
    assert!(
        pick.starts_with("numgen random mod 1 ") && pick.contains("10.76.0.5"),
        "{pick}"
    );
}

#[test]
fn quoting_is_safe_and_bounded() {
    assert_eq!(quote("ns/name:port"), "\"ns/name:port\"");
    assert_eq!(quote("a\"b\\c\nd"), "\"a_b_c_d\"");
    let long = "x".repeat(300);
    assert_eq!(quote(&long).len(), COMMENT_MAX + 2);
    let multibyte = "é".repeat(100);
    assert!(quote(&multibyte).len() <= COMMENT_MAX + 2);
}

#[test]
fn text_declares_before_use() {
    let y = svc(
        "web",
        "{clusterIP: 10.79.0.1, sessionAffinity: ClientIP, ports: [{port: 80, protocol: TCP}]}",
    ) + &eps("web", "IPv4", &[("10.76.0.5", "node-1", READY)], 8080);
    let text = render_yaml(&y, &cfg()).text();
    let lines: Vec<&str> = text.lines().collect();
    let first = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).expect(prefix);
    let last = |prefix: &str| lines.iter().rposition(|l| l.starts_with(prefix)).expect(prefix);
    assert!(last("add chain ") < first("add set "));
    assert!(last("add set ") < first("add map "));
    assert!(last("add map ") < first("add rule "));
    assert!(last("add rule ") < first("add element "));
    assert!(text.contains("timeout 10800s"));
}

/// Two ClusterIP services, `b` with the given endpoint list.
fn two_services(b_eps: &[(&str, &str, &str)]) -> Inputs {
    let yaml = [
        svc("a", "{clusterIP: 172.30.0.41, ports: [{port: 80}]}"),
        eps("a", "IPv4", &[("10.180.0.1", "node1", READY)], 80),
        svc("b", "{clusterIP: 172.30.0.42, ports: [{port: 80}]}"),
        eps("b", "IPv4", b_eps, 80),
    ]
    .concat();
    inputs_yaml(&yaml, &cfg())
}

fn applied(r: &Inputs) -> Applied {
    let mut a = Applied::default();
    a.commit(full(r.clone(), &Existing::default(), Start::Over));
    a
}

#[test]
fn a_partial_transaction_without_changes_is_empty() {
    let r = two_services(&[("10.180.0.2", "node1", READY)]);
    let tx = partial(&applied(&r), r.clone());
    assert_eq!(tx.text(), "");
    assert_eq!(tx.stats, Stats::default());
}

#[test]
fn a_partial_transaction_touches_only_the_changed_service() {
    let before = two_services(&[("10.180.0.2", "node1", READY)]);
    let after = two_services(&[("10.180.0.3", "node1", READY)]);
    let names = |r: &Inputs| -> Vec<String> { r.render().chains().iter().map(|c| c.name.clone()).collect() };
    let (was, is) = (names(&before), names(&after));
    let only = |a: &[String], b: &[String]| -> String {
        let v: Vec<&String> = a.iter().filter(|c| !b.contains(c)).collect();
        assert_eq!(v.len(), 1, "{v:?}");
        v[0].clone()
    };
    let (old_ep, new_ep) = (only(&was, &is), only(&is, &was));
    assert!(old_ep.starts_with("endpoint-") && new_ep.starts_with("endpoint-"));
    let tx = partial(&applied(&before), after);
    let b = chain_names("b");
    let text = tx.text();
    let lines: Vec<&str> = text.lines().collect();
    // New endpoint chain declared first, service chain rewritten, old endpoint chain emptied and removed.
    assert_eq!(lines[0], format!("add chain ip kube-proxy {new_ep}"));
    assert!(lines.contains(&format!("flush chain ip kube-proxy {}", b.cluster).as_str()));
    let flush_old = format!("flush chain ip kube-proxy {old_ep}");
    let delete_old = format!("delete chain ip kube-proxy {old_ep}");
    let pos = |l: &str| {
        lines
            .iter()
            .position(|x| *x == l)
            .unwrap_or_else(|| panic!("no {l:?} in\n{}", tx.text()))
    };
    assert!(pos(&flush_old) < pos(&delete_old));
    assert!(
        !tx.text().contains("/a/"),
        "service a is untouched:\n{}",
        tx.text()
    );
    assert!(
        !tx.text().contains("element"),
        "no element changes:\n{}",
        tx.text()
    );
}

#[test]
fn an_element_shared_by_two_ports_stays_until_its_last_port_goes() {
    let two_ports = [svc(
        "m",
        "{clusterIP: 172.30.0.50, ports: [{name: p, port: 80}, {name: q, port: 81}]}",
    )]
    .concat();
    let one_port = svc("m", "{clusterIP: 172.30.0.50, ports: [{name: p, port: 80}]}");
    let before = inputs_yaml(&two_ports, &cfg());
    let after = inputs_yaml(&one_port, &cfg());
    let tx = partial(&applied(&before), after.clone());
    assert!(
        !tx.text().contains("delete element ip kube-proxy cluster-ips"),
        "port p still needs the cluster IP:\n{}",
        tx.text()
    );
    let mut a = applied(&before);
    a.commit(tx);
    let gone = partial(&a, inputs_yaml("", &cfg()));
    assert!(
        gone.text()
            .contains("delete element ip kube-proxy cluster-ips { 172.30.0.50 }\n"),
        "{}",
        gone.text()
    );
}

#[test]
fn a_full_transaction_removes_stale_chains_and_sets_after_emptying_them() {
    let r = two_services(&[("10.180.0.2", "node1", READY)]);
    let existing = Existing {
        chains: [
            "services".to_string(),
            "service-OLD-default/gone/tcp/".to_string(),
        ]
        .into(),
        sets: ["affinity-OLD".to_string()].into(),
    };
    let tx = full(r, &existing, Start::Over);
    let text = tx.text();
    let lines: Vec<&str> = text.lines().collect();
    let pos = |l: &str| {
        lines
            .iter()
            .position(|x| *x == l)
            .unwrap_or_else(|| panic!("no {l:?} in\n{}", tx.text()))
    };
    assert!(
        pos("flush chain ip kube-proxy service-OLD-default/gone/tcp/")
            < pos("delete chain ip kube-proxy service-OLD-default/gone/tcp/")
    );
    assert!(
        pos("delete chain ip kube-proxy service-OLD-default/gone/tcp/")
            < pos("delete set ip kube-proxy affinity-OLD")
    );
    assert!(!tx.text().contains("delete chain ip kube-proxy services\n"));
    let recreated = full(two_services(&[]), &existing, Start::Recreated);
    assert!(recreated.text().contains("delete table ip kube-proxy\n"));
    assert!(
        !recreated.text().contains("flush "),
        "a new table has nothing to empty"
    );
}

/// A table another layout wrote (or after two failed full syncs) is cleared in the batch that
/// writes it again, but for the hooked chains the new one declares: their hooks stay registered.
#[test]
fn a_cleared_full_transaction_keeps_only_the_hooked_chains() {
    let existing = Existing {
        chains: [
            "nat-prerouting".to_string(),
            "filter-input".to_string(),
            "maps-only-hooked".to_string(),
            "service-OLD-default/gone/tcp/".to_string(),
        ]
        .into(),
        sets: ["service-ips".to_string(), "affinity-OLD".to_string()].into(),
    };
    let tx = full(two_services(&[]), &existing, Start::Cleared);
    let text = tx.text();
    let lines: Vec<&str> = text.lines().collect();
    let pos = |l: &str| {
        lines
            .iter()
            .position(|x| x.starts_with(l))
            .unwrap_or_else(|| panic!("no {l:?} in\n{text}"))
    };
    assert!(!text.contains("delete table"), "{text}");
    for c in &existing.chains {
        assert!(pos(&format!("flush chain ip kube-proxy {c}")) < pos("delete set ip kube-proxy service-ips"));
    }
    for c in ["maps-only-hooked", "service-OLD-default/gone/tcp/"] {
        assert!(
            pos("delete set ip kube-proxy affinity-OLD") < pos(&format!("delete chain ip kube-proxy {c}"))
        );
    }
    for c in ["nat-prerouting", "filter-input"] {
        assert!(
            !text.contains(&format!("delete chain ip kube-proxy {c}\n")),
            "{c} is hooked in the new table too: kept"
        );
    }
    // Everything is then declared as in a new table: the set the clearing deleted is added back
    // after it, and nothing kept is emptied twice.
    assert!(pos("delete set ip kube-proxy service-ips") < pos("add map ip kube-proxy service-ips "));
    assert_eq!(
        text.matches("flush chain ip kube-proxy nat-prerouting\n").count(),
        1,
        "{text}"
    );
    assert_eq!(tx.batches(40).len(), 1, "clearing and refilling is one batch");
}

/// A full sync over a table that has everything, cut into small batches: every chain's flush and
/// refill share a batch, endpoint chains are filled before the service chain that picks them, and
/// all elements go in one batch.
#[test]
fn a_full_transaction_splits_only_where_no_chain_is_left_empty() {
    let mut yaml = String::new();
    for i in 0..30 {
        yaml.push_str(&svc(
            &format!("s{i}"),
            &format!("{{clusterIP: 172.30.1.{i}, ports: [{{port: 80}}]}}"),
        ));
        yaml.push_str(&eps(
            &format!("s{i}"),
            "IPv4",
            &[("10.180.0.1", "node1", READY), ("10.180.0.2", "node2", READY)],
            80,
        ));
    }
    let inputs = inputs_yaml(&yaml, &cfg());
    let r = inputs.render();
    let existing = Existing {
        chains: r.chains().iter().map(|c| c.name.clone()).collect(),
        sets: r.sets().iter().map(|s| s.name.clone()).collect(),
    };
    let chains: Vec<String> = r.chains().iter().map(|c| c.name.clone()).collect();
    let tx = full(inputs, &existing, Start::Over);
    let batches = tx.batches(40);
    assert!(batches.len() > 5, "{} batches", batches.len());
    assert_eq!(batches.iter().map(|b| b.len()).sum::<usize>(), tx.ops.len());
    let batch_of = |pred: &dyn Fn(&Op) -> bool| -> Vec<usize> {
        batches
            .iter()
            .enumerate()
            .filter(|(_, b)| b.iter().any(pred))
            .map(|(i, _)| i)
            .collect()
    };
    for c in &chains {
        let flushed = batch_of(&|op| matches!(op, Op::FlushChain(n) if n == c));
        let filled = batch_of(&|op| matches!(op, Op::AddRule { chain, .. } if chain == c));
        assert_eq!(flushed.len(), 1, "{c}");
        assert!(
            filled.iter().all(|b| *b == flushed[0]),
            "{c}: {flushed:?} {filled:?}"
        );
    }
    let elements = batch_of(&|op| matches!(op, Op::AddElement(_) | Op::FlushSet { .. }));
    assert_eq!(elements.len(), 1, "{elements:?}");
    // Every service chain's numgen rule comes after its endpoint chains' rules.
    let pos = |pred: &dyn Fn(&Op) -> bool| tx.ops.iter().position(pred);
    for c in chains
        .iter()
        .filter(|c| c.starts_with("service-") && c.contains('/'))
    {
        let pick = pos(
            &|op| matches!(op, Op::AddRule { chain, rule } if chain == c && rule.text.starts_with("numgen")),
        );
        // Endpoint chains share the service chain's `ns/name/proto/port` part.
        let tail = c.splitn(3, '-').nth(2).unwrap_or_default();
        let ep = pos(
            &|op| matches!(op, Op::AddRule { chain, .. } if chain.starts_with("endpoint-") && chain.contains(tail)),
        );
        assert!(pick.is_some() && ep < pick, "{c}");
    }
    // Recreating the table is one batch.
    let recreated = full(two_services(&[]), &existing, Start::Recreated);
    assert_eq!(recreated.batches(40).len(), 1);
}

/// A first load (nothing to empty) may cut the elements anywhere: they come in small groups, so its
/// batches stay small however many services there are; over an existing table they stay one group.
#[test]
fn a_first_load_cuts_elements_into_small_groups() {
    let mut yaml = String::new();
    for i in 0..600 {
        yaml.push_str(&svc(
            &format!("s{i}"),
            &format!(
                "{{clusterIP: 172.30.{}.{}, ports: [{{port: 80}}]}}",
                i / 200,
                i % 200
            ),
        ));
    }
    let inputs = inputs_yaml(&yaml, &cfg());
    let is_element = |op: &Op| matches!(op, Op::AddElement(_));
    let first = full(inputs.clone(), &Existing::default(), Start::Over);
    let elements = first.ops.iter().filter(|op| is_element(op)).count();
    assert!(elements >= 1200, "{elements} elements");
    let batches = first.batches(1100);
    let with_elements = batches.iter().filter(|b| b.iter().any(is_element)).count();
    assert!(with_elements >= 2, "{with_elements} batches hold elements");
    assert!(batches.iter().all(|b| b.len() <= 1100), "a batch over the limit");
    let r = inputs.render();
    let existing = Existing {
        chains: r.chains().iter().map(|c| c.name.clone()).collect(),
        sets: r.sets().iter().map(|s| s.name.clone()).collect(),
    };
    let over = full(inputs, &existing, Start::Over);
    let with_elements = over
        .batches(1100)
        .iter()
        .filter(|b| b.iter().any(is_element))
        .count();
    assert_eq!(with_elements, 1, "emptied maps are refilled in the same batch");
}
