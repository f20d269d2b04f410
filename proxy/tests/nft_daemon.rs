//! The real `svcnet-proxy run --proxy-mode nftables` in the throwaway one-node cluster of the daemon
//! tests (`lab/mod.rs`: real netfilter, real traffic between namespaces, the real kube-apiserver):
//! the same scenarios as the iptables mode's tests, programmed through upstream's `kube-proxy` table.

mod lab;

use std::time::Duration;

use lab::api::{cluster_ip, local, node_port};
use lab::helper::{answered_by, request, spawn_server};
use lab::{BRIDGE_IP, CLIENT_IP, CLIENT_IP2, Lab, NODE, NODE_IP, Opts, wait_for};
use serde_json::json;

/// Not a test: the pod servers and clients of the lab run this binary with `SVCNET_HELPER` set.
#[test]
#[ignore = "helper process for the lab, started by the other tests"]
fn helper() {
    lab::helper::main();
}

const TCP: &[(&str, &str)] = &[("", "TCP")];

fn nft_opts(pods: usize) -> Opts {
    Opts {
        pods,
        extra_args: vec!["--proxy-mode".into(), "nftables".into()],
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
        ..nft_opts(3)
    };
    let Some(lab) = Lab::start("nftbasic", opts) else {
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
    assert!(text.contains("default/web/tcp/"), "{text}");
    assert!(
        !text.contains("default/np/") && !text.contains("default/empty/"),
        "{text}"
    );
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
    // Every transaction went as a netlink batch: none needed the nft fallback.
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
    let Some(lab) = Lab::start("nftext", nft_opts(3)) else {
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
        (t.contains("198.51.100.7") && t.contains("dnat to 10.244.1.12:8080")).then_some(())
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

#[test]
fn nftables_dual_stack_service_carries_ipv6_traffic() {
    let Some(lab) = Lab::start(
        "nft6",
        Opts {
            ipv6: true,
            ..nft_opts(2)
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
}
