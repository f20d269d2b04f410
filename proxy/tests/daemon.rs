//! The real `svcnet-proxy run` in a throwaway one-node cluster (see `lab/mod.rs`): real netfilter,
//! real traffic between network namespaces, the real control plane (kube-apiserver v1.34 on etcd, the
//! proxy under its manifests' ServiceAccount and RBAC).

mod lab;

use std::time::{Duration, Instant};

use lab::api::{cluster_ip, local, node_port};
use lab::helper::{answered_by, request};
use lab::{Lab, NODE_IP, Opts, wait_for};
use serde_json::json;

/// Not a test: the pod servers and clients of the lab run this binary with `SVCNET_HELPER` set.
#[test]
#[ignore = "helper process for the lab, started by the other tests"]
fn helper() {
    lab::helper::main();
}

const TCP: &[(&str, &str)] = &[("", "TCP")];

fn web_spec() -> serde_json::Value {
    json!({"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]})
}

#[test]
fn clusterip_nodeport_and_no_endpoints() {
    // One chain per restore call: every sync takes the batched path large clusters use.
    let opts = Opts {
        extra_args: vec!["--iptables-restore-max-chains".into(), "1".into()],
        ..Opts::default()
    };
    let Some(lab) = Lab::start("basic", opts) else {
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
    // Services another proxy owns are not even watched (upstream's label selector).
    let foreign = api.create(&json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "foreign", "labels": {"service.kubernetes.io/service-proxy-name": "other"}},
                "spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
    );
    api.slice("foreign", TCP, &[local("10.244.1.10")]);
    // Written last: once it is in the kernel, the proxy has seen every write above.
    let empty = api.service("empty", web_spec());
    wait_for("the last service programmed", Duration::from_secs(20), || {
        lab.save().contains("default/empty").then_some(())
    });
    let web_addr = format!("{}:80", cluster_ip(&web));

    // ClusterIP from a pod: both endpoints answer (random load balancing).
    let pod1 = &lab.pod("pod1").ns;
    let seen = wait_for("both web endpoints from pod1", Duration::from_secs(20), || {
        let s = answered_by(&request(pod1, "tcp", &web_addr, 12, None));
        (s.len() == 2).then_some(s)
    });
    assert_eq!(seen, ["pod1", "pod2"].map(String::from).into());

    // ClusterIP from the node itself (nat OUTPUT).
    let from_node = request(&lab.node, "tcp", &web_addr, 4, None);
    assert!(from_node.iter().all(|r| !r.starts_with("ERR")), "{from_node:?}");
    assert!(!answered_by(&from_node).is_empty(), "{from_node:?}");

    // NodePort from the client: answered, and masqueraded (the pod sees the node's bridge address).
    let np_addr = format!("{NODE_IP}:{}", node_port(&np));
    let r = request(&lab.client, "tcp", &np_addr, 3, None);
    assert!(r.iter().all(|r| r == "pod1 10.244.1.1"), "{r:?}");
    // Localhost NodePorts (route_localnet is set by the proxy).
    let r = request(
        &lab.node,
        "tcp",
        &format!("127.0.0.1:{}", node_port(&np)),
        1,
        None,
    );
    assert!(r[0].starts_with("pod1"), "{r:?}");

    // A service without endpoints rejects: connection refused, not a timeout.
    let r = request(pod1, "tcp", &format!("{}:80", cluster_ip(&empty)), 1, None);
    assert!(r[0].starts_with("ERR refused"), "{r:?}");
    let r = request(&lab.node, "tcp", &format!("{}:80", cluster_ip(&empty)), 1, None);
    assert!(r[0].starts_with("ERR refused"), "{r:?}");

    let saved = lab.save();
    assert!(saved.contains("default/empty"), "{saved}");
    assert!(
        !saved.contains("default/foreign") && !saved.contains(&cluster_ip(&foreign)),
        "{saved}"
    );

    // /healthz says healthy with an eligible node.
    let (code, hz) = http_get(&lab.node, "http://127.0.0.1:10256/healthz");
    assert_eq!(code, 200, "{hz}");
    assert!(hz.contains("\"nodeEligible\":true"), "{hz}");
    let log = lab.log("proxy.log");
    assert!(
        log.contains("several iptables-restore calls"),
        "batched path not taken:\n{log}"
    );
}

/// Payloads written after the first `skip` files that are not empty (a partial sync with nothing
/// to write leaves an empty file).
fn new_payloads(lab: &Lab, skip: usize) -> Vec<(String, String)> {
    lab.payloads()
        .into_iter()
        .skip(skip)
        .filter(|(_, p)| !p.is_empty())
        .collect()
}

#[test]
fn changes_reach_the_kernel_within_min_sync_period_and_partial_syncs_write_only_changed_chains() {
    use svcnet_proxy::iptables::render::naming::{sep_chain, svc_chain};
    let Some(lab) = Lab::start(
        "changes",
        Opts {
            pods: 3,
            ..Opts::default()
        },
    ) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10")]);
    api.service("other", web_spec());
    api.slice("other", TCP, &[local("10.244.1.12")]);
    let web_addr = format!("{}:80", cluster_ip(&web));
    let pod3 = &lab.pod("pod3").ns;
    wait_for("web answered by pod1", Duration::from_secs(20), || {
        (answered_by(&request(pod3, "tcp", &web_addr, 1, None)) == ["pod1".to_string()].into()).then_some(())
    });
    let web_svc = svc_chain("default/web", "tcp");
    let other_svc = svc_chain("default/other", "tcp");
    let sep1 = sep_chain("default/web", "tcp", "10.244.1.10:8080");
    let sep2 = sep_chain("default/web", "tcp", "10.244.1.11:8080");
    // Margin over the 1 s min-sync-period: watch delivery, process start-up and a loaded CI machine.
    let budget = Duration::from_millis(1000 + 2500);
    // Let the runner go idle so the change is not held back by a sync that just happened.
    std::thread::sleep(Duration::from_millis(1200));

    // Scale up.
    let skip = lab.payloads().len();
    let t0 = std::time::Instant::now();
    api.update_slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    wait_for("new endpoint in the kernel", Duration::from_secs(10), || {
        lab.save().contains(&format!(":{sep2} ")).then_some(())
    });
    let up = t0.elapsed();
    assert!(up < budget, "scale-up took {up:?}");
    let seen = wait_for("both endpoints answer", Duration::from_secs(10), || {
        let s = answered_by(&request(pod3, "tcp", &web_addr, 10, None));
        (s.len() == 2).then_some(s)
    });
    assert_eq!(seen, ["pod1", "pod2"].map(String::from).into());
    let written = new_payloads(&lab, skip);
    let (name, p) = written.first().expect("a payload for the scale-up");
    assert!(name.ends_with("-partial.rules"), "{name}");
    assert!(
        p.contains(&format!(":{web_svc} ")) && p.contains(&format!(":{sep2} ")),
        "{p}"
    );
    assert!(
        !p.contains(&format!(":{sep1} ")),
        "unchanged endpoint chain rewritten:\n{p}"
    );
    assert!(!p.contains(&other_svc), "other service's chain rewritten:\n{p}");
    assert!(!p.contains("*filter"), "filter did not change:\n{p}");
    assert!(!p.contains(":KUBE-SERVICES "), "dispatch did not change:\n{p}");

    // Scale down.
    std::thread::sleep(Duration::from_millis(1200));
    let skip = lab.payloads().len();
    let t0 = std::time::Instant::now();
    api.update_slice("web", TCP, &[local("10.244.1.11")]);
    wait_for(
        "removed endpoint gone from the kernel",
        Duration::from_secs(10),
        || (!lab.save().contains(&format!(":{sep1} "))).then_some(()),
    );
    let down = t0.elapsed();
    assert!(down < budget, "scale-down took {down:?}");
    let r = request(pod3, "tcp", &web_addr, 6, None);
    assert_eq!(answered_by(&r), ["pod2".to_string()].into(), "{r:?}");
    let written = new_payloads(&lab, skip);
    let (_, p) = written.first().expect("a payload for the scale-down");
    assert!(p.contains(&format!("-X {sep1}")), "{p}");
    assert!(!p.contains(&other_svc), "{p}");

    // Service deletion.
    std::thread::sleep(Duration::from_millis(1200));
    let t0 = std::time::Instant::now();
    api.delete_service("web");
    wait_for(
        "service chain gone from the kernel",
        Duration::from_secs(10),
        || (!lab.save().contains(&format!(":{web_svc} "))).then_some(()),
    );
    let gone = t0.elapsed();
    assert!(gone < budget, "service deletion took {gone:?}");
    let saved = lab.save();
    assert!(
        saved.contains(&format!(":{other_svc} ")),
        "other service lost:\n{saved}"
    );
    assert!(
        !saved.contains(&format!(":{sep2} ")),
        "endpoint chain of the deleted service left:\n{saved}"
    );
    eprintln!("kernel programmed: scale-up {up:?}, scale-down {down:?}, delete {gone:?}");

    // A burst of changes is batched: one sync at once, the rest together min-sync-period later.
    std::thread::sleep(Duration::from_millis(1200));
    let before = lab.syncs();
    let writing = Instant::now();
    for i in 0..6 {
        let eps = if i % 2 == 0 {
            vec![local("10.244.1.12"), local("10.244.1.10")]
        } else {
            vec![local("10.244.1.12")]
        };
        api.update_slice("other", TCP, &eps);
    }
    let spread = writing.elapsed();
    std::thread::sleep(Duration::from_millis(2500));
    let burst = lab.syncs() - before;
    // At most one sync at once, one per min-sync-period (1 s) while the writes kept coming (they take
    // longer on a loaded machine), the last batch, and the 10 s periodic resync if it falls in the
    // window; never one per change.
    let most = (3 + spread.as_secs() as usize).min(5);
    assert!(
        (1..=most).contains(&burst),
        "{burst} syncs for a burst of 6 changes written in {spread:?} (at most {most})"
    );

    // Network programming latency was measured from the slices' trigger-time annotations.
    let n = lab.metric("kubeproxy_network_programming_duration_seconds_count{ip_family=\"IPv4\"}");
    assert!(n >= 2.0, "network programming samples: {n}");
}

const FOREIGN: &[&str] = &[
    "iptables -t nat -N DOCKER",
    "iptables -t nat -A DOCKER -i docker0 -j RETURN",
    "iptables -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER",
    "iptables -t nat -A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE",
    "iptables -t filter -N DOCKER",
    "iptables -t filter -A DOCKER -d 172.17.0.2/32 ! -i docker0 -o docker0 -p tcp -m tcp --dport 80 -j ACCEPT",
    "iptables -t filter -A FORWARD -o docker0 -j DOCKER",
    "iptables -t filter -A INPUT -p tcp --dport 22 -j ACCEPT",
];

/// Rule lines and non-built-in chain names: what "the same ruleset" means here.
fn ruleset_lines(save: &str) -> std::collections::BTreeSet<String> {
    save.lines()
        .filter(|l| l.starts_with("-A ") || (l.starts_with(':') && l.contains(" - ")) || l.starts_with('*'))
        .map(str::to_string)
        .collect()
}

#[test]
fn foreign_chains_survive_syncs_and_cleanup() {
    // Chains of a Service deleted while no proxy ran: the first (full) sync must delete them.
    let stale = [
        "iptables -t nat -N KUBE-SEP-STALESTALESTALE1",
        "iptables -t nat -A KUBE-SEP-STALESTALESTALE1 -p tcp -j DNAT --to-destination 10.244.9.9:80",
        "iptables -t nat -N KUBE-SVC-STALESTALESTALE1",
        "iptables -t nat -A KUBE-SVC-STALESTALESTALE1 -j KUBE-SEP-STALESTALESTALE1",
    ];
    let before_proxy: Vec<Vec<String>> = FOREIGN
        .iter()
        .chain(&stale)
        .map(|c| c.split_whitespace().map(String::from).collect())
        .collect();
    let Some(mut lab) = Lab::start(
        "foreign",
        Opts {
            before_proxy,
            ..Opts::default()
        },
    ) else {
        return;
    };
    // The same foreign rules in a fresh namespace: the reference.
    let reference_ns = lab::Netns::new("foreign-ref").expect("netns");
    for c in FOREIGN {
        let words: Vec<&str> = c.split_whitespace().collect();
        reference_ns.ok(&words);
    }
    let reference = ruleset_lines(&reference_ns.ok(&["iptables-save"]));
    let foreign_rules: Vec<String> = reference
        .iter()
        .filter(|l| l.starts_with("-A"))
        .cloned()
        .collect();

    let api = lab.api();
    let web = api.service(
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("web", TCP, &[local("10.244.1.10")]);
    let pod2 = &lab.pod("pod2").ns;
    let web_addr = format!("{}:80", cluster_ip(&web));
    wait_for("web answers", Duration::from_secs(20), || {
        (!answered_by(&request(pod2, "tcp", &web_addr, 1, None)).is_empty()).then_some(())
    });
    api.update_slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    std::thread::sleep(Duration::from_secs(2));
    let during = lab.save();
    for rule in &foreign_rules {
        assert!(
            during.contains(rule.as_str()),
            "foreign rule lost during syncs: {rule}\n{during}"
        );
    }
    assert!(during.contains("-j KUBE-SERVICES"));
    assert!(
        !during.contains("STALESTALESTALE1"),
        "stale service chains survived the full sync:\n{during}"
    );

    lab.stop_proxy();
    let (ok, out, err) = lab
        .node
        .run(&[lab::proxy_binary().to_str().expect("utf-8"), "cleanup"]);
    assert!(ok, "cleanup failed: {err}{out}");
    assert!(out.contains("IPv4: removed"), "{out}");
    let after = lab.save();
    assert!(
        !after.contains("KUBE-"),
        "svcnet leftovers after cleanup:\n{after}"
    );
    // Exactly the foreign ruleset is left (empty tables svcnet created may remain).
    let left: std::collections::BTreeSet<String> = ruleset_lines(&after)
        .into_iter()
        .filter(|l| !l.starts_with('*'))
        .collect();
    let want: std::collections::BTreeSet<String> =
        reference.into_iter().filter(|l| !l.starts_with('*')).collect();
    assert_eq!(left, want, "cleanup changed foreign rules");
    // A second cleanup finds nothing to do.
    let (ok, out, _) = lab
        .node
        .run(&[lab::proxy_binary().to_str().expect("utf-8"), "cleanup"]);
    assert!(ok && out.contains("removed 0 jump rules and 0 chains"), "{out}");
}

/// Wrappers for every iptables-restore name svcnet may call: when `flag` exists they delete it and
/// fail (once), else they run the real tool.
fn failing_restore_wrappers(dir: &std::path::Path, flag: &std::path::Path) {
    wrappers(dir, flag, true);
}

/// Like [`failing_restore_wrappers`]; with `once == false` every call fails while `flag` exists.
fn wrappers(dir: &std::path::Path, flag: &std::path::Path, once: bool) {
    use std::os::unix::fs::PermissionsExt;
    for name in [
        "iptables-restore",
        "iptables-nft-restore",
        "iptables-legacy-restore",
    ] {
        let real = std::env::var_os("PATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(name))
                    .find(|p| p.exists())
            })
            .unwrap_or_default();
        let Some(real) = real else { continue };
        let script = format!(
            "#!/bin/sh\nif [ -e '{flag}' ]; then {rm}echo 'iptables-restore: injected failure' >&2; exit 1; fi\nexec '{real}' \"$@\"\n",
            flag = flag.display(),
            real = real.display(),
            rm = if once {
                format!("rm -f '{}'; ", flag.display())
            } else {
                String::new()
            }
        );
        let path = dir.join(name);
        std::fs::write(&path, script).expect("write wrapper");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

#[test]
fn failed_restore_keeps_old_rules_counts_and_recovers_with_a_full_sync() {
    let wrappers = tempfile::tempdir().expect("tempdir");
    let flag = wrappers.path().join("fail-next");
    failing_restore_wrappers(wrappers.path(), &flag);
    let opts = Opts {
        pods: 3,
        path_prefix: Some(wrappers.path().to_path_buf()),
        ..Opts::default()
    };
    let Some(lab) = Lab::start("fail", opts) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10")]);
    let web_addr = format!("{}:80", cluster_ip(&web));
    let pod3 = &lab.pod("pod3").ns;
    wait_for("web answers", Duration::from_secs(20), || {
        (!answered_by(&request(pod3, "tcp", &web_addr, 1, None)).is_empty()).then_some(())
    });
    let failures = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family=\"IPv4\"}";
    let partial_failures =
        "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total{ip_family=\"IPv4\"}";
    assert_eq!(lab.metric(failures), 0.0);
    std::thread::sleep(Duration::from_millis(1200));

    std::fs::write(&flag, "").expect("arm failure");
    api.update_slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    wait_for("the failed sync", Duration::from_secs(10), || {
        lab.log("proxy.log").contains("sync failed").then_some(())
    });
    // Right after the failure (the retry comes 1 s later) the previous rules are intact and serve.
    let saved = lab.save();
    assert!(saved.contains("--to-destination 10.244.1.10:8080"), "{saved}");
    assert!(!saved.contains("--to-destination 10.244.1.11:8080"), "{saved}");
    let r = request(pod3, "tcp", &web_addr, 3, None);
    assert!(r.iter().all(|r| !r.starts_with("ERR")), "{r:?}");
    assert!(!flag.exists(), "the wrapper was not called");
    assert_eq!(lab.metric(failures), 1.0);
    assert_eq!(lab.metric(partial_failures), 1.0);

    // The next sync is full, succeeds, and brings the change in.
    let full = wait_for("a full sync after the failure", Duration::from_secs(10), || {
        let m = lab.metric("svcnet_proxy_full_syncs_total{ip_family=\"IPv4\",reason=\"failure\"}");
        (m >= 1.0).then_some(m)
    });
    assert_eq!(full, 1.0);
    let last_full = lab
        .payloads()
        .into_iter()
        .rev()
        .find(|(n, _)| n.ends_with("-full.rules"))
        .expect("full payload");
    assert!(
        last_full.1.contains("*mangle\n:KUBE-PROXY-CANARY"),
        "{}",
        last_full.0
    );
    let seen = wait_for("both endpoints after recovery", Duration::from_secs(10), || {
        let s = answered_by(&request(pod3, "tcp", &web_addr, 10, None));
        (s.len() == 2).then_some(s)
    });
    assert_eq!(seen.len(), 2);
    assert_eq!(lab.metric(failures), 1.0, "no further failures");
}

/// GET from inside `ns`: (status, body); status 0 when nothing listens.
fn http_get(ns: &lab::Netns, url: &str) -> (u16, String) {
    lab::helper::http(ns, "GET", url, "application/json", "")
}

#[test]
fn external_paths_local_policy_health_affinity_and_source_ranges() {
    use lab::{CLIENT_IP, CLIENT_IP2, NODE};
    let Some(lab) = Lab::start(
        "external",
        Opts {
            pods: 3,
            ..Opts::default()
        },
    ) else {
        return;
    };
    let api = lab.api();
    let remote = ("10.244.1.11", true, "node-b");

    // LoadBalancer, externalTrafficPolicy Local: pod1 is on this node, pod2 "on another node".
    let lb = api.service(
        "lb",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("lb", TCP, &[local("10.244.1.10"), remote]);
    api.set_lb_ingress("lb", "203.0.113.10");
    let hc_port = lb["spec"]["healthCheckNodePort"]
        .as_u64()
        .expect("healthCheckNodePort");

    // sessionAffinity ClientIP.
    let sticky = api.service(
        "sticky",
        json!({"sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("sticky", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);

    // loadBalancerSourceRanges (UDP so the client can pick its source address).
    api.service(
        "ranged",
        json!({"type": "LoadBalancer", "loadBalancerSourceRanges": [format!("{CLIENT_IP}/32")],
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "UDP"}]}),
    );
    api.slice("ranged", &[("", "UDP")], &[local("10.244.1.10")]);
    api.set_lb_ingress("ranged", "203.0.113.11");

    // externalIPs.
    api.service(
        "ext",
        json!({"externalIPs": ["198.51.100.7"], "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("ext", TCP, &[local("10.244.1.12")]);
    // The last Service and the last slice written are in the kernel: so is everything before them.
    wait_for("every write programmed", Duration::from_secs(20), || {
        let saved = lab.save();
        (saved.contains("198.51.100.7") && saved.contains("--to-destination 10.244.1.12:8080")).then_some(())
    });

    // LB VIP from the client: only the local endpoint answers, and it sees the client's address.
    let r = wait_for("LB VIP answers", Duration::from_secs(20), || {
        let r = request(&lab.client, "tcp", "203.0.113.10:80", 8, None);
        r.iter().all(|r| !r.starts_with("ERR")).then_some(r)
    });
    assert!(r.iter().all(|r| r == &format!("pod1 {CLIENT_IP}")), "{r:?}");
    // From a pod the cluster IP still reaches both endpoints (the policy is about external traffic).
    let lb_addr = format!("{}:80", cluster_ip(&lb));
    let both = wait_for(
        "both lb endpoints via cluster IP",
        Duration::from_secs(10),
        || {
            let s = answered_by(&request(&lab.pod("pod3").ns, "tcp", &lb_addr, 10, None));
            (s.len() == 2).then_some(s)
        },
    );
    assert_eq!(both.len(), 2);

    // healthCheckNodePort: 200 with one local endpoint.
    let hc_url = format!("http://{NODE_IP}:{hc_port}/");
    let (code, body) = wait_for("health check server", Duration::from_secs(10), || {
        let r = http_get(&lab.client, &hc_url);
        (r.0 != 0).then_some(r)
    });
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["service"], json!({"namespace": "default", "name": "lb"}));
    assert_eq!(v["localEndpoints"], json!(1));
    assert_eq!(v["serviceProxyHealthy"], json!(true));

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

    // Source ranges: the allowed source gets through, the other is dropped.
    let ok = request(&lab.client, "udp", "203.0.113.11:80", 2, Some(CLIENT_IP));
    assert!(ok.iter().all(|r| r.starts_with("pod1")), "{ok:?}");
    let denied = request(&lab.client, "udp", "203.0.113.11:80", 1, Some(CLIENT_IP2));
    assert!(denied[0].starts_with("ERR timeout"), "{denied:?}");

    // externalIP from the client.
    let r = request(&lab.client, "tcp", "198.51.100.7:80", 2, None);
    assert!(r.iter().all(|r| r.starts_with("pod3")), "{r:?}");

    // The local endpoint becomes unready: 503 with zero local endpoints, and the VIP stops answering
    // here (no local endpoint: dropped, the load balancer's health check steers traffic away).
    api.update_slice("lb", TCP, &[("10.244.1.10", false, NODE), remote]);
    let (code, body) = wait_for("health check says 503", Duration::from_secs(10), || {
        let r = http_get(&lab.client, &hc_url);
        (r.0 == 503).then_some(r)
    });
    assert_eq!(code, 503);
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["localEndpoints"], json!(0));
    let r = request(&lab.client, "tcp", "203.0.113.10:80", 1, None);
    assert!(r[0].starts_with("ERR"), "{r:?}");

    // Deleting the service stops its health check server.
    api.delete_service("lb");
    wait_for("health check server stopped", Duration::from_secs(10), || {
        (http_get(&lab.client, &hc_url).0 == 0).then_some(())
    });
}

#[test]
fn udp_endpoint_replaced_and_stale_conntrack_entry_removed() {
    let Some(lab) = Lab::start(
        "udp",
        Opts {
            pods: 3,
            ..Opts::default()
        },
    ) else {
        return;
    };
    let api = lab.api();
    let dns = api.service(
        "dns",
        json!({"ports": [{"port": 53, "targetPort": 8080, "protocol": "UDP"}]}),
    );
    let udp = &[("", "UDP")];
    api.slice("dns", udp, &[local("10.244.1.10")]);
    let vip = format!("{}:53", cluster_ip(&dns));
    let client = &lab.pod("pod3").ns;
    // Always the same source port: every datagram belongs to one conntrack entry.
    let src = Some("10.244.1.12:40053");
    let r = wait_for("dns answers from pod1", Duration::from_secs(20), || {
        let r = request(client, "udp", &vip, 3, src);
        r.iter().all(|r| r.starts_with("pod1")).then_some(r)
    });
    assert_eq!(r.len(), 3);
    let entries = lab.node.ok(&["conntrack", "-L", "-p", "udp"]);
    assert!(entries.contains("sport=40053"), "{entries}");
    std::thread::sleep(Duration::from_millis(1200));

    // pod1 leaves the service but keeps running: only conntrack cleanup moves the flow to pod2.
    let deleted = "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=\"IPv4\"}";
    let before = lab.metric(deleted);
    let t0 = std::time::Instant::now();
    api.update_slice("dns", udp, &[local("10.244.1.11")]);
    wait_for(
        "the same UDP flow answered by pod2",
        Duration::from_secs(10),
        || {
            let r = request(client, "udp", &vip, 1, src);
            r[0].starts_with("pod2").then_some(())
        },
    );
    eprintln!("UDP flow moved after {:?}", t0.elapsed());
    assert!(lab.metric(deleted) > before, "{}", lab.metrics());
    // And it keeps working.
    let r = request(client, "udp", &vip, 3, src);
    assert!(r.iter().all(|r| r.starts_with("pod2")), "{r:?}");
}

#[test]
fn udp_flow_pinned_while_the_proxy_was_down_is_reconciled_at_start() {
    let Some(mut lab) = Lab::start(
        "udpdown",
        Opts {
            pods: 3,
            ..Opts::default()
        },
    ) else {
        return;
    };
    let dns = lab.api().service(
        "dns",
        json!({"ports": [{"port": 53, "targetPort": 8080, "protocol": "UDP"}]}),
    );
    let udp = &[("", "UDP")];
    lab.api().slice("dns", udp, &[local("10.244.1.10")]);
    let vip = format!("{}:53", cluster_ip(&dns));
    let src = Some("10.244.1.12:40054");
    wait_for("dns answers from pod1", Duration::from_secs(20), || {
        let r = request(&lab.pod("pod3").ns, "udp", &vip, 1, src);
        r[0].starts_with("pod1").then_some(())
    });

    // While the proxy is down pod1 leaves the service (it keeps running): no sync sees the change
    // happen, so only a reconciliation against the conntrack table can unpin the flow.
    lab.stop_proxy();
    lab.api().update_slice("dns", udp, &[local("10.244.1.11")]);
    let r = request(&lab.pod("pod3").ns, "udp", &vip, 1, src);
    assert!(
        r[0].starts_with("pod1"),
        "old rules and entry still in place: {r:?}"
    );
    let syncs = lab.syncs();
    lab.start_proxy();
    wait_for(
        "the restarted proxy's first sync",
        Duration::from_secs(30),
        || (lab.syncs() > syncs).then_some(()),
    );
    let r = request(&lab.pod("pod3").ns, "udp", &vip, 3, src);
    assert!(r.iter().all(|r| r.starts_with("pod2")), "{r:?}");
    let deleted = "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=\"IPv4\"}";
    assert!(lab.metric(deleted) >= 1.0, "{}", lab.metrics());
}

#[test]
fn apiserver_restart_keeps_rules_and_reflectors_resume() {
    let opts = Opts {
        sync_period: "2s",
        ..Opts::default()
    };
    let Some(mut lab) = Lab::start("restart", opts) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10")]);
    let web_addr = format!("{}:80", cluster_ip(&web));
    wait_for("web answers", Duration::from_secs(20), || {
        (answered_by(&request(&lab.pod("pod2").ns, "tcp", &web_addr, 1, None)) == ["pod1".to_string()].into())
            .then_some(())
    });
    let web_chain = svcnet_proxy::iptables::render::naming::svc_chain("default/web", "tcp");

    lab.stop_apiserver();
    let syncs = lab.syncs();
    // Several periodic syncs (every 2 s) run while the API is gone: nothing is flushed.
    let outage = std::time::Instant::now();
    while outage.elapsed() < Duration::from_secs(5) {
        let r = request(&lab.pod("pod2").ns, "tcp", &web_addr, 1, None);
        assert_eq!(
            r,
            vec!["pod1 10.244.1.11".to_string()],
            "traffic broke during the API outage"
        );
        assert!(
            lab.save().contains(&format!(":{web_chain} ")),
            "rules flushed during the outage"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(lab.syncs() > syncs, "no sync ran during the outage");
    assert!(
        lab.proxy.as_mut().is_some_and(lab::Proc::alive),
        "proxy died without its API server"
    );

    lab.start_apiserver();
    let api = lab.api();
    // The API server is back on the same etcd: the reflectors resume and keep the same objects...
    std::thread::sleep(Duration::from_secs(2));
    let r = request(&lab.pod("pod2").ns, "tcp", &web_addr, 2, None);
    assert!(r.iter().all(|r| r.starts_with("pod1")), "{r:?}");
    // ...and new changes flow again.
    let after = api.service("after", web_spec());
    api.slice("after", TCP, &[local("10.244.1.11")]);
    let after_addr = format!("{}:80", cluster_ip(&after));
    wait_for(
        "a service created after the restart answers",
        Duration::from_secs(30),
        || {
            let r = request(&lab.pod("pod1").ns, "tcp", &after_addr, 1, None);
            r[0].starts_with("pod2").then_some(())
        },
    );
}

/// Watch errors the proxy logged for `kind` whose resume point was gone: kube-apiserver's 410 Gone,
/// reason Expired ("too old resource version: <asked> (<oldest>)").
fn expired_watch_errors(log: &str, kind: &str) -> usize {
    // The quoted value only: the log may carry colour codes around `kind=`.
    let kind = format!("\"{kind}\"");
    log.lines()
        .filter(|l| l.contains("watch failed") && l.contains(&kind))
        .filter(|l| l.contains("too old resource version") && l.contains("Expired"))
        .count()
}

#[test]
fn no_update_is_lost_across_an_apiserver_restart_and_an_etcd_compaction() {
    let Some(mut lab) = Lab::start(
        "gone",
        Opts {
            pods: 3,
            ..Opts::default()
        },
    ) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10")]);
    api.service("doomed", web_spec());
    api.slice("doomed", TCP, &[local("10.244.1.10")]);
    let web_addr = format!("{}:80", cluster_ip(&web));
    wait_for("web answered by pod1", Duration::from_secs(20), || {
        (answered_by(&request(&lab.pod("pod3").ns, "tcp", &web_addr, 1, None)) == ["pod1".to_string()].into())
            .then_some(())
    });
    let doomed_chain = svcnet_proxy::iptables::render::naming::svc_chain("default/doomed", "tcp");
    // Its slice may come a sync after web's answer.
    wait_for("doomed's service chain", Duration::from_secs(20), || {
        lab.save().contains(&format!(":{doomed_chain} ")).then_some(())
    });
    // etcd moves past every resourceVersion the proxy holds: the restarted API server's watch cache
    // starts there, so resuming a watch from the proxy's last version is 410 Gone.
    api.bump_revision("bump");

    lab.stop_apiserver();
    std::thread::sleep(Duration::from_secs(1));
    lab.start_apiserver();
    // Changes while the proxy's watches are down or resuming: an update, a deletion, a creation.
    let api = lab.api();
    api.update_slice("web", TCP, &[local("10.244.1.11")]);
    api.delete_service("doomed");
    let fresh = api.service("fresh", web_spec());
    api.slice("fresh", TCP, &[local("10.244.1.10")]);
    // And their history is gone from etcd too: only a relist can bring them in.
    let compacted = lab.compact_etcd();
    let web_version: i64 = api
        .kubectl
        .ok(&[
            "get",
            "endpointslice",
            "web-1",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .expect("get web-1")
        .parse()
        .expect("resourceVersion");
    assert!(compacted >= web_version, "compacted {compacted} < {web_version}");

    let fresh_addr = format!("{}:80", cluster_ip(&fresh));
    wait_for("web answered by pod2 only", Duration::from_secs(60), || {
        (answered_by(&request(&lab.pod("pod3").ns, "tcp", &web_addr, 6, None)) == ["pod2".to_string()].into())
            .then_some(())
    });
    wait_for(
        "the deleted service's chain gone",
        Duration::from_secs(10),
        || (!lab.save().contains(&format!(":{doomed_chain} "))).then_some(()),
    );
    wait_for("the new service answers", Duration::from_secs(10), || {
        (answered_by(&request(&lab.pod("pod3").ns, "tcp", &fresh_addr, 1, None))
            == ["pod1".to_string()].into())
        .then_some(())
    });
    let log = lab.log("proxy.log");
    assert!(
        expired_watch_errors(&log, "EndpointSlice") >= 1 && expired_watch_errors(&log, "Service") >= 1,
        "the watches were not resumed from a gone version (no 410 seen):\n{log}"
    );
    assert!(lab.proxy.as_mut().is_some_and(lab::Proc::alive), "{log}");

    // Watching goes on from the relisted version, past the compaction.
    api.update_slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    wait_for(
        "both web endpoints after the compaction",
        Duration::from_secs(10),
        || (answered_by(&request(&lab.pod("pod3").ns, "tcp", &web_addr, 10, None)).len() == 2).then_some(()),
    );
}

#[test]
fn flushed_tables_are_repaired_by_a_canary_full_sync_and_metrics_use_upstream_names() {
    // Settings from a KubeProxyConfiguration file win over the flags (sync period 10 s on the command
    // line, 2 s in the file; masquerade-all only in the file).
    let cfg_dir = tempfile::tempdir().expect("tempdir");
    let cfg = cfg_dir.path().join("kube-proxy.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n\
         iptables:\n  masqueradeAll: true\n  syncPeriod: 2s\n  minSyncPeriod: 1s\nconntrack:\n  maxPerCore: 0\n",
    )
    .expect("write config");
    let opts = Opts {
        extra_args: vec!["--config".into(), cfg.display().to_string()],
        ..Opts::default()
    };
    let Some(lab) = Lab::start("canary", opts) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10")]);
    let web_addr = format!("{}:80", cluster_ip(&web));
    let pod2 = &lab.pod("pod2").ns;
    let r = wait_for("web answers", Duration::from_secs(20), || {
        let r = request(pod2, "tcp", &web_addr, 1, None);
        (!answered_by(&r).is_empty()).then_some(r)
    });
    // masqueradeAll: even pod-to-service traffic is SNATed to the node's bridge address.
    assert_eq!(r, vec!["pod1 10.244.1.1".to_string()]);

    // Someone wipes the nat table (a firewall reload): jumps, chains and the canary are gone.
    lab.node.ok(&["iptables", "-t", "nat", "-F"]);
    lab.node.ok(&["iptables", "-t", "nat", "-X"]);
    let nat = lab.node.ok(&["iptables-save", "-t", "nat"]);
    assert!(!nat.contains("KUBE-"), "{nat}");
    // Without a change to react to, the periodic canary check notices and resyncs everything.
    wait_for("a canary-triggered full sync", Duration::from_secs(6), || {
        (lab.metric("svcnet_proxy_full_syncs_total{ip_family=\"IPv4\",reason=\"canary\"}") >= 1.0)
            .then_some(())
    });
    let r = wait_for("web answers again", Duration::from_secs(5), || {
        let r = request(pod2, "tcp", &web_addr, 2, None);
        r.iter().all(|r| r.starts_with("pod1")).then_some(r)
    });
    assert_eq!(r.len(), 2);
    assert!(
        lab.save()
            .contains("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES")
    );

    let text = lab.metrics();
    for name in [
        "kubeproxy_sync_proxy_rules_duration_seconds_bucket{",
        "kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"}",
        "kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"}",
        "kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv4\",table=\"nat\"}",
        "kubeproxy_sync_proxy_rules_iptables_last{ip_family=\"IPv4\",table=\"filter\"}",
        "kubeproxy_sync_proxy_rules_endpoint_changes_total ",
        "kubeproxy_sync_proxy_rules_service_changes_total ",
        "kubeproxy_sync_proxy_rules_endpoint_changes_pending ",
        "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"}",
        "kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family=\"IPv4\",traffic_policy=\"internal\"}",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
    assert!(lab.metric("kubeproxy_sync_proxy_rules_service_changes_total") >= 1.0);
    assert!(lab.metric("kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv4\",table=\"nat\"}") >= 5.0);
    let (code, lz) = http_get(&lab.node, "http://127.0.0.1:10256/livez");
    assert!(code == 200 && lz.contains("\"healthy\":true"), "{code} {lz}");
}

#[test]
fn restores_failing_for_longer_than_twice_the_sync_period_make_the_proxy_unhealthy() {
    let wrappers_dir = tempfile::tempdir().expect("tempdir");
    let flag = wrappers_dir.path().join("fail-always");
    wrappers(wrappers_dir.path(), &flag, false);
    let opts = Opts {
        sync_period: "1s",
        path_prefix: Some(wrappers_dir.path().to_path_buf()),
        ..Opts::default()
    };
    let Some(lab) = Lab::start("unhealthy", opts) else {
        return;
    };
    let api = lab.api();
    let lb = api.service(
        "lb",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
               "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("lb", TCP, &[local("10.244.1.10")]);
    let hc_url = format!(
        "http://{NODE_IP}:{}/",
        lb["spec"]["healthCheckNodePort"].as_u64().expect("hc port")
    );
    let healthz = "http://127.0.0.1:10256/healthz";
    wait_for("service health 200", Duration::from_secs(10), || {
        (http_get(&lab.client, &hc_url).0 == 200).then_some(())
    });
    assert_eq!(http_get(&lab.node, healthz).0, 200);

    // Every restore fails from now on; a change stays queued.
    std::fs::write(&flag, "").expect("arm failures");
    api.update_slice("lb", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    let t0 = std::time::Instant::now();
    let (code, body) = wait_for("healthz 503", Duration::from_secs(15), || {
        let r = http_get(&lab.node, healthz);
        (r.0 == 503).then_some(r)
    });
    assert_eq!(code, 503);
    assert!(body.contains("\"healthy\":false"), "{body}");
    // Not before the 2 x sync-period timeout.
    assert!(
        t0.elapsed() >= Duration::from_millis(1500),
        "unhealthy too early: {:?}",
        t0.elapsed()
    );
    let (code, body) = http_get(&lab.client, &hc_url);
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("\"serviceProxyHealthy\":false"), "{body}");
    assert!(lab.metric("kubeproxy_proxy_healthz_total{code=\"503\"}") >= 1.0);

    // Restores work again: healthy.
    std::fs::remove_file(&flag).expect("disarm");
    wait_for("healthz 200 again", Duration::from_secs(15), || {
        (http_get(&lab.node, healthz).0 == 200).then_some(())
    });
}

#[test]
fn nothing_is_written_before_the_caches_sync_and_a_draining_node_fails_healthz() {
    let Some(mut lab) = Lab::start("nosync", Opts::default()) else {
        return;
    };
    let api = lab.api();
    api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10")]);
    let web_chain = svcnet_proxy::iptables::render::naming::svc_chain("default/web", "tcp");
    wait_for("web programmed", Duration::from_secs(10), || {
        lab.save().contains(&format!(":{web_chain} ")).then_some(())
    });

    // Start over without an API server: the proxy must not write anything (not even an empty ruleset
    // that would drop every service) until it has listed Services and EndpointSlices.
    lab.stop_proxy();
    let (ok, out, err) = lab
        .node
        .run(&[lab::proxy_binary().to_str().expect("utf-8"), "cleanup"]);
    assert!(ok, "{out}{err}");
    lab.stop_apiserver();
    lab.start_proxy();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        lab.proxy.as_mut().is_some_and(lab::Proc::alive),
        "{}",
        lab.log("proxy.log")
    );
    let saved = lab.save();
    assert!(
        !saved.contains("KUBE-"),
        "written before the caches synced:\n{saved}"
    );
    lab.start_apiserver();
    wait_for(
        "web programmed once the API is back",
        Duration::from_secs(30),
        || lab.save().contains(&format!(":{web_chain} ")).then_some(()),
    );

    // A node the autoscaler is draining fails /healthz (load balancers stop sending), /livez stays up.
    let healthz = "http://127.0.0.1:10256/healthz";
    wait_for("healthz 200", Duration::from_secs(10), || {
        (http_get(&lab.node, healthz).0 == 200).then_some(())
    });
    lab.api().merge_patch(
        "node",
        lab::NODE,
        &json!({"spec": {"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}}),
    );
    let (_, body) = wait_for("healthz 503 for a draining node", Duration::from_secs(10), || {
        let r = http_get(&lab.node, healthz);
        (r.0 == 503).then_some(r)
    });
    assert!(body.contains("\"nodeEligible\":false"), "{body}");
    assert_eq!(http_get(&lab.node, "http://127.0.0.1:10256/livez").0, 200);
}

#[test]
fn nodeport_addresses_limit_nodeports_to_matching_interface_addresses() {
    let opts = Opts {
        pods: 1,
        extra_args: vec!["--nodeport-addresses".into(), "172.30.0.0/24".into()],
        // A second address in the CIDR that the Node object does not list.
        before_proxy: vec![
            "ip addr add 172.30.0.3/24 dev eth0"
                .split(' ')
                .map(String::from)
                .collect(),
        ],
        ..Opts::default()
    };
    let Some(lab) = Lab::start("npa", opts) else {
        return;
    };
    let api = lab.api();
    let np = api.service(
        "np",
        json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("np", TCP, &[local("10.244.1.10")]);
    let port = node_port(&np);
    // eth0's addresses are in the CIDR; the bridge address is an interface address outside it.
    let r = wait_for("NodePort on eth0", Duration::from_secs(20), || {
        let r = request(&lab.client, "tcp", &format!("{NODE_IP}:{port}"), 1, None);
        r[0].starts_with("pod1").then_some(r)
    });
    assert_eq!(r.len(), 1);
    let saved = lab.save();
    assert!(
        saved.contains(&format!("-d {NODE_IP}/32")) && saved.contains("-j KUBE-NODEPORTS"),
        "{saved}"
    );
    assert!(!saved.contains("--dst-type LOCAL -j KUBE-NODEPORTS"), "{saved}");
    let r = request(&lab.client, "tcp", &format!("172.30.0.3:{port}"), 1, None);
    assert!(
        r[0].starts_with("pod1"),
        "NodePort on a matching interface address: {r:?}"
    );
    let r = request(
        &lab.pod("pod1").ns,
        "tcp",
        &format!("{}:{port}", lab::BRIDGE_IP),
        1,
        None,
    );
    assert!(
        r[0].starts_with("ERR"),
        "NodePort answered outside --nodeport-addresses: {r:?}"
    );
}

type Replies = std::collections::BTreeSet<String>;

/// The replies a set of pods gives when they all see `peer` as the source.
fn replies_from(pods: &[&str], peer: &str) -> Replies {
    pods.iter().map(|p| format!("{p} {peer}")).collect()
}

/// Sends `count` TCP connections from `ns` to `addr` until the distinct replies are exactly `want`;
/// fails with the last replies seen after `timeout`.
fn until_replies(ns: &lab::Netns, addr: &str, count: usize, want: &Replies, timeout: Duration) {
    let start = std::time::Instant::now();
    loop {
        let got: Replies = request(ns, "tcp", addr, count, None).into_iter().collect();
        if got == *want {
            return;
        }
        assert!(
            start.elapsed() < timeout,
            "{addr}: wanted {want:?}, last got {got:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `[addr]:port` (IPv6) or `addr:port`.
fn sock(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

#[test]
fn dual_stack_service_carries_ipv6_traffic_through_ip6tables() {
    use lab::api::cluster_ip_at;
    use lab::{BRIDGE_IP, BRIDGE_IP6, CLIENT_IP6, NODE_IP6};
    use svcnet_proxy::iptables::render::naming::{dst_chain, sep_chain, svc_chain};
    let Some(lab) = Lab::start(
        "v6",
        Opts {
            ipv6: true,
            ..Opts::default()
        },
    ) else {
        return;
    };
    let api = lab.api();
    let ports = &[("http", "TCP"), ("dns", "UDP")];
    // Upstream allocation: one address per family, IPv4 first (the first range), both from the
    // ranges' upper (dynamic) band, at random (the lowest min(max(16, size/16), 256) addresses are kept
    // for explicit requests).
    let alloc = api.service(
        "alloc",
        json!({"ipFamilyPolicy": "RequireDualStack", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    assert_eq!(alloc["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]), "{alloc}");
    let v4: std::net::Ipv4Addr = cluster_ip_at(&alloc, 0).parse().expect("IPv4 ClusterIP");
    let in_band4 = u32::from(v4) >> 16 == u32::from(std::net::Ipv4Addr::new(10, 96, 0, 0)) >> 16
        && u32::from(v4) & 0xffff >= 256;
    assert!(in_band4, "{alloc}");
    let v6: std::net::Ipv6Addr = cluster_ip_at(&alloc, 1).parse().expect("IPv6 ClusterIP");
    let base6: std::net::Ipv6Addr = "fd00:10:96::".parse().expect("ip");
    let in_band6 = u128::from(v6) >> 20 == u128::from(base6) >> 20 && u128::from(v6) & 0xfffff >= 256;
    assert!(in_band6, "{alloc}");
    api.delete_service("alloc");

    // The Service under test and more IPv6 destinations than one dispatch leaf holds, so that
    // KUBE-SERVICES becomes a tree of IPv6 prefixes: adjacent ClusterIPs asked for explicitly
    // (fd00:10:96::101 up; IPv4 in the static band), so the prefixes the tree splits on are known.
    let svc = api.service(
        "dual",
        json!({"type": "NodePort", "ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"],
               "clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99", "fd00:10:96::101"], "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
            {"name": "dns", "port": 53, "targetPort": 8080, "protocol": "UDP"}]}),
    );
    let (vip4, vip6) = (cluster_ip_at(&svc, 0), cluster_ip_at(&svc, 1));
    assert_eq!(
        (vip4.as_str(), vip6.as_str()),
        ("10.96.0.99", "fd00:10:96::101"),
        "{svc}"
    );
    let (p1, p2) = (lab.pod("pod1"), lab.pod("pod2"));
    let (p1v6, p2v6) = (p1.ip6.clone().expect("v6"), p2.ip6.clone().expect("v6"));
    let fillers: Vec<String> = (0..10)
        .map(|i| {
            let name = format!("fill{i}");
            let ip6 = format!("fd00:10:96::{:x}", 0x102 + i);
            let f = api.service(
                &name,
                json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"],
                       "clusterIP": format!("10.96.0.{}", 100 + i),
                       "clusterIPs": [format!("10.96.0.{}", 100 + i), ip6],
                       "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
            );
            api.slice_v6(&name, TCP, &[local(&p1v6)]);
            assert_eq!(cluster_ip_at(&f, 1), ip6, "{f}");
            ip6
        })
        .collect();
    api.slice("dual", ports, &[local(&p1.ip), local(&p2.ip)]);
    api.slice_v6("dual", ports, &[local(&p1v6), local(&p2v6)]);

    // The IPv6 ClusterIP from the node and from the client reaches both pods; the pods see the
    // masquerade address on the bridge (neither source is in the cluster CIDR).
    let both6 = replies_from(&["pod1", "pod2"], BRIDGE_IP6);
    let http6 = sock(&vip6, 80);
    for ns in [&lab.node, &lab.client] {
        until_replies(ns, &http6, 12, &both6, Duration::from_secs(20));
    }
    let last_filler = sock(fillers.last().expect("fillers"), 80);
    until_replies(
        &lab.client,
        &last_filler,
        2,
        &replies_from(&["pod1"], BRIDGE_IP6),
        Duration::from_secs(10),
    );

    // ip6tables holds the IPv6 service: SEP names hash the bracketed endpoint, DNAT to [addr]:port.
    let http_svc = svc_chain("default/dual:http", "tcp");
    let sep = |ep: &str| sep_chain("default/dual:http", "tcp", &format!("[{ep}]:8080"));
    let (sep1, sep2) = (sep(&p1v6), sep(&p2v6));
    let save6 = lab.save6();
    for want in [
        format!(":{http_svc} "),
        format!(":{sep1} "),
        format!(":{sep2} "),
        format!("-d {vip6}/128 -p tcp -m comment --comment \"default/dual:http cluster IP\""),
        format!(
            "-A {sep1} -p tcp -m comment --comment \"default/dual:http\" -m tcp -j DNAT --to-destination [{p1v6}]:8080"
        ),
        format!("-A {sep2} -s {p2v6}/128 -m comment --comment \"default/dual:http\" -j KUBE-MARK-MASQ"),
        // fill3..fill6 hold ::104-::107: one /126 dispatch chain.
        format!(
            "-A KUBE-SERVICES -d fd00:10:96::104/126 -j {}",
            dst_chain("fd00:10:96::104/126")
        ),
    ] {
        assert!(save6.contains(&want), "ip6tables-save lacks {want:?}:\n{save6}");
    }
    assert!(
        !save6.contains(&vip4) && !save6.contains(&p1.ip),
        "IPv4 in ip6tables:\n{save6}"
    );
    let save4 = lab.save();
    assert!(
        save4.contains(&format!(":{http_svc} ")) && !save4.contains(&sep1) && !save4.contains(&vip6),
        "iptables-save:\n{save4}"
    );

    // The IPv4 ClusterIP of the same Service still works.
    let both4 = replies_from(&["pod1", "pod2"], BRIDGE_IP);
    let http4 = sock(&vip4, 80);
    until_replies(&lab.client, &http4, 12, &both4, Duration::from_secs(20));

    // A UDP flow with a fixed source port to the IPv6 ClusterIP: one conntrack entry, one pod.
    let dns6 = sock(&vip6, 53);
    let src = format!("[{CLIENT_IP6}]:40053");
    let first = request(&lab.client, "udp", &dns6, 3, Some(&src));
    let served = answered_by(&first);
    assert_eq!(served.len(), 1, "{first:?}");
    let (gone, kept, kept_ip6) = if served.contains("pod1") {
        ("pod1", "pod2", p2v6.clone())
    } else {
        ("pod2", "pod1", p1v6.clone())
    };
    let entries = lab.node.ok(&["conntrack", "-L", "-f", "ipv6", "-p", "udp"]);
    assert!(entries.contains("sport=40053"), "{entries}");

    // Scale the IPv6 slice down to the pod that does not serve that flow: only ip6tables changes
    // (one partial IPv6 payload), the flow moves (stale conntrack entry deleted), TCP reaches only
    // the kept pod, and IPv4 still reaches both.
    std::thread::sleep(Duration::from_millis(1200));
    let deleted = "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=\"IPv6\"}";
    let deleted_before = lab.metric(deleted);
    let skip = lab.payloads().len();
    let save4_before = ruleset_lines(&lab.save());
    api.update_slice_v6("dual", ports, &[local(&kept_ip6)]);
    let removed = if gone == "pod1" { &sep1 } else { &sep2 };
    wait_for("removed IPv6 endpoint gone", Duration::from_secs(10), || {
        (!lab.save6().contains(&format!(":{removed} "))).then_some(())
    });
    let written = new_payloads(&lab, skip);
    assert!(!written.is_empty(), "no payload for the scale-down");
    for (name, p) in &written {
        assert!(name.ends_with("-ipv6-partial.rules"), "{name}:\n{p}");
        assert!(p.contains(&format!("-X {removed}")), "{name}:\n{p}");
        assert!(
            !p.contains("*filter") && !p.contains(":KUBE-SERVICES "),
            "{name}:\n{p}"
        );
    }
    assert_eq!(ruleset_lines(&lab.save()), save4_before, "iptables changed");
    wait_for(
        "the UDP flow moved to the kept pod",
        Duration::from_secs(10),
        || {
            let r = request(&lab.client, "udp", &dns6, 1, Some(&src));
            r[0].starts_with(kept).then_some(())
        },
    );
    assert!(lab.metric(deleted) > deleted_before, "{}", lab.metrics());
    let r: Replies = request(&lab.client, "tcp", &http6, 10, None)
        .into_iter()
        .collect();
    assert_eq!(
        r,
        replies_from(&[kept], BRIDGE_IP6),
        "{gone} still reached over IPv6"
    );
    until_replies(&lab.client, &http4, 12, &both4, Duration::from_secs(10));

    // NodePort on the node's IPv6 address, masqueraded to the bridge's IPv6 address.
    let np6 = sock(NODE_IP6, node_port(&svc));
    let r: Replies = request(&lab.client, "tcp", &np6, 4, None).into_iter().collect();
    assert_eq!(r, replies_from(&[kept], BRIDGE_IP6), "IPv6 NodePort");

    // /healthz and the per-family metrics cover IPv6 too.
    let (code, hz) = http_get(&lab.node, "http://127.0.0.1:10256/healthz");
    assert_eq!(code, 200, "{hz}");
    assert!(hz.contains("\"IPv6\":{") && hz.contains("\"IPv4\":{"), "{hz}");
    for family in ["IPv4", "IPv6"] {
        for sample in [
            format!("kubeproxy_sync_proxy_rules_last_timestamp_seconds{{ip_family=\"{family}\"}}"),
            format!("kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{{ip_family=\"{family}\"}}"),
            format!("kubeproxy_network_programming_duration_seconds_count{{ip_family=\"{family}\"}}"),
            format!("kubeproxy_sync_proxy_rules_iptables_total{{ip_family=\"{family}\",table=\"nat\"}}"),
            format!("svcnet_proxy_full_syncs_total{{ip_family=\"{family}\",reason=\"start\"}}"),
        ] {
            assert!(lab.metric(&sample) > 0.0, "{sample} missing:\n{}", lab.metrics());
        }
    }
}

/// Sends `count` TCP segments with SYN and FIN both set from `ns` to `dst:port`: conntrack calls such a
/// flag combination INVALID, so a forwarding node drops them in KUBE-FORWARD.
fn send_invalid_tcp(ns: &lab::Netns, dst: &str, port: u16, count: usize) {
    let script = format!(
        r#"
import socket, struct
dst, port, n = "{dst}", {port}, {count}
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
s.connect((dst, 0))
src = s.getsockname()[0]
def csum(b):
    if len(b) % 2: b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return ~t & 0xffff
for i in range(n):
    hdr = struct.pack("!HHIIBBHHH", 40000 + i, port, 1000, 0, 5 << 4, 0x03, 64240, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(hdr))
    c = csum(pseudo + hdr)
    s.send(hdr[:16] + struct.pack("!H", c) + hdr[18:])
"#
    );
    let (ok, _, err) = ns.run(&["python3", "-c", &script]);
    assert!(ok, "sending INVALID segments: {err}");
}

#[test]
fn bad_port_is_refused_admitted_objects_raise_no_field_error_nfacct_counts_invalid_drops_and_conntrack_sysctls_follow_the_config()
 {
    let cfg_dir = tempfile::tempdir().expect("tempdir");
    let cfg = cfg_dir.path().join("kube-proxy.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n\
         conntrack:\n  maxPerCore: 0\n  tcpEstablishedTimeout: 2h\n  tcpCloseWaitTimeout: 30m\n  \
         udpTimeout: 45s\n  udpStreamTimeout: 150s\n",
    )
    .expect("write config");
    let opts = Opts {
        extra_args: vec!["--config".into(), cfg.display().to_string()],
        ..Opts::default()
    };
    let Some(lab) = Lab::start("nfacct", opts) else {
        return;
    };
    // The node's (namespace's) conntrack sysctls now hold the file's values.
    for (name, want) in [
        ("nf_conntrack_tcp_timeout_established", "7200"),
        ("nf_conntrack_tcp_timeout_close_wait", "1800"),
        ("nf_conntrack_udp_timeout", "45"),
        ("nf_conntrack_udp_timeout_stream", "150"),
    ] {
        let got = lab.node.ok(&["cat", &format!("/proc/sys/net/netfilter/{name}")]);
        assert_eq!(got.trim(), want, "{name}");
    }

    // The real API server refuses a port name the proxy would report (`Bad_Name`: 422), so field
    // errors are the model's unit tests' business; here every object it admitted, named ports and the
    // `kubernetes` Service included, must pass the proxy's checks without a field error.
    let api = lab.api();
    let bad = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"},
        "spec": {"ports": [{"name": "Bad_Name", "port": 81, "targetPort": 8080, "protocol": "TCP"}]}});
    let refused = api
        .kubectl
        .ok_stdin(&["create", "-f", "-"], &bad.to_string())
        .expect_err("kube-apiserver admitted the port name Bad_Name")
        .to_string();
    assert!(refused.contains("spec.ports[0].name"), "{refused}");
    let mixed = api.service(
        "mixed",
        json!({"ports": [
            {"name": "other", "port": 81, "targetPort": 8080, "protocol": "TCP"},
            {"name": "good", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("mixed", &[("good", "TCP")], &[local("10.244.1.10")]);
    let addr = format!("{}:80", cluster_ip(&mixed));
    let pod2 = &lab.pod("pod2").ns;
    wait_for("the good port answers", Duration::from_secs(20), || {
        let r = request(pod2, "tcp", &addr, 1, None);
        r[0].starts_with("pod1").then_some(())
    });
    let log = lab.log("proxy.log");
    assert!(
        !log.contains("field spec."),
        "field error on an admitted object:\n{log}"
    );
    assert_eq!(
        lab.metric("svcnet_proxy_object_field_errors_total{kind=\"Service\"}"),
        0.0
    );

    // The INVALID drop rule carries the nfacct match and the counter counts real drops.
    let filter = lab.node.ok(&["iptables-save", "-t", "filter"]);
    assert!(
        filter.contains("--ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP"),
        "{filter}"
    );
    let metric = "kubeproxy_iptables_ct_state_invalid_dropped_packets_total";
    let before = lab.metric(metric);
    assert!(lab.metrics().contains(metric), "{}", lab.metrics());
    send_invalid_tcp(&lab.client, "10.244.1.10", lab::POD_PORT, 5);
    let after = wait_for("INVALID drops counted", Duration::from_secs(10), || {
        let v = lab.metric(metric);
        (v >= before + 5.0).then_some(v)
    });
    assert_eq!(after, before + 5.0);
    assert!(
        lab.metrics()
            .contains("kubeproxy_iptables_localhost_nodeports_accepted_packets_total"),
        "{}",
        lab.metrics()
    );
}

#[test]
fn bad_flags_stop_the_proxy_before_it_touches_anything() {
    let Some(ns) = svcnet_netns::netns_or_skip("badflags") else {
        return;
    };
    let bin = lab::proxy_binary();
    for (flags, want) in [
        (["--detect-local-mode", "Bogus"], "--detect-local-mode \"Bogus\""),
        (
            ["--detect-local-mode", "BridgeInterface"],
            "needs --pod-bridge-interface",
        ),
        (["--iptables-masquerade-bit", "40"], "40"),
    ] {
        let mut args = vec![
            bin.to_str().expect("utf-8 path"),
            "run",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--hostname-override",
            "node-a",
        ];
        args.extend(flags);
        let out = ns.command(&args).output().expect("run the proxy");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} accepted:\n{stderr}");
        assert!(
            stderr.contains("invalid flags") && stderr.contains(want),
            "{flags:?}:\n{stderr}"
        );
        // Nothing ran: no log line of the start, no rule in the namespace.
        assert!(!stderr.contains("starting svcnet-proxy"), "{stderr}");
        let (_, saved, _) = ns.run(&["iptables-save"]);
        assert!(!saved.contains("KUBE-"), "{saved}");
    }
}
