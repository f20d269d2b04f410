//! Unit tests of the maps layout: which elements each kind of service port becomes, that API changes
//! touch elements only (the skeleton stays the same), and that no API name reaches the text.

use super::*;
use crate::config::{Layout, NftLayout};
use crate::fixtures::node;
use crate::model::{Protocol, ProxyState, ServicePortName};
use crate::offline::input::parse_objects;

fn cfg() -> RenderConfig {
    RenderConfig {
        nft_layout: NftLayout::Maps,
        ..crate::fixtures::cfg(Layout::Flat)
    }
}

fn table(yaml: &str, cfg: &RenderConfig) -> MapsTable {
    let objs = parse_objects(yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    render(&state, &node(), cfg)
}

/// `key [: value]` of each element of `set`, as nft prints them.
fn elements(t: &MapsTable, set: &str) -> Vec<String> {
    t.elements_of(set).map(|e| e.text()).collect()
}

fn svc(name: &str, spec: &str) -> String {
    format!("---\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n")
}

/// A TCP port's endpoints: `(ip, node)`, all ready.
fn eps(svc: &str, list: &[(&str, &str)], port: u16) -> String {
    let mut s = format!(
        "---\nkind: EndpointSlice\nmetadata: {{name: {svc}-x, namespace: default, labels: {{kubernetes.io/service-name: {svc}}}}}\naddressType: IPv4\nports: [{{port: {port}, protocol: TCP}}]\nendpoints:\n"
    );
    for (ip, node) in list {
        s.push_str(&format!(
            "- {{addresses: [\"{ip}\"], conditions: {{ready: true}}, nodeName: {node}}}\n"
        ));
    }
    s
}

const CLUSTER_IP: &str = "{clusterIP: 172.30.0.41, ports: [{port: 80, targetPort: 8080, protocol: TCP}]}";

#[test]
fn cluster_ip_is_a_key_in_the_count_set_and_one_slot_per_endpoint() {
    let t = table(
        &(svc("a", CLUSTER_IP) + &eps("a", &[("10.76.1.5", "node-1"), ("10.76.2.5", "node-2")], 8080)),
        &cfg(),
    );
    assert_eq!(elements(&t, "svcs-2"), ["172.30.0.41 . tcp . 80"]);
    assert_eq!(
        elements(&t, "eps-2"),
        [
            "172.30.0.41 . tcp . 80 . 0 : 10.76.1.5 . 8080",
            "172.30.0.41 . tcp . 80 . 1 : 10.76.2.5 . 8080"
        ]
    );
    assert_eq!(elements(&t, MASQ_CLUSTER), ["172.30.0.41 . tcp . 80"]);
    assert_eq!(
        elements(&t, HAIRPIN),
        ["10.76.1.5 . 10.76.1.5", "10.76.2.5 . 10.76.2.5"]
    );
    let services: Vec<&str> = t
        .chain("services")
        .expect("services")
        .rules
        .iter()
        .map(|r| r.text.as_str())
        .collect();
    assert!(services.contains(&"ip saddr != 10.76.0.0/14 ip daddr . meta l4proto . th dport @masq-cluster meta mark set meta mark or 0x4000"), "{services:#?}");
    assert!(services.contains(&"meta l4proto tcp ip daddr . meta l4proto . th dport @svcs-2 dnat ip to ip daddr . meta l4proto . th dport . numgen random mod 2 map @eps-2"), "{services:#?}");
    assert!(
        !services.iter().any(|r| r.contains("@svcs-1")),
        "no rule for an unused count: {services:#?}"
    );
}

/// Counts past [`DIRECT_COUNTS`] are reached through two buckets: a jump from `services` on the
/// outer bucket's key set to its chain, a jump there on the inner bucket's to the chain holding the
/// count's dispatch rule, so a first packet walks the direct counts, the outer buckets in use and
/// one outer bucket's steps, not every count.
#[test]
fn a_count_past_the_direct_ones_is_dispatched_through_its_buckets() {
    let ips = |third: u8, n: u8| -> Vec<(String, &str)> {
        (1..=n)
            .map(|i| (format!("10.76.{third}.{i}"), "node-1"))
            .collect()
    };
    let (twenty, ninety) = (ips(1, 20), ips(3, 90));
    let port = |name: &str, ip: &str, list: &[(String, &str)]| {
        let list: Vec<(&str, &str)> = list.iter().map(|(ip, n)| (ip.as_str(), *n)).collect();
        svc(
            name,
            &format!("{{clusterIP: {ip}, ports: [{{port: 80, targetPort: 8080, protocol: TCP}}]}}"),
        ) + &eps(name, &list, 8080)
    };
    let yaml = svc("a", CLUSTER_IP)
        + &eps("a", &[("10.76.1.5", "node-1"), ("10.76.2.5", "node-2")], 8080)
        + &port("b", "172.30.0.42", &twenty)
        + &port("c", "172.30.0.43", &ninety);
    let t = table(&yaml, &cfg());
    let (b, c) = ("172.30.0.42 . tcp . 80", "172.30.0.43 . tcp . 80");
    for (set, key) in [
        ("svcs-20", b),
        ("svcs-17-80", b),
        ("svcs-17-24", b),
        ("svcs-90", c),
        ("svcs-81-144", c),
        ("svcs-89-96", c),
    ] {
        assert_eq!(elements(&t, set), [key], "{set}");
    }
    assert_eq!(t.elements_of("eps-20").count(), 20);
    assert_eq!(t.elements_of("eps-90").count(), 90);
    let rules = |chain: &str| -> Vec<String> {
        let c = t.chain(chain).unwrap_or_else(|| panic!("no chain {chain}"));
        c.rules.iter().map(|r| r.text.clone()).collect()
    };
    let key = "ip daddr . meta l4proto . th dport";
    let dispatch = |n: usize| {
        format!("meta l4proto tcp {key} @svcs-{n} dnat ip to {key} . numgen random mod {n} map @eps-{n}")
    };
    let jump = |b: &str| format!("{key} @svcs-{b} jump dispatch-{b}");
    let services = rules("services");
    let at = |r: &str| services.iter().position(|x| x == r);
    let (two, outer1, outer2) = (at(&dispatch(2)), at(&jump("17-80")), at(&jump("81-144")));
    assert!(
        two.is_some() && two < outer1 && outer1 < outer2,
        "direct counts, then the outer buckets in order: {services:#?}"
    );
    assert!(
        !services
            .iter()
            .any(|r| r.contains("@svcs-20") || r.contains("@svcs-17-24")),
        "{services:#?}"
    );
    assert_eq!(rules("dispatch-17-80"), [jump("17-24")]);
    assert_eq!(rules("dispatch-17-24"), [dispatch(20)]);
    assert_eq!(rules("dispatch-81-144"), [jump("89-96")]);
    assert_eq!(rules("dispatch-89-96"), [dispatch(90)]);
    let text = t.text();
    for set in ["svcs-17-80", "svcs-17-24", "svcs-20", "eps-20"] {
        assert!(
            text.contains(&format!("add set ip kube-proxy {set} "))
                || text.contains(&format!("add map ip kube-proxy {set} ")),
            "{set}: {text}"
        );
    }
}

#[test]
fn no_endpoints_reject_and_local_policy_misses_drop() {
    let spec = "{clusterIP: 172.30.0.42, type: NodePort, externalTrafficPolicy: Local, ports: [{port: 80, nodePort: 30080, protocol: TCP}]}";
    let none = table(&svc("b", spec), &cfg());
    assert_eq!(elements(&none, NO_ENDPOINT_REJECT), ["172.30.0.42 . tcp . 80"]);
    assert_eq!(elements(&none, NP_NO_ENDPOINT_REJECT), ["tcp . 30080"]);
    assert!(none.elements.iter().all(|e| !e.set.name().contains("eps-")));

    // Endpoints only on another node: cluster traffic goes there, external traffic is dropped,
    // except from pods and the node itself, which reach the cluster endpoints (masqueraded from the node).
    let remote = table(
        &(svc("b", spec) + &eps("b", &[("10.76.2.5", "node-2")], 80)),
        &cfg(),
    );
    assert_eq!(elements(&remote, "svcs-1"), ["172.30.0.42 . tcp . 80"]);
    assert_eq!(elements(&remote, NP_NO_ENDPOINT_DROP), ["tcp . 30080"]);
    assert_eq!(elements(&remote, "np-short-svcs-1"), ["tcp . 30080"]);
    assert_eq!(
        elements(&remote, "np-short-eps-1"),
        ["tcp . 30080 . 0 : 10.76.2.5 . 80"]
    );
    assert_eq!(elements(&remote, NP_LOCAL_ORIGIN), ["tcp . 30080"]);
    assert!(elements(&remote, "np-eps-1").is_empty());
    assert!(
        elements(&remote, NP_MASQ).is_empty(),
        "Local policy: no masquerade for outside traffic"
    );
}

#[test]
fn source_ranges_become_allowed_key_and_prefix_pairs() {
    let yaml = format!(
        "{}status: {{loadBalancer: {{ingress: [{{ip: 35.0.0.5}}]}}}}\n{}",
        svc(
            "c",
            "{clusterIP: 172.30.0.43, type: LoadBalancer, loadBalancerSourceRanges: [10.140.0.0/20, 192.168.0.1/16], ports: [{port: 443, nodePort: 30443, protocol: TCP}]}"
        ),
        eps("c", &[("10.76.1.7", "node-1")], 443)
    );
    let t = table(&yaml, &cfg());
    assert_eq!(elements(&t, FW_PROTECTED), ["35.0.0.5 . tcp . 443"]);
    // The node (10.140.0.2) is in a range, so the VIP may also be the source; prefixes are truncated.
    assert_eq!(
        elements(&t, FW_ALLOW),
        [
            "35.0.0.5 . tcp . 443 . 35.0.0.5",
            "35.0.0.5 . tcp . 443 . 10.140.0.0/20",
            "35.0.0.5 . tcp . 443 . 192.168.0.0/16"
        ]
    );
    assert_eq!(elements(&t, MASQ_EXTERNAL), ["35.0.0.5 . tcp . 443"]);
    assert_eq!(elements(&t, NP_MASQ), ["tcp . 30443"]);
}

/// An interval set refuses overlapping elements of one key, and with them the whole table: a range
/// inside another (or the LB IP inside `0.0.0.0/0`) adds nothing the wider one does not allow.
#[test]
fn covered_source_ranges_are_left_out() {
    let yaml = format!(
        "{}status: {{loadBalancer: {{ingress: [{{ip: 35.0.0.5}}]}}}}\n{}",
        svc(
            "c",
            "{clusterIP: 172.30.0.43, type: LoadBalancer, loadBalancerSourceRanges: [10.1.0.0/16, 12.0.0.1/32, 10.0.0.0/8, 12.0.0.2/31], ports: [{port: 443, nodePort: 30443, protocol: TCP}]}"
        ),
        eps("c", &[("10.76.1.7", "node-1")], 443)
    );
    let t = table(&yaml, &cfg());
    // The node (10.140.0.2) is in 10.0.0.0/8, so the VIP is a source too; 10.1.0.0/16 is covered.
    assert_eq!(
        elements(&t, FW_ALLOW),
        [
            "35.0.0.5 . tcp . 443 . 35.0.0.5",
            "35.0.0.5 . tcp . 443 . 10.0.0.0/8",
            "35.0.0.5 . tcp . 443 . 12.0.0.1/32",
            "35.0.0.5 . tcp . 443 . 12.0.0.2/31"
        ]
    );
    let all = table(
        &yaml.replace(
            "[10.1.0.0/16, 12.0.0.1/32, 10.0.0.0/8, 12.0.0.2/31]",
            "[0.0.0.0/0]",
        ),
        &cfg(),
    );
    assert_eq!(elements(&all, FW_ALLOW), ["35.0.0.5 . tcp . 443 . 0.0.0.0/0"]);
}

/// The point of the layout: an endpoint replaced, or a Service added with an endpoint count already
/// in use, changes elements only; the chains, rules and sets stay exactly as they were.
#[test]
fn api_changes_touch_elements_only() {
    let a = |ip: &str| svc("a", CLUSTER_IP) + &eps("a", &[(ip, "node-1"), ("10.76.2.5", "node-2")], 8080);
    let before = table(&a("10.76.1.5"), &cfg());
    let replaced = table(&a("10.76.1.9"), &cfg());
    let spec = "{clusterIP: 172.30.0.50, ports: [{port: 53, targetPort: 53, protocol: TCP}]}";
    let added = table(
        &(a("10.76.1.5") + &svc("d", spec) + &eps("d", &[("10.76.3.1", "n"), ("10.76.3.2", "n")], 53)),
        &cfg(),
    );
    for after in [&replaced, &added] {
        assert_eq!(before.chains, after.chains);
        assert_eq!(before.sets, after.sets);
        assert_ne!(before.elements, after.elements);
    }
    assert!(
        elements(&replaced, "eps-2").contains(&"172.30.0.41 . tcp . 80 . 0 : 10.76.1.9 . 8080".to_string())
    );
    assert_eq!(elements(&added, "svcs-2").len(), 2);
}

#[test]
fn no_api_name_reaches_the_text() {
    let yaml = svc(
        "evil-name",
        "{clusterIP: 172.30.0.44, ports: [{name: portname-x, port: 80, protocol: TCP}]}",
    ) + &eps("evil-name", &[("10.76.1.8", "node-1")], 80)
        .replace("protocol: TCP}]", "protocol: TCP, name: portname-x}]");
    let text = table(&yaml, &cfg()).text();
    assert!(
        text.contains("172.30.0.44 . tcp . 80 . 0 : 10.76.1.8 . 80"),
        "{text}"
    );
    for name in ["evil-name", "portname-x", "default/"] {
        assert!(!text.contains(name), "{name} in\n{text}");
    }
}

#[test]
fn ipv6_uses_ip6_words_and_types() {
    let cfg = RenderConfig {
        family: crate::model::Family::V6,
        detect_local: crate::config::DetectLocal::None,
        ..cfg()
    };
    let yaml = svc(
        "e",
        "{clusterIP: fd00::1, ipFamilies: [IPv6], ports: [{port: 80, protocol: TCP}]}",
    ) + &eps("e", &[("fd00:10::5", "node-1")], 80)
        .replace("addressType: IPv4", "addressType: IPv6");
    let t = table(&yaml, &cfg);
    assert_eq!(
        elements(&t, "eps-1"),
        ["fd00::1 . tcp . 80 . 0 : fd00:10::5 . 80"]
    );
    let text = t.text();
    assert!(text.contains("add map ip6 kube-proxy eps-1 { typeof ip6 daddr . meta l4proto . th dport . numgen random mod 2 : ip6 daddr . th dport ; }"), "{text}");
    assert!(text.contains("dnat ip6 to ip6 daddr"), "{text}");
    assert!(
        !text.contains("@masq-cluster"),
        "no detector, no masqueradeAll: no cluster mark rule\n{text}"
    );
}

#[test]
fn an_endpoint_replaced_is_four_element_steps() {
    let a = |ip: &str| svc("a", CLUSTER_IP) + &eps("a", &[(ip, "node-1"), ("10.76.2.5", "node-2")], 8080);
    let (before, after) = (table(&a("10.76.1.5"), &cfg()), table(&a("10.76.1.9"), &cfg()));
    let c = change(&before, &after);
    let MapsChange::Elements { delete, add } = &c else {
        panic!("{c:?}")
    };
    assert_eq!((delete.len(), add.len()), (2, 2), "{c:?}");
    assert_eq!(
        c.text(&after),
        "delete element ip kube-proxy hairpin { 10.76.1.5 . 10.76.1.5 }\n\
         delete element ip kube-proxy eps-2 { 172.30.0.41 . tcp . 80 . 0 }\n\
         add element ip kube-proxy hairpin { 10.76.1.9 . 10.76.1.9 }\n\
         add element ip kube-proxy eps-2 { 172.30.0.41 . tcp . 80 . 0 : 10.76.1.9 . 8080 }\n"
    );
    assert!(change(&after, &after).is_empty());
}

#[test]
fn a_new_endpoint_count_replaces_the_table() {
    let two = svc("a", CLUSTER_IP) + &eps("a", &[("10.76.1.5", "node-1"), ("10.76.2.5", "node-2")], 8080);
    let three = svc("a", CLUSTER_IP)
        + &eps(
            "a",
            &[
                ("10.76.1.5", "node-1"),
                ("10.76.2.5", "node-2"),
                ("10.76.3.5", "n"),
            ],
            8080,
        );
    let (before, after) = (table(&two, &cfg()), table(&three, &cfg()));
    assert_eq!(change(&before, &after), MapsChange::Replace);
    let text = MapsChange::Replace.text(&after);
    assert!(
        text.starts_with("add table ip kube-proxy\ndelete table ip kube-proxy\nadd table ip kube-proxy {"),
        "{text}"
    );
    assert!(text.contains("add set ip kube-proxy svcs-3 "), "{text}");
}

/// The cache's transactions, applied one after the other, hold the elements a fresh render of each
/// state holds; a new endpoint count replaces the table, keeping the rules it had (so going back to
/// the old count is element steps again).
#[test]
fn cache_transactions_track_fresh_renders() {
    let two = svc("a", CLUSTER_IP) + &eps("a", &[("10.76.1.5", "node-1"), ("10.76.2.5", "node-2")], 8080);
    let replaced = two.replace("10.76.1.5", "10.76.1.9");
    let d = svc(
        "d",
        "{clusterIP: 172.30.0.50, ports: [{port: 53, protocol: TCP}]}",
    ) + &eps("d", &[("10.76.2.5", "n"), ("10.76.3.2", "n")], 53);
    let three = svc("a", CLUSTER_IP)
        + &eps(
            "a",
            &[
                ("10.76.1.5", "node-1"),
                ("10.76.2.5", "node-2"),
                ("10.76.3.5", "n"),
            ],
            8080,
        );
    let steps = [
        two.clone(),
        replaced.clone(),
        replaced.clone() + &d,
        replaced,
        three,
        two,
    ];
    let replaces = [true, false, false, false, true, false];
    let mut cache = MapsCache::new(node(), cfg());
    let mut held: std::collections::BTreeMap<(SetName, Key), Option<(std::net::IpAddr, u16)>> =
        Default::default();
    let mut names = std::collections::BTreeSet::new();
    let mut prev = std::collections::BTreeMap::new();
    for (i, (yaml, replace)) in steps.iter().zip(replaces).enumerate() {
        let objs = parse_objects(yaml).expect("yaml");
        let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg().family);
        // Only the ports that changed, as a sync does.
        let all: std::collections::BTreeSet<_> = names
            .union(&state.services.keys().cloned().collect())
            .cloned()
            .collect();
        for name in all {
            let now = state
                .services
                .get(&name)
                .map(|p| (p.clone(), state.endpoints.get(&name).cloned()));
            if prev.get(&name) != now.as_ref() {
                cache.set_port(&name, now.clone());
            }
        }
        names = state.services.keys().cloned().collect();
        prev = names
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    (state.services[n].clone(), state.endpoints.get(n).cloned()),
                )
            })
            .collect();
        let fresh = render(&state, &node(), &cfg());
        match cache.take_change(i == 0) {
            MapsChange::Replace => {
                assert!(replace, "step {i} replaced the table");
                let table = cache.table();
                assert_eq!(table.elements, fresh.elements, "step {i}");
                if i == 0 {
                    assert_eq!(table, fresh);
                }
                held = table
                    .elements
                    .into_iter()
                    .map(|e| ((e.set, e.key), e.value))
                    .collect();
            }
            MapsChange::Elements { delete, add } => {
                assert!(!replace, "step {i} should replace the table");
                for e in delete {
                    assert_eq!(held.remove(&(e.set, e.key)), Some(e.value), "step {i}");
                }
                for e in add {
                    assert_eq!(held.insert((e.set, e.key), e.value), None, "step {i}");
                }
                let want: std::collections::BTreeMap<_, _> = fresh
                    .elements
                    .into_iter()
                    .map(|e| ((e.set, e.key), e.value))
                    .collect();
                assert_eq!(held, want, "step {i}");
            }
        }
    }
    let services = cache.table().chain("services").expect("services").rules.clone();
    for n in ["@svcs-2 ", "@svcs-3 "] {
        assert!(services.iter().any(|r| r.text.contains(n)), "{n}: {services:?}");
    }
}

