//! The real `svcnet-proxy run --proxy-mode nftables` in the throwaway one-node cluster of the daemon
//! tests (`lab/mod.rs`: real netfilter, real traffic between namespaces, the real kube-apiserver):
//! the same scenarios as the iptables mode's tests, in both layouts of the `kube-proxy` table
//! (`--nftables-layout upstream|maps`), and a live switch between the layouts under traffic.

mod lab;

use std::time::Duration;

use lab::api::{cluster_ip, local, node_port};
use lab::helper::{answered_by, replies, request, spawn_requests, spawn_server};
use lab::{BRIDGE_IP, CLIENT_IP, CLIENT_IP2, Lab, NODE, NODE_IP, Opts, wait_for};
use serde_json::json;

/// Not a test: the pod servers and clients of the lab run this binary with `SVCNET_HELPER` set.
#[test]
#[ignore = "helper process for the lab, started by the other tests"]
fn helper() {
    lab::helper::main();
}

const TCP: &[(&str, &str)] = &[("", "TCP")];

/// `--nftables-layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Upstream,
    Maps,
}

impl Layout {
    fn word(self) -> &'static str {
        match self {
            Layout::Upstream => "upstream",
            Layout::Maps => "maps",
        }
    }

    /// A lab tag per layout (namespaces of both may exist at once).
    fn tag(self, base: &str) -> String {
        match self {
            Layout::Upstream => base.to_string(),
            Layout::Maps => format!("{base}m"),
        }
    }

    /// How `nft list` shows that `ep` (ip:port) is a DNAT target.
    fn dnat_to(self, ep: &str) -> String {
        match self {
            Layout::Upstream => format!("dnat to {ep}"),
            Layout::Maps => ep.replacen(':', " . ", 1),
        }
    }
}

fn args(layout: Layout) -> Vec<String> {
    ["--proxy-mode", "nftables", "--nftables-layout", layout.word()]
        .map(String::from)
        .into()
}

fn nft_opts(pods: usize, layout: Layout) -> Opts {
    Opts {
        pods,
        extra_args: args(layout),
        ..Opts::default()
    }
}

