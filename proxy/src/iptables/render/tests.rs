//! Rule-family tests: each builds a small cluster from YAML and checks the exact rule text upstream
//! kube-proxy would write.

use super::*;
use crate::config::{DetectLocal, Layout, NodePortAddresses, RenderConfig};
use crate::model::{Family, ProxyState};
use crate::offline::input::parse_objects;

use crate::fixtures::node;

fn cfg() -> RenderConfig {
    crate::fixtures::cfg(Layout::Flat)
}

fn render_yaml(yaml: &str, cfg: &RenderConfig) -> Rendered {
    let objs = parse_objects(yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    render(&state, &node(), cfg)
}

fn rules(r: &Rendered, table: Table, chain: &str) -> Vec<String> {
    r.chain(table, chain).map(|c| c.rules.clone()).unwrap_or_default()
}

fn svc(name: &str, spec: &str) -> String {
    format!("---\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n")
}

fn eps(svc: &str, ips: &[(&str, &str)], port: u16) -> String {
    let mut s = format!(
        "---\nkind: EndpointSlice\nmetadata: {{name: {svc}-x, namespace: default, labels: {{kubernetes.io/service-name: {svc}}}}}\naddressType: IPv4\nports: [{{port: {port}, protocol: TCP}}]\nendpoints:\n"
    );
    for (ip, node) in ips {
        s.push_str(&format!(
            "- {{addresses: [{ip}], conditions: {{ready: true}}, nodeName: {node}}}\n"
        ));
    }
    s
}

const HOSTNAMES_SPEC: &str = "{clusterIP: 10.79.255.4, ports: [{port: 80, targetPort: 9376, protocol: TCP}]}";

#[test]
fn cluster_ip_seed() {
    let y = svc("hostnames", HOSTNAMES_SPEC) + &eps("hostnames", &[("10.76.0.9", "node-1")], 9376);
    let r = render_yaml(&y, &cfg());
    assert_eq!(
        rules(&r, Table::Nat, "KUBE-SERVICES")[0],
        "-m comment --comment \"default/hostnames cluster IP\" -m tcp -p tcp -d 10.79.255.4 --dport 80 -j KUBE-SVC-YN5D6RYVEVZOH44Q"
    );
    assert_eq!(
        rules(&r, Table::Nat, "KUBE-SVC-YN5D6RYVEVZOH44Q"),
        vec![
            "-m comment --comment \"default/hostnames cluster IP\" -m tcp -p tcp -d 10.79.255.4 --dport 80 ! -s 10.76.0.0/14 -j KUBE-MARK-MASQ",
            "-m comment --comment \"default/hostnames -> 10.76.0.9:9376\" -j KUBE-SEP-Z2UFIHORS27IVXDM",
        ]
    );
    assert_eq!(
        rules(&r, Table::Nat, "KUBE-SEP-Z2UFIHORS27IVXDM"),
        vec![
            "-m comment --comment default/hostnames -s 10.76.0.9 -j KUBE-MARK-MASQ",
            "-m comment --comment default/hostnames -m tcp -p tcp -j DNAT --to-destination 10.76.0.9:9376",
        ]
    );
    assert_eq!(
        rules(&r, Table::Nat, "KUBE-MARK-MASQ"),
        vec!["-j MARK --or-mark 0x4000"]
    );
    let last = rules(&r, Table::Nat, "KUBE-SERVICES").pop().unwrap();
    assert!(
        last.ends_with("-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS"),
        "{last}"
    );
}

#[test]
fn two_endpoints_split_half() {
    let y = svc("hostnames", HOSTNAMES_SPEC)
        + &eps(
            "hostnames",
            &[("10.76.0.9", "node-1"), ("10.76.0.10", "node-2")],
            9376,
        );
    let r = render_yaml(&y, &cfg());
    let svc = rules(&r, Table::Nat, "KUBE-SVC-YN5D6RYVEVZOH44Q");
    assert_eq!(
        svc[1],
        "-m comment --comment \"default/hostnames -> 10.76.0.10:9376\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-7WM3BZEYIZ2PF6R4"
    );
    assert_eq!(
        svc[2],
        "-m comment --comment \"default/hostnames -> 10.76.0.9:9376\" -j KUBE-SEP-Z2UFIHORS27IVXDM"
    );
}

#[test]
fn probabilities_for_three() {
    let y = svc("s", HOSTNAMES_SPEC)
        + &eps(
            "s",
            &[("10.0.0.1", "a"), ("10.0.0.2", "b"), ("10.0.0.3", "c")],
            80,
        );
    let c = RenderConfig {
        detect_local: DetectLocal::None,
        ..cfg()
    };
    let r = render_yaml(&y, &c);
    let svc = &r
        .nat
        .iter()
        .find(|c| c.name.starts_with("KUBE-SVC-"))
        .unwrap()
        .rules;
    assert_eq!(svc.len(), 3, "no masquerade rule without a local detector");
    assert!(svc[0].contains("--probability 0.3333333333 "));
    assert!(svc[1].contains("--probability 0.5000000000 "));
    assert!(!svc[2].contains("statistic"));
}

#[test]
fn no_endpoints_reject_in_filter() {
    let r = render_yaml(
        &svc(
            "empty",
            "{clusterIP: 10.0.0.5, type: NodePort, ports: [{port: 80, nodePort: 30080}]}",
        ),
        &cfg(),
    );
    assert_eq!(
        rules(&r, Table::Filter, "KUBE-SERVICES"),
        vec![
            "-m comment --comment \"default/empty has no endpoints\" -m tcp -p tcp -d 10.0.0.5 --dport 80 -j REJECT"
        ]
    );
    assert_eq!(
        rules(&r, Table::Filter, "KUBE-EXTERNAL-SERVICES"),
        vec![
            "-m comment --comment \"default/empty has no endpoints\" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j REJECT"
        ]
    );
    assert_eq!(
        rules(&r, Table::Nat, "KUBE-SERVICES").len(),
        1,
        "only the nodeports jump"
    );
    assert!(r.nat.iter().all(|c| !c.name.starts_with("KUBE-SVC-")));
}

#[test]
fn nodeport_cluster_policy() {
    let y = svc(
        "np",
        "{clusterIP: 10.0.0.6, type: NodePort, ports: [{port: 80, nodePort: 30081}]}",
    ) + &eps("np", &[("10.76.1.5", "node-2")], 8080);
    let acct = RenderConfig {
        nfacct: true,
        ..cfg()
    };
    let r = render_yaml(&y, &acct);
    let ext = crate::iptables::render::naming::ext_chain("default/np", "tcp");
    let svcc = crate::iptables::render::naming::svc_chain("default/np", "tcp");
    // The first rule only counts localhost NodePort connections (nfacct), as upstream's.
    assert_eq!(
        rules(&r, Table::Nat, "KUBE-NODEPORTS"),
        vec![
            format!(
                "-m comment --comment default/np -m tcp -p tcp -d 127.0.0.0/8 --dport 30081 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j {ext}"
            ),
            format!("-m comment --comment default/np -m tcp -p tcp --dport 30081 -j {ext}"),
        ]
    );
    let no_acct = RenderConfig {
        nfacct: false,
        ..cfg()
    };
    assert_eq!(
        rules(&render_yaml(&y, &no_acct), Table::Nat, "KUBE-NODEPORTS"),
        vec![format!(
            "-m comment --comment default/np -m tcp -p tcp --dport 30081 -j {ext}"
        )]
    );
    let forward = rules(&r, Table::Filter, "KUBE-FORWARD");
    assert_eq!(
        forward[0],
        "-m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP"
    );
    assert_eq!(
        rules(&r, Table::Nat, &ext),
        vec![
            "-m comment --comment \"masquerade traffic for default/np external destinations\" -j KUBE-MARK-MASQ".to_string(),
            format!("-j {svcc}"),
        ]
    );
}

const LB_LOCAL: &str = "{clusterIP: 10.0.0.7, type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32100, ports: [{port: 80, nodePort: 30082}]}";

fn lb(spec: &str, ingress: &str) -> String {
    format!(
        "---\nkind: Service\nmetadata: {{name: lb, namespace: default}}\nspec: {spec}\nstatus: {{loadBalancer: {{ingress: [{{ip: {ingress}}}]}}}}\n"
    )
}

#[test]
fn external_policy_local_with_local_endpoint() {
    let y = lb(LB_LOCAL, "35.1.1.1") + &eps("lb", &[("10.76.0.20", "node-1"), ("10.76.1.20", "node-2")], 80);
    let r = render_yaml(&y, &cfg());
    let n = "default/lb";
    let (ext, svcc, svl) = (
        naming::ext_chain(n, "tcp"),
        naming::svc_chain(n, "tcp"),
        naming::svl_chain(n, "tcp"),
    );
    assert_eq!(
        rules(&r, Table::Nat, &ext),
        vec![
            format!(
                "-m comment --comment \"pod traffic for {n} external destinations\" -s 10.76.0.0/14 -j {svcc}"
            ),
            format!(
                "-m comment --comment \"masquerade LOCAL traffic for {n} external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ"
            ),
            format!(
                "-m comment --comment \"route LOCAL traffic for {n} external destinations\" -m addrtype --src-type LOCAL -j {svcc}"
            ),
            format!("-j {svl}"),
        ]
    );
    assert_eq!(rules(&r, Table::Nat, &svl).len(), 1, "only the local endpoint");
    assert_eq!(
        rules(&r, Table::Nat, &svcc).len(),
        1 + 2,
        "masquerade + two endpoints"
    );
    assert!(
        rules(&r, Table::Nat, "KUBE-SERVICES")
            .iter()
            .any(|r| r.contains("-d 35.1.1.1 --dport 80 -j KUBE-EXT-"))
    );
    assert_eq!(
        rules(&r, Table::Filter, "KUBE-NODEPORTS"),
        vec![format!(
            "-m comment --comment \"{n} health check node port\" -m tcp -p tcp --dport 32100 -j ACCEPT"
        )]
    );
}

#[test]
fn external_policy_local_without_local_endpoint_drops() {
    let y = lb(LB_LOCAL, "35.1.1.1") + &eps("lb", &[("10.76.1.20", "node-2")], 80);
    let r = render_yaml(&y, &cfg());
    let f = rules(&r, Table::Filter, "KUBE-EXTERNAL-SERVICES");
    assert_eq!(f.len(), 2);
    assert!(
        f[0].contains("has no local endpoints\" -m tcp -p tcp -d 35.1.1.1 --dport 80 -j DROP"),
        "{}",
        f[0]
    );
    assert!(
        f[1].contains("-m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30082 -j DROP"),
        "{}",
        f[1]
    );
    let ext = rules(&r, Table::Nat, &naming::ext_chain("default/lb", "tcp"));
    assert_eq!(ext.len(), 3, "short-circuit rules stay, no jump to KUBE-SVL");
    assert!(
        r.chain(Table::Nat, &naming::svl_chain("default/lb", "tcp"))
            .is_none()
    );
}

#[test]
fn internal_policy_local_without_local_endpoint_drops() {
    let y = svc(
        "itp",
        "{clusterIP: 10.0.0.8, internalTrafficPolicy: Local, ports: [{port: 53, protocol: UDP}]}",
    ) + &eps("itp", &[], 53).replace("protocol: TCP", "protocol: UDP")
        + "- {addresses: [10.76.1.9], conditions: {ready: true}, nodeName: node-2}\n";
    let r = render_yaml(&y, &cfg());
    assert_eq!(
        rules(&r, Table::Filter, "KUBE-SERVICES"),
        vec![
            "-m comment --comment \"default/itp has no local endpoints\" -m udp -p udp -d 10.0.0.8 --dport 53 -j DROP"
        ]
    );
    assert_eq!(r.stats.no_local_internal, 1);
}

#[test]
fn source_ranges_firewall() {
    let spec = "{clusterIP: 10.0.0.9, type: LoadBalancer, loadBalancerSourceRanges: [192.168.0.0/16, 10.140.0.0/20], ports: [{port: 443, nodePort: 30443}]}";
    let y = lb(spec, "35.2.2.2") + &eps("lb", &[("10.76.0.30", "node-1")], 8443);
    let r = render_yaml(&y, &cfg());
    let n = "default/lb";
    let (fw, ext) = (naming::fw_chain(n, "tcp"), naming::ext_chain(n, "tcp"));
    assert!(rules(&r, Table::Nat, "KUBE-SERVICES").contains(&format!(
        "-m comment --comment \"{n} loadbalancer IP\" -m tcp -p tcp -d 35.2.2.2 --dport 443 -j {fw}"
    )));
    assert_eq!(
        rules(&r, Table::Nat, &fw),
        vec![
            format!("-m comment --comment \"{n} loadbalancer IP\" -s 192.168.0.0/16 -j {ext}"),
            format!("-m comment --comment \"{n} loadbalancer IP\" -s 10.140.0.0/20 -j {ext}"),
            // node IP 10.140.0.2 is inside an allowed range: allow the VIP as source too
            format!("-m comment --comment \"{n} loadbalancer IP\" -s 35.2.2.2 -j {ext}"),
            format!("-m comment --comment \"other traffic to {n} will be dropped by KUBE-PROXY-FIREWALL\""),
        ]
    );
    assert_eq!(
        rules(&r, Table::Filter, "KUBE-PROXY-FIREWALL"),
        vec![format!(
            "-m comment --comment \"{n} traffic not accepted by {fw}\" -m tcp -p tcp -d 35.2.2.2 --dport 443 -j DROP"
        )]
    );
}

#[test]
fn lb_ip_mode_proxy_has_no_vip_rules() {
    let y = "---\nkind: Service\nmetadata: {name: lb, namespace: default}\nspec: {clusterIP: 10.0.0.10, type: LoadBalancer, ports: [{port: 80, nodePort: 30090}]}\nstatus: {loadBalancer: {ingress: [{ip: 35.3.3.3, ipMode: Proxy}]}}\n".to_string()
        + &eps("lb", &[("10.76.0.31", "node-1")], 80);
    let r = render_yaml(&y, &cfg());
    assert!(
        !r.nat
            .iter()
            .flat_map(|c| c.rules.iter())
            .any(|r| r.contains("35.3.3.3"))
    );
}

#[test]
fn session_affinity_recent() {
    let y = svc(
        "sa",
        "{clusterIP: 10.0.0.11, sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}, ports: [{port: 80}]}",
    ) + &eps("sa", &[("10.76.0.40", "node-1")], 80);
    let r = render_yaml(&y, &cfg());
    let sep = naming::sep_chain("default/sa", "tcp", "10.76.0.40:80");
    let svc = rules(&r, Table::Nat, &naming::svc_chain("default/sa", "tcp"));
    assert_eq!(
        svc[1],
        format!(
            "-m comment --comment \"default/sa -> 10.76.0.40:80\" -m recent --name {sep} --rcheck --seconds 600 --reap -j {sep}"
        )
    );
    assert_eq!(
        rules(&r, Table::Nat, &sep)[1],
        format!(
            "-m comment --comment default/sa -m recent --name {sep} --set -m tcp -p tcp -j DNAT --to-destination 10.76.0.40:80"
        )
    );
}

#[test]
fn external_ips_and_masquerade_all() {
    let y = svc(
        "x",
        "{clusterIP: 10.0.0.12, externalIPs: [203.0.113.5], ports: [{port: 80}]}",
    ) + &eps("x", &[("10.76.0.41", "node-1")], 80);
    let c = RenderConfig {
        masquerade_all: true,
        ..cfg()
    };
    let r = render_yaml(&y, &c);
    let svcc = naming::svc_chain("default/x", "tcp");
    assert!(rules(&r, Table::Nat, &svcc)[0].ends_with("--dport 80 -j KUBE-MARK-MASQ"));
    assert!(!rules(&r, Table::Nat, &svcc)[0].contains("! -s"));
    assert!(
        rules(&r, Table::Nat, "KUBE-SERVICES")
            .iter()
            .any(|r| r.contains("external IP\" -m tcp -p tcp -d 203.0.113.5 --dport 80 -j KUBE-EXT-"))
    );
}

#[test]
fn detect_local_modes() {
    let y =
        svc("d", "{clusterIP: 10.0.0.13, ports: [{port: 80}]}") + &eps("d", &[("10.76.0.42", "node-1")], 80);
    for (mode, want) in [
        (
            DetectLocal::BridgeInterface("cbr0".into()),
            "! -i cbr0 -j KUBE-MARK-MASQ",
        ),
        (
            DetectLocal::InterfaceNamePrefix("veth".into()),
            "! -i veth+ -j KUBE-MARK-MASQ",
        ),
        (
            DetectLocal::NodeCidr(vec!["10.76.0.0/24".parse().unwrap()]),
            "! -s 10.76.0.0/24 -j KUBE-MARK-MASQ",
        ),
    ] {
        let r = render_yaml(
            &y,
            &RenderConfig {
                detect_local: mode,
                ..cfg()
            },
        );
        let first = &rules(&r, Table::Nat, &naming::svc_chain("default/d", "tcp"))[0];
        assert!(first.ends_with(want), "{first}");
    }
}

#[test]
fn nodeport_addresses_and_localhost() {
    let y = svc("d", "{clusterIP: 10.0.0.14, ports: [{port: 80}]}");
    let c = RenderConfig {
        nodeport_addresses: NodePortAddresses::parse(&["primary".into()]).unwrap(),
        ..cfg()
    };
    let r = render_yaml(&y, &c);
    assert!(
        rules(&r, Table::Nat, "KUBE-SERVICES")
            .last()
            .unwrap()
            .ends_with("-d 10.140.0.2 -j KUBE-NODEPORTS")
    );
    assert!(
        r.chain(Table::Filter, "KUBE-FIREWALL").is_none(),
        "loopback not in nodeport addresses"
    );

    let c = RenderConfig {
        localhost_nodeports: false,
        ..cfg()
    };
    let r = render_yaml(&y, &c);
    assert!(
        rules(&r, Table::Nat, "KUBE-SERVICES")
            .last()
            .unwrap()
            .contains("--dst-type LOCAL ! -d 127.0.0.0/8 -j")
    );
    let r = render_yaml(&y, &cfg());
    assert!(r.chain(Table::Filter, "KUBE-FIREWALL").is_some());
}

#[test]
fn ipv6_family() {
    let y = "---\nkind: Service\nmetadata: {name: v6, namespace: default}\nspec: {clusterIP: 'fd00:10::5', clusterIPs: ['fd00:10::5'], type: NodePort, ports: [{port: 80, nodePort: 30100}]}\n---\nkind: EndpointSlice\nmetadata: {name: v6-a, namespace: default, labels: {kubernetes.io/service-name: v6}}\naddressType: IPv6\nports: [{port: 8080}]\nendpoints: [{addresses: ['fd00:76::9']}]\n";
    let c = RenderConfig {
        family: Family::V6,
        detect_local: DetectLocal::ClusterCidr(vec!["fd00:76::/48".parse().unwrap()]),
        ..cfg()
    };
    let r = render_yaml(y, &c);
    let sep = naming::sep_chain("default/v6", "tcp", "[fd00:76::9]:8080");
    assert!(rules(&r, Table::Nat, &sep)[1].ends_with("-j DNAT --to-destination [fd00:76::9]:8080"));
    assert!(
        rules(&r, Table::Nat, "KUBE-SERVICES")
            .last()
            .unwrap()
            .contains("! -d ::1/128")
    );
    assert!(r.chain(Table::Filter, "KUBE-FIREWALL").is_none());
    // The IPv4 payload has nothing for this service.
    let r4 = render_yaml(y, &cfg());
    assert!(r4.nat.iter().all(|c| !c.name.starts_with("KUBE-SEP-")));
}

#[test]
fn large_cluster_drops_endpoint_comments() {
    let mut y = svc("big", "{clusterIP: 10.0.0.15, ports: [{port: 80}]}");
    let ips: Vec<String> = (0..1001)
        .map(|i| format!("10.77.{}.{}", i / 250, i % 250 + 1))
        .collect();
    let pairs: Vec<(&str, &str)> = ips.iter().map(|ip| (ip.as_str(), "node-2")).collect();
    y += &eps("big", &pairs, 80);
    let r = render_yaml(&y, &cfg());
    let sep = r.nat.iter().find(|c| c.name.starts_with("KUBE-SEP-")).unwrap();
    assert!(sep.rules.iter().all(|r| !r.contains("--comment")));
}

#[test]
fn output_is_deterministic_and_order_independent() {
    let a = svc("a", "{clusterIP: 10.0.0.16, ports: [{port: 80}]}") + &eps("a", &[("10.76.0.50", "n")], 80);
    let b = svc("b", "{clusterIP: 10.0.0.17, ports: [{port: 80}]}") + &eps("b", &[("10.76.0.51", "n")], 80);
    let c = cfg();
    let r1 = render_yaml(&(a.clone() + &b), &c);
    let r2 = render_yaml(&(b + &a), &c);
    let o = FullOptions::default();
    assert_eq!(r1.payload(&o, &c).0, r2.payload(&o, &c).0);
}

#[test]
fn partial_writes_only_changed_chains() {
    let a = svc("a", "{clusterIP: 10.0.0.18, ports: [{port: 80}]}");
    let b = svc("b", "{clusterIP: 10.0.0.19, ports: [{port: 80}]}") + &eps("b", &[("10.76.0.61", "n")], 80);
    for layout in [Layout::Flat, Layout::Tree] {
        let c = RenderConfig { layout, ..cfg() };
        let before = render_yaml(&(a.clone() + &eps("a", &[("10.76.0.60", "n")], 80) + &b), &c);
        let after = render_yaml(
            &(a.clone() + &eps("a", &[("10.76.0.60", "n"), ("10.76.0.62", "n")], 80) + &b),
            &c,
        );
        let (p, stats) = after.partial_payload(&before.digests()).expect("a change");
        let svc_a = naming::svc_chain("default/a", "tcp");
        let svc_b = naming::svc_chain("default/b", "tcp");
        assert!(p.contains(&format!(":{svc_a} - [0:0]")), "{p}");
        assert!(p.contains(&naming::sep_chain("default/a", "tcp", "10.76.0.62:80")));
        assert!(!p.contains(&svc_b), "unchanged service written:\n{p}");
        assert!(!p.contains("-A KUBE-SERVICES"), "dispatch unchanged:\n{p}");
        assert!(!p.contains("*filter"), "filter unchanged:\n{p}");
        assert_eq!(stats.chains_written, 2);
        // Nothing changed: nothing to write.
        assert!(after.partial_payload(&after.digests()).is_none());
        // Back again: the new SEP chain is flushed and deleted.
        let (p, _) = before.partial_payload(&after.digests()).unwrap();
        let gone = naming::sep_chain("default/a", "tcp", "10.76.0.62:80");
        assert!(p.contains(&format!("-X {gone}")), "{p}");
    }
}

#[test]
fn bad_service_does_not_break_others() {
    let y = svc("good", "{clusterIP: 10.0.0.20, ports: [{port: 80}]}")
        + "---\nkind: Service\nmetadata: {name: 'bad name', namespace: default}\nspec: {clusterIP: 10.0.0.21, ports: [{port: 80}]}\n"
        + &eps("good", &[("10.76.0.70", "n")], 80);
    let objs = parse_objects(&y).unwrap();
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4);
    assert_eq!(state.errors.len(), 1);
    assert!(state.errors[0].to_string().contains("metadata.name"));
    let r = render(&state, &node(), &cfg());
    assert!(
        r.chain(Table::Nat, &naming::svc_chain("default/good", "tcp"))
            .is_some()
    );
}