/// The affinity port of Service `name`'s port 80/TCP (default timeout).
fn sticky(name: &str) -> Sticky {
    let port = ServicePortName {
        namespace: "default".into(),
        name: name.into(),
        port: String::new(),
        protocol: Protocol::Tcp,
    };
    Sticky::new(&port, 10800)
}

#[test]
fn an_affinity_ports_keys_all_reach_its_one_map_before_the_draw_and_record_after() {
    let spec = "{type: NodePort, clusterIP: 172.30.0.45, externalIPs: [192.0.2.7], sessionAffinity: ClientIP, ports: [{port: 80, nodePort: 30080, protocol: TCP}]}";
    let t = table(
        &(svc("f", spec) + &eps("f", &[("10.76.1.5", "node-1")], 80)),
        &cfg(),
    );
    let s = sticky("f");
    let (jump, goto) = (
        format!("jump {}", s.lookup_chain()),
        format!("goto {}", s.record_chain()),
    );
    assert_eq!(
        elements(&t, STICKY_KEYS),
        [
            format!("172.30.0.45 . tcp . 80 : {jump}"),
            format!("192.0.2.7 . tcp . 80 : {jump}")
        ]
    );
    assert_eq!(elements(&t, NP_STICKY_KEYS), [format!("tcp . 30080 : {jump}")]);
    assert_eq!(
        elements(&t, STICKY_RECORDS),
        [
            format!("172.30.0.45 . tcp . 80 : {goto}"),
            format!("192.0.2.7 . tcp . 80 : {goto}")
        ]
    );
    assert_eq!(elements(&t, NP_STICKY_RECORDS), [format!("tcp . 30080 : {goto}")]);
    let rules = |c: &str| -> Vec<String> {
        t.chain(c)
            .expect(c)
            .rules
            .iter()
            .map(|r| r.text.clone())
            .collect()
    };
    for (chain, map, draw) in [
        ("services", STICKY_KEYS, "@svcs-1"),
        (NODEPORTS, NP_STICKY_KEYS, "@np-svcs-1"),
    ] {
        let got = rules(chain);
        let read = got.iter().position(|r| r.ends_with(&format!("vmap @{map}")));
        let drawn = got.iter().position(|r| r.contains(draw)).expect("draw rule");
        assert!(read.is_some_and(|r| r < drawn), "{chain}: {got:#?}");
    }
    assert_eq!(
        rules(&s.lookup_chain()),
        [format!("meta l4proto tcp dnat ip to ip saddr map @{}", s.map())]
    );
    assert_eq!(
        rules(&s.record_chain()),
        [format!(
            "meta l4proto tcp update @{} {{ ip saddr timeout 10800s : ip daddr . tcp dport }}",
            s.map()
        )]
    );
    let record = rules(AFFINITY_RECORD);
    assert_eq!(record.len(), 2, "{record:#?}");
    assert!(record[0].ends_with(&format!(
        "ct original ip daddr . ct original protocol . ct original proto-dst vmap @{STICKY_RECORDS}"
    )));
    assert!(record[1].ends_with(&format!(
        "ct original protocol . ct original proto-dst vmap @{NP_STICKY_RECORDS}"
    )));
    let map = t.sets.iter().find(|m| m.name == s.map()).expect("the port's map");
    assert_eq!(map.flags, ["dynamic", "timeout"]);
}