fn web_spec() -> serde_json::Value {
    json!({"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]})
}

fn table(lab: &Lab) -> String {
    lab.node.ok(&["nft", "list", "table", "ip", "kube-proxy"])
}

/// Transactions written after the first `skip`.
fn transactions(lab: &Lab, skip: usize) -> Vec<(String, String)> {
    lab.payloads().into_iter().skip(skip).collect()
}

#[test]
fn nftables_clusterip_nodeport_no_endpoints_partial_transactions_and_mode_switch() {
    clusterip_nodeport_no_endpoints(Layout::Upstream);
}

#[test]
fn nftables_maps_clusterip_nodeport_no_endpoints_partial_transactions_and_mode_switch() {
    clusterip_nodeport_no_endpoints(Layout::Maps);
}

fn clusterip_nodeport_no_endpoints(layout: Layout) {
    // Leftovers of the iptables mode on this node: the nftables mode removes them at start.
    let opts = Opts {
        before_proxy: vec![
            vec![
                "iptables".into(),
                "-t".into(),
                "nat".into(),
                "-N".into(),
                "KUBE-SERVICES".into(),
            ],
            [
                "iptables",
                "-t",
                "nat",
                "-A",
                "PREROUTING",
                "-m",
                "comment",
                "--comment",
            ]
            .into_iter()
            .chain(["kubernetes service portals", "-j", "KUBE-SERVICES"])
            .map(String::from)
            .collect(),
        ],
        ..nft_opts(3, layout)
    };
    let Some(lab) = Lab::start(&layout.tag("nftbasic"), opts) else {
        return;
    };
    let saved = lab.save();
    assert!(
        !saved.contains("KUBE-SERVICES"),
        "iptables mode leftovers stay:\n{saved}"
    );

    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    let np = api.service(
        "np",
        json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("np", TCP, &[local("10.244.1.10")]);
    let empty = api.service("empty", web_spec());
    wait_for("the last service programmed", Duration::from_secs(20), || {
        table(&lab).contains(&cluster_ip(&empty)).then_some(())
    });
    let web_addr = format!("{}:80", cluster_ip(&web));

    // ClusterIP from a pod: both endpoints answer.
    let pod3 = &lab.pod("pod3").ns;
    let seen = wait_for("both web endpoints from pod3", Duration::from_secs(20), || {
        let s = answered_by(&request(pod3, "tcp", &web_addr, 12, None));
        (s.len() == 2).then_some(s)
    });
    assert_eq!(seen, ["pod1", "pod2"].map(String::from).into());
    // From the node itself (nat output hook).
    let from_node = request(&lab.node, "tcp", &web_addr, 4, None);
    assert!(from_node.iter().all(|r| !r.starts_with("ERR")), "{from_node:?}");
    // NodePort from the client: answered and masqueraded (the pod sees the bridge address).
    let np_addr = format!("{NODE_IP}:{}", node_port(&np));
    let r = request(&lab.client, "tcp", &np_addr, 3, None);
    assert!(r.iter().all(|r| r == "pod1 10.244.1.1"), "{r:?}");
    // Only there, with no --nodeport-addresses (nftables mode's default is `primary`, upstream's
    // `nodeport-ips`): br0's address is just as local, and the NodePort is closed on it.
    let r = request(
        &lab.client,
        "tcp",
        &format!("{BRIDGE_IP}:{}", node_port(&np)),
        1,
        None,
    );
    assert!(r[0].starts_with("ERR refused"), "{r:?}");
    // No endpoints: rejected (refused, not a timeout).
    let r = request(pod3, "tcp", &format!("{}:80", cluster_ip(&empty)), 1, None);
    assert!(r[0].starts_with("ERR refused"), "{r:?}");
    // A port the cluster IP does not serve: rejected by cluster-ips-check.
    let r = request(pod3, "tcp", &format!("{}:81", cluster_ip(&web)), 1, None);
    assert!(r[0].starts_with("ERR refused"), "{r:?}");
    // An address of the ServiceCIDR (kube-apiserver's default object, read from the API: no flag)
    // that no Service holds is dropped, although a server outside would answer on it; the same
    // server answers on an address outside the range, so the route is there.
    let unallocated = "10.96.255.254";
    for svc in [&web, &np, &empty] {
        assert_ne!(cluster_ip(svc), unallocated, "pick another unallocated address");
    }
    for addr in [unallocated, "192.0.2.99"] {
        lab.client
            .ok(&["ip", "addr", "add", &format!("{addr}/32"), "dev", "eth0"]);
    }
    let _outside = spawn_server(&lab.client, "outside", false);
    let r = wait_for("the outside server answers", Duration::from_secs(10), || {
        let r = request(pod3, "tcp", "192.0.2.99:8080", 1, None);
        r[0].starts_with("outside").then_some(r)
    });
    assert_eq!(r, ["outside 10.244.1.12"]);
    let r = request(pod3, "tcp", &format!("{unallocated}:8080"), 1, None);
    assert!(r[0].starts_with("ERR timeout"), "{r:?}");

    // A change reaches the kernel as a partial transaction with only that service's objects.
    std::thread::sleep(Duration::from_millis(1200));
    let skip = lab.payloads().len();
    api.update_slice("web", TCP, &[local("10.244.1.12")]);
    let r = wait_for("web answered by pod3 only", Duration::from_secs(10), || {
        let r = request(&lab.pod("pod1").ns, "tcp", &web_addr, 6, None);
        (answered_by(&r) == ["pod3".to_string()].into()).then_some(r)
    });
    assert_eq!(r.len(), 6);
    let written = transactions(&lab, skip);
    let (name, text) = written.first().expect("a transaction for the change");
    assert!(name.ends_with("-ipv4-partial.nft"), "{name}");
    match layout {
        Layout::Upstream => {
            assert!(text.contains("default/web/tcp/"), "{text}");
            assert!(
                !text.contains("default/np/") && !text.contains("default/empty/"),
                "{text}"
            );
        }
        Layout::Maps => {
            // Elements only, of web's key and endpoints alone.
            assert!(
                text.lines()
                    .all(|l| l.starts_with("add element ") || l.starts_with("delete element ")),
                "{text}"
            );
            assert!(
                text.contains(&cluster_ip(&web)) && text.contains("10.244.1.12"),
                "{text}"
            );
            assert!(
                !text.contains(&cluster_ip(&np)) && !text.contains(&cluster_ip(&empty)),
                "{text}"
            );
        }
    }
    assert!(
        !text.contains("add table"),
        "a partial transaction declares no table:\n{text}"
    );

    // Deleting a service removes its chains and elements.
    api.delete_service("web");
    wait_for("web gone from the table", Duration::from_secs(10), || {
        let t = table(&lab);
        (!t.contains("default/web/") && !t.contains(&cluster_ip(&web))).then_some(())
    });
    let metrics = lab.metrics();
    assert!(
        metrics.contains("kubeproxy_sync_proxy_rules_nftables_sync_failures_total"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("kubeproxy_iptables_ct_state_invalid"),
        "{metrics}"
    );
    // Which writer took the transactions.
    let writes = |writer: &str| -> f64 {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("svcnet_proxy_nftables_writes_total{")
                    && l.contains(&format!("writer=\"{writer}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    // Every transaction through netlink, in both layouts: the maps layout's first load (the
    // whole table) as much as its element steps.
    assert!(writes("netlink") >= 3.0, "{metrics}");
    assert_eq!(writes("nft"), 0.0, "{metrics}");

    // `cleanup` removes the nftables table (kube-proxy --cleanup removes both modes).
    let out = lab
        .node
        .ok(&[lab::proxy_binary().to_str().expect("utf-8"), "cleanup"]);
    assert!(out.contains("removed the nftables kube-proxy table"), "{out}");
}

#[test]
fn nftables_external_paths_local_policy_affinity_source_ranges_and_udp_conntrack() {
    external_paths(Layout::Upstream);
}

#[test]
fn nftables_maps_external_paths_local_policy_affinity_source_ranges_and_udp_conntrack() {
    external_paths(Layout::Maps);
}

fn external_paths(layout: Layout) {
    let Some(mut lab) = Lab::start(&layout.tag("nftext"), nft_opts(3, layout)) else {
        return;
    };
    let api = lab.api();
    let remote = ("10.244.1.11", true, "node-b");
    let lb = api.service(
        "lb",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("lb", TCP, &[local("10.244.1.10"), remote]);
    api.set_lb_ingress("lb", "203.0.113.10");
    let sticky = api.service(
        "sticky",
        json!({"sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("sticky", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    api.service(
        "ranged",
        json!({"type": "LoadBalancer", "loadBalancerSourceRanges": [format!("{CLIENT_IP}/32")],
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "UDP"}]}),
    );
    api.slice("ranged", &[("", "UDP")], &[local("10.244.1.10")]);
    api.set_lb_ingress("ranged", "203.0.113.11");
    let dns = api.service(
        "dns",
        json!({"ports": [{"port": 53, "targetPort": 8080, "protocol": "UDP"}]}),
    );
    api.slice("dns", &[("", "UDP")], &[local("10.244.1.10")]);
    api.service(
        "ext",
        json!({"externalIPs": ["198.51.100.7"], "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("ext", TCP, &[local("10.244.1.12")]);
    wait_for("every write programmed", Duration::from_secs(20), || {
        let t = table(&lab);
        (t.contains("198.51.100.7") && t.contains(&layout.dnat_to("10.244.1.12:8080"))).then_some(())
    });

    // LB VIP, Local policy: only the local endpoint, and it sees the client's own address.
    let r = wait_for("LB VIP answers", Duration::from_secs(20), || {
        let r = request(&lab.client, "tcp", "203.0.113.10:80", 8, None);
        r.iter().all(|r| !r.starts_with("ERR")).then_some(r)
    });
    assert!(r.iter().all(|r| r == &format!("pod1 {CLIENT_IP}")), "{r:?}");
    // Via the cluster IP from a pod, both endpoints (the policy is about external traffic).
    let lb_addr = format!("{}:80", cluster_ip(&lb));
    wait_for(
        "both lb endpoints via cluster IP",
        Duration::from_secs(10),
        || {
            let s = answered_by(&request(&lab.pod("pod3").ns, "tcp", &lb_addr, 10, None));
            (s.len() == 2).then_some(())
        },
    );
    // Session affinity: one client, always the same pod.
    let r = request(
        &lab.pod("pod3").ns,
        "tcp",
        &format!("{}:80", cluster_ip(&sticky)),
        10,
        None,
    );
    assert!(r.iter().all(|r| !r.starts_with("ERR")), "{r:?}");
    assert_eq!(answered_by(&r).len(), 1, "{r:?}");
    affinity_follows_endpoints(&mut lab, layout, &sticky, &answered_by(&r));
    // Source ranges: allowed source answered, the other dropped.
    let ok = request(&lab.client, "udp", "203.0.113.11:80", 2, Some(CLIENT_IP));
    assert!(ok.iter().all(|r| r.starts_with("pod1")), "{ok:?}");
    let denied = request(&lab.client, "udp", "203.0.113.11:80", 1, Some(CLIENT_IP2));
    assert!(denied[0].starts_with("ERR timeout"), "{denied:?}");
    // externalIP from the client.
    let r = request(&lab.client, "tcp", "198.51.100.7:80", 2, None);
    assert!(r.iter().all(|r| r.starts_with("pod3")), "{r:?}");
    // The local endpoint becomes unready: external traffic to the VIP stops here.
    api.update_slice("lb", TCP, &[("10.244.1.10", false, NODE), remote]);
    wait_for(
        "LB VIP dropped without a local endpoint",
        Duration::from_secs(10),
        || {
            request(&lab.client, "tcp", "203.0.113.10:80", 1, None)[0]
                .starts_with("ERR")
                .then_some(())
        },
    );
    // Counted as upstream's nftables proxier counts it, in both layouts: lb's external policy.
    let no_local = |policy: &str| {
        lab.metric(&format!(
            "kubeproxy_sync_proxy_rules_no_local_endpoints_total{{ip_family=\"IPv4\",traffic_policy=\"{policy}\"}}"
        ))
    };
    wait_for(
        "lb counted without local endpoints",
        Duration::from_secs(5),
        || ((no_local("external"), no_local("internal")) == (1.0, 0.0)).then_some(()),
    );

    // UDP: one flow (fixed source port) moves to the new endpoint once the old one leaves.
    let vip = format!("{}:53", cluster_ip(&dns));
    let client = &lab.pod("pod3").ns;
    let src = Some("10.244.1.12:40053");
    wait_for("dns answers from pod1", Duration::from_secs(20), || {
        let r = request(client, "udp", &vip, 3, src);
        r.iter().all(|r| r.starts_with("pod1")).then_some(())
    });
    api.update_slice("dns", &[("", "UDP")], &[local("10.244.1.11")]);
    wait_for(
        "the same UDP flow answered by pod2",
        Duration::from_secs(10),
        || {
            request(client, "udp", &vip, 1, src)[0]
                .starts_with("pod2")
                .then_some(())
        },
    );
}

/// A ClientIP client stays with its endpoint while the table gains a dispatch rule (a new endpoint
/// count: grown in place in the maps layout) and across a restart of the proxy (whose first sync
/// replaces the table: the remembered entry must be carried over), and moves once that endpoint
/// leaves the Service, although its pod still answers: upstream's affinity sets go with their
/// endpoint. `stuck`: the one pod pod3 was sent to so far.
fn affinity_follows_endpoints(
    lab: &mut Lab,
    layout: Layout,
    sticky: &serde_json::Value,
    stuck: &std::collections::BTreeSet<String>,
) {
    let pod_ip = |pod: &str| {
        let n: u8 = pod.trim_start_matches("pod").parse().expect("podN");
        format!("10.244.1.{}", 9 + n)
    };
    let stuck = stuck.iter().next().expect("one pod").clone();
    let other = if stuck == "pod1" { "pod2" } else { "pod1" };
    let addr = format!("{}:80", cluster_ip(sticky));
    // The Service port's own map (`affinity-<id>-<timeout>`, the only one here) holds pod3's entry.
    let remembered = |lab: &Lab| {
        let listing = lab.node.ok(&["nft", "list", "table", "ip", "kube-proxy"]);
        let mut in_map = false;
        listing.lines().any(|l| {
            if l.trim_start().starts_with("map ") {
                in_map = l.contains("map affinity-");
            }
            in_map && l.contains("10.244.1.12 ") && l.contains(&format!(": {} . 8080", pod_ip(&stuck)))
        })
    };
    // Three endpoints: a count no other Service has.
    let three = lab.api().service("three", web_spec());
    let eps = [local("10.244.1.10"), local("10.244.1.11"), local("10.244.1.12")];
    lab.api().slice("three", TCP, &eps);
    let three_addr = format!("{}:80", cluster_ip(&three));
    wait_for("the three-endpoint Service live", Duration::from_secs(20), || {
        request(&lab.pod("pod3").ns, "tcp", &three_addr, 1, None)[0]
            .starts_with("pod")
            .then_some(())
    });
    if layout == Layout::Maps {
        assert!(table(lab).contains("svcs-3 {"), "a table with the new count");
        let log = lab.log("proxy.log");
        assert!(
            log.contains("dispatch rules added in place") && !log.contains("replacing the table"),
            "the rule added in place: {log}"
        );
        assert!(remembered(lab), "the entry kept by the growth");
    }
    // A restarted proxy's first sync replaces the table.
    let restart = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    lab.stop_proxy();
    lab.start_proxy();
    wait_for(
        "the restarted proxy's first sync",
        Duration::from_secs(20),
        || {
            let synced = lab.metric("kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"}");
            (synced >= restart).then_some(())
        },
    );
    if layout == Layout::Maps {
        assert!(remembered(lab), "the entry carried into the replaced table");
    }
    let client = &lab.pod("pod3").ns;
    let r = request(client, "tcp", &addr, 10, None);
    assert_eq!(
        answered_by(&r),
        [stuck.clone()].into(),
        "after the restart: {r:?}"
    );
    // The endpoint leaves; pod3 takes its place (the same count: element steps in the maps layout).
    lab.api()
        .update_slice("sticky", TCP, &[local(&pod_ip(other)), local("10.244.1.12")]);
    moves_off(client, &addr, &stuck);
}

#[test]
fn nftables_dual_stack_service_carries_ipv6_traffic() {
    dual_stack(Layout::Upstream);
}

#[test]
fn nftables_maps_dual_stack_service_carries_ipv6_traffic() {
    dual_stack(Layout::Maps);
}

fn dual_stack(layout: Layout) {
    let Some(lab) = Lab::start(
        &layout.tag("nft6"),
        Opts {
            ipv6: true,
            ..nft_opts(4, layout)
        },
    ) else {
        return;
    };
    let api = lab.api();
    let svc = api.service(
        "dual",
        json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"],
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("dual", TCP, &[local("10.244.1.10")]);
    api.slice_v6("dual", TCP, &[local("fd00:10:244:1::11")]);
    let ip6 = lab::api::cluster_ip_at(&svc, 1);
    wait_for("the ip6 table programmed", Duration::from_secs(20), || {
        lab.node
            .ok(&["nft", "list", "table", "ip6", "kube-proxy"])
            .contains(&ip6)
            .then_some(())
    });
    let r = wait_for("IPv6 cluster IP answers", Duration::from_secs(20), || {
        let r = request(&lab.pod("pod1").ns, "tcp", &format!("[{ip6}]:80"), 3, None);
        r.iter().all(|r| !r.starts_with("ERR")).then_some(r)
    });
    assert!(r.iter().all(|r| r.starts_with("pod2")), "{r:?}");
    let r = request(
        &lab.pod("pod2").ns,
        "tcp",
        &format!("{}:80", cluster_ip(&svc)),
        3,
        None,
    );
    assert!(r.iter().all(|r| r.starts_with("pod1")), "{r:?}");
    ipv6_affinity_follows_endpoints(&lab);
}

/// An IPv6 ClientIP Service (in the maps layout its record rules go through netlink only): pod1's
/// connections stick to one of pod2 and pod3, and move once that endpoint leaves the Service
/// (pod4 takes its place), although its pod still answers.
fn ipv6_affinity_follows_endpoints(lab: &Lab) {
    let api = lab.api();
    let svc = api.service(
        "sticky6",
        json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv6"], "sessionAffinity": "ClientIP",
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    let pod = |n: u8| format!("fd00:10:244:1::{}", 9 + n);
    api.slice_v6("sticky6", TCP, &[local(&pod(2)), local(&pod(3))]);
    let addr = format!("[{}]:80", lab::api::cluster_ip_at(&svc, 0));
    let client = &lab.pod("pod1").ns;
    let r = wait_for(
        "the IPv6 ClientIP Service answers",
        Duration::from_secs(20),
        || {
            let r = request(client, "tcp", &addr, 10, None);
            r.iter().all(|r| !r.starts_with("ERR")).then_some(r)
        },
    );
    let by = answered_by(&r);
    assert_eq!(by.len(), 1, "every connection to one endpoint: {r:?}");
    let stuck = by.into_iter().next().expect("one");
    let kept = if stuck == "pod2" { 3 } else { 2 };
    api.update_slice_v6("sticky6", TCP, &[local(&pod(kept)), local(&pod(4))]);
    moves_off(client, &addr, &stuck);
}

/// `client`'s connections to `addr` leave the endpoint `stuck` (which left the Service, its pod
/// still answering) and stick to one other.
fn moves_off(client: &svcnet_netns::Netns, addr: &str, stuck: &str) {
    let r = wait_for(
        "the client sent away from the gone endpoint",
        Duration::from_secs(20),
        || {
            let r = request(client, "tcp", addr, 10, None);
            let by = answered_by(&r);
            (r.iter().all(|r| !r.starts_with("ERR")) && !by.contains(stuck)).then_some(r)
        },
    );
    assert_eq!(answered_by(&r).len(), 1, "and sticks to its new one: {r:?}");
}

/// The node's TCP conntrack entries neither closed normally nor open (a connection that timed out
/// shows here, with whether its SYN was DNATed and masqueraded), and each one's pod-side 4-tuple
/// among the pods' TIME_WAIT sockets (a new connection given the address and port of one the pod
/// still holds is answered as the old one's).
fn unfinished(lab: &Lab) -> String {
    let all = lab.node.ok(&["conntrack", "-L", "-p", "tcp"]);
    let mut out = Vec::new();
    for l in all
        .lines()
        .filter(|l| l.contains("10.244.") && !l.contains("TIME_WAIT") && !l.contains("ESTABLISHED"))
    {
        out.push(l.to_string());
        let Some(port) = l
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("dport="))
            .next_back()
        else {
            continue;
        };
        for pod in ["pod1", "pod2"] {
            let tw = lab.pod(pod).ns.ok(&["ss", "-Htan", "state", "time-wait"]);
            let peer = format!("{BRIDGE_IP}:{port}");
            out.extend(
                tw.lines()
                    .filter(|t| t.split_whitespace().nth(3) == Some(peer.as_str()))
                    .map(|t| format!("  {pod} TIME_WAIT: {t}")),
            );
        }
    }
    out.join("\n")
}

/// What only one layout's table has: upstream's dispatch map or per-service chains, the maps
/// layout's slot maps (`eps-<count>`).
fn holds(table: &str, layout: Layout) -> bool {
    match layout {
        Layout::Upstream => table.contains("map service-ips ") || table.contains("/tcp/p"),
        Layout::Maps => table.contains("map eps-"),
    }
}

/// Connects of the 6000 one client makes that may time out in each half: sequential connects at this
/// rate time out now and then with one table loaded and nothing written (3 in 24,522 measured,
/// docs/nftables-maps.md, "The daemon"). A gap in the rules shows as a refused connect (no DNAT: the
/// node's stack or the cluster IPs' reject answers), which is never allowed.
const BACKGROUND_TIMEOUTS: usize = 2;

#[test]
fn nftables_layout_switch_on_a_live_node_has_no_gap_and_no_leftovers() {
    const COUNT: usize = 6000;
    let Some(mut lab) = Lab::start("nftswitch", nft_opts(2, Layout::Upstream)) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    let np = api.service(
        "np",
        json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("np", TCP, &[local("10.244.1.10")]);
    let web_addr = format!("{}:80", cluster_ip(&web));
    let np_addr = format!("{NODE_IP}:{}", node_port(&np));
    wait_for("web answers", Duration::from_secs(20), || {
        let r = request(&lab.client, "tcp", &np_addr, 1, None);
        (r[0].starts_with("pod1") && answered_by(&request(&lab.client, "tcp", &web_addr, 8, None)).len() == 2)
            .then_some(())
    });
    for (from, to) in [(Layout::Upstream, Layout::Maps), (Layout::Maps, Layout::Upstream)] {
        assert!(holds(&table(&lab), from), "{from:?} before the switch");
        for (name, _) in lab.payloads() {
            std::fs::remove_file(lab.payload_dir().join(name)).expect("remove payload");
        }
        // Connections from outside and from the node run through the restart with the other flag
        // (each client makes them one after the other, about a millisecond apiece).
        let mut outside = spawn_requests(&lab.client, "tcp", &np_addr, COUNT);
        let mut inside = spawn_requests(&lab.node, "tcp", &web_addr, COUNT);
        std::thread::sleep(Duration::from_millis(300));
        lab.stop_proxy();
        lab.opts.extra_args = args(to);
        lab.start_proxy();
        // The new proxy writes its table while both clients still run.
        wait_for("the other layout's first sync", Duration::from_secs(20), || {
            let running = |c: &mut std::process::Child| c.try_wait().expect("client").is_none();
            assert!(
                running(&mut outside) && running(&mut inside),
                "{from:?} -> {to:?}: the clients ended before the first sync; log:\n{}",
                lab.log("proxy.log")
            );
            let written = lab.payloads();
            written
                .iter()
                .any(|(name, _)| name.contains("-ipv4-full"))
                .then_some(())
        });
        let outside = replies(outside);
        let inside = replies(inside);
        for (what, r) in [("node port", &outside), ("cluster IP", &inside)] {
            assert_eq!(r.len(), COUNT, "{what}: {r:?}");
            let failed: Vec<_> = r
                .iter()
                .enumerate()
                .filter(|(_, r)| r.starts_with("ERR"))
                .collect();
            let timeouts = failed
                .iter()
                .filter(|(_, r)| r.starts_with("ERR timeout"))
                .count();
            if timeouts > 0 {
                println!("{from:?} -> {to:?}, {what}: {timeouts} connects timed out: {failed:?}");
            }
            assert!(
                timeouts == failed.len() && timeouts <= BACKGROUND_TIMEOUTS,
                "{from:?} -> {to:?}, {what}: {failed:?}; unfinished flows:\n{}\nconntrack stats:\n{}\nlog:\n{}",
                unfinished(&lab),
                lab.node.ok(&["conntrack", "-S"]),
                lab.log("proxy.log")
            );
        }
        assert_eq!(answered_by(&inside).len(), 2, "{inside:?}");
        let t = table(&lab);
        assert!(holds(&t, to), "{to:?} after the switch:\n{t}");
        assert!(!holds(&t, from), "{from:?} left behind:\n{t}");
    }
}

/// A table whose hooked chain a layout cannot declare again in place (a maps-layout table whose
/// `nat-prerouting` hooks elsewhere), found at a restart: the batch that keeps the table's hooks is
/// refused, and the sync falls back to recreating the table, so the node is not left unsynced.
fn a_table_whose_hooks_cannot_be_kept_is_recreated(name: &str, layout: Layout, fallback: &str) {
    let Some(mut lab) = Lab::start(name, nft_opts(1, layout)) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    let web_addr = format!("{}:80", cluster_ip(&web));
    api.slice("web", TCP, &[local("10.244.1.10")]);
    wait_for("web answers", Duration::from_secs(20), || {
        request(&lab.node, "tcp", &web_addr, 1, None)[0]
            .starts_with("pod1")
            .then_some(())
    });
    lab.stop_proxy();
    let odd = "delete table ip kube-proxy\nadd table ip kube-proxy\n\
               add map ip kube-proxy eps { type ipv4_addr : ipv4_addr; }\n\
               add chain ip kube-proxy nat-prerouting { type filter hook input priority 0; }\n";
    let (ok, _, err) = lab.node.exec(&["nft", "-f", "-"], odd);
    assert!(ok, "{err}");
    lab.start_proxy();
    wait_for("web answers again", Duration::from_secs(30), || {
        request(&lab.node, "tcp", &web_addr, 1, None)[0]
            .starts_with("pod1")
            .then_some(())
    });
    let log = lab.log("proxy.log");
    assert!(
        log.contains(fallback),
        "{layout:?}: the batch keeping the hooks was not refused, or not retried:\n{log}"
    );
    let t = table(&lab);
    assert!(t.contains("type nat hook prerouting priority dstnat"), "{t}");
    if layout == Layout::Upstream {
        assert!(holds(&t, Layout::Upstream) && !holds(&t, Layout::Maps), "{t}");
    }
}

#[test]
fn upstream_layout_recreates_a_table_whose_hooks_cannot_be_kept() {
    a_table_whose_hooks_cannot_be_kept_is_recreated(
        "nftclearu",
        Layout::Upstream,
        "clearing the table around its hooks failed; recreating it",
    );
}

#[test]
fn maps_layout_recreates_a_table_whose_hooks_cannot_be_kept() {
    a_table_whose_hooks_cannot_be_kept_is_recreated(
        "nftclearm",
        Layout::Maps,
        "the replacement keeping the hooked chains was refused; deleting the table instead",
    );
}

/// The maps layout's full syncs by what the kernel holds, each with traffic after it: its first
/// load into no table goes in pieces; a restart over its own live table keeps the sets that hold
/// what the new cache holds (the log's plan names how many); a restart over a dormant table (a
/// load in pieces that stopped half way) loads it in pieces again and wakes it.
#[test]
fn maps_layout_loads_in_pieces_where_no_packet_reaches_and_refreshes_its_live_table() {
    let Some(mut lab) = Lab::start("nftpieces", nft_opts(1, Layout::Maps)) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    let web_addr = format!("{}:80", cluster_ip(&web));
    api.slice("web", TCP, &[local("10.244.1.10")]);
    let answers = |lab: &Lab, what: &str| {
        wait_for(what, Duration::from_secs(30), || {
            request(&lab.node, "tcp", &web_addr, 1, None)[0]
                .starts_with("pod1")
                .then_some(())
        })
    };
    answers(&lab, "web answers");
    // The log is coloured: its escape sequences go before the fields are read.
    let log = |lab: &Lab| -> String {
        let text = lab.log("proxy.log");
        let mut parts = text.split('\x1b');
        let first = parts.next().unwrap_or_default().to_string();
        first
            + &parts
                .map(|p| p.split_once('m').map_or(p, |(_, rest)| rest))
                .collect::<String>()
    };
    let pieces = |lab: &Lab| log(lab).matches("table loaded in pieces").count();
    const PLAN: &str = "sets the replacement leaves as they are or flushes";
    assert_eq!(pieces(&lab), 1, "the first load:\n{}", log(&lab));

    // The old table answers while the proxy is away: wait for the new process's full sync.
    lab.stop_proxy();
    lab.start_proxy();
    wait_for("the restart's full sync", Duration::from_secs(30), || {
        log(&lab).contains(PLAN).then_some(())
    });
    answers(&lab, "web answers after a restart");
    let text = log(&lab);
    let kept: Vec<usize> = text
        .lines()
        .filter(|l| l.contains(PLAN))
        .filter_map(|l| l.split("kept=").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(
        kept.first().is_some_and(|&k| k > 0),
        "the restart kept no set ({kept:?}):\n{text}"
    );
    assert_eq!(pieces(&lab), 1, "a live table is not loaded in pieces");

    lab.stop_proxy();
    let (ok, _, err) = lab.node.exec(
        &["nft", "-f", "-"],
        "add table ip kube-proxy { flags dormant; }\n",
    );
    assert!(ok, "{err}");
    lab.start_proxy();
    wait_for(
        "a load in pieces over the dormant table",
        Duration::from_secs(30),
        || (pieces(&lab) == 2).then_some(()),
    );
    answers(&lab, "web answers after a restart over a dormant table");
    let t = table(&lab);
    assert!(!t.contains("dormant"), "{t}");
}