#[test]
fn comments_cannot_escape() {
    assert_eq!(comment("ns/a:b"), "ns/a:b");
    assert_eq!(comment("ns/a:b cluster IP"), "\"ns/a:b cluster IP\"");
    assert_eq!(comment("x\" -j ACCEPT \\"), "\"x_ -j ACCEPT _\"");
    assert!(comment(&"a b".repeat(200)).len() <= 252);
}

/// kube-proxy ensures kubelet's KUBE-FIREWALL chain and its INPUT/OUTPUT jumps in every family (found
/// by the differential test: an empty chain in ip6tables), once each.
#[test]
fn kubelet_firewall_jumps_are_ensured_in_every_family() {
    let firewall_jumps = |c: &RenderConfig| {
        ensured_jumps(c)
            .iter()
            .filter(|j| j.rule == "-j KUBE-FIREWALL")
            .map(|j| j.chain)
            .collect::<Vec<_>>()
    };
    let v6 = RenderConfig {
        family: Family::V6,
        ..cfg()
    };
    assert_eq!(firewall_jumps(&v6), ["INPUT", "OUTPUT"]);
    assert_eq!(firewall_jumps(&cfg()), ["INPUT", "OUTPUT"]);
    let no_localhost = RenderConfig {
        localhost_nodeports: false,
        ..cfg()
    };
    assert_eq!(firewall_jumps(&no_localhost), ["INPUT", "OUTPUT"]);
    assert_eq!(ensured_jumps(&v6).len(), jumps(&v6).len() + 2);
}