#[test]
fn two_affinity_services_claiming_one_external_ip_leave_it_to_one() {
    let spec = |ip: &str| {
        format!(
            "{{clusterIP: {ip}, externalIPs: [192.0.2.7], sessionAffinity: ClientIP, ports: [{{port: 80, protocol: TCP}}]}}"
        )
    };
    let yaml = svc("f", &spec("172.30.0.45"))
        + &eps("f", &[("10.76.1.5", "node-1")], 80)
        + &svc("g", &spec("172.30.0.46"))
        + &eps("g", &[("10.76.1.6", "node-1")], 80);
    let t = table(&yaml, &cfg());
    let keys = elements(&t, STICKY_KEYS);
    let external: Vec<&String> = keys.iter().filter(|k| k.starts_with("192.0.2.7 ")).collect();
    assert_eq!(external.len(), 1, "one element per key: {keys:#?}");
    assert_eq!(keys.len(), 3, "both cluster IPs keep theirs: {keys:#?}");
    assert_eq!(elements(&t, STICKY_RECORDS).len(), 3);
    // The cache keeps the key for one port as well, and gives it to nobody twice.
    let objs = parse_objects(&yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg().family);
    let mut cache = MapsCache::new(node(), cfg());
    for (name, svc) in &state.services {
        cache.set_port(name, Some((svc.clone(), state.endpoints.get(name).cloned())));
    }
    assert_eq!(cache.table().elements_of(STICKY_KEYS).count(), 3);
}

/// The daemon's replacement text, written straight from the cache, is the text of the cache's table.
#[test]
fn replace_text_from_the_cache_is_the_tables_text() {
    let yaml = svc("a", CLUSTER_IP)
        + &eps("a", &[("10.76.1.5", "node-1"), ("10.76.2.5", "node-2")], 8080)
        + &svc(
            "b",
            "{type: NodePort, clusterIP: 172.30.0.42, ports: [{port: 81, targetPort: 8080, nodePort: 30081, protocol: TCP}]}",
        )
        + &eps("b", &[("10.76.1.6", "node-1")], 8080);
    let objs = parse_objects(&yaml).expect("yaml");
    let cfg = RenderConfig {
        service_cidrs: vec!["172.30.0.0/16".parse().expect("CIDR")],
        ..cfg()
    };
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    let mut cache = MapsCache::new(node(), cfg.clone());
    for (name, svc) in &state.services {
        cache.set_port(name, Some((svc.clone(), state.endpoints.get(name).cloned())));
    }
    let table = cache.table();
    assert_eq!(table, render(&state, &node(), &cfg));
    assert!(table.elements_of("service-cidrs").count() == 1, "{table:?}");
    assert_eq!(cache.replace_text(), MapsChange::Replace.text(&table));
}
