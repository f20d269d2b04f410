//! nftables mode: what partial transactions leave in the kernel is exactly what a fresh full load of
//! the same state leaves. Random clusters change step by step (services added, changed, removed,
//! endpoints moving, affinity switched on and off); each step's partial transaction is applied in one
//! throwaway network namespace on top of the previous steps, the same state is loaded whole into a
//! fresh table in another, and the two kernels' listings (`nft -j`, handles dropped, set elements
//! sorted) must be equal. The partial transactions go once through `nft -f` and once as svcnet's
//! netlink batches (the daemon's writer); the fresh loads always through `nft -f`. Never in the root
//! namespace.

mod common;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use std::time::Duration;
use svcnet_netns::Netns;
use svcnet_proxy::config::{DetectLocal, RenderConfig};
use svcnet_proxy::model::{Family, NodeFacts, ProxyState};

use svcnet_proxy::nftables::netlink;
use svcnet_proxy::nftables::render::{self as nft, Applied, Existing};
use svcnet_proxy::nftables::socket::NftSocket;

#[derive(Clone, Debug)]
struct Svc {
    kind: u8,
    udp: bool,
    etp_local: bool,
    affinity: bool,
    ranges: bool,
    ext_ip: bool,
    /// (node, ready, terminating)
    eps: Vec<(u8, bool, bool)>,
    ports: u8,
}

fn svc() -> impl Strategy<Value = Svc> {
    (
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
        prop::collection::vec((0u8..3, prop::bool::weighted(0.8), any::<bool>()), 0..5),
        1u8..3,
    )
        .prop_map(
            |(kind, udp, etp_local, affinity, ranges, ext_ip, eps, ports)| Svc {
                kind,
                udp,
                etp_local,
                affinity,
                ranges,
                ext_ip,
                eps,
                ports,
            },
        )
}

/// Service `i` of a step: same name and cluster IP whatever variant it is, so a variant change is an
/// update of the same Service.
fn objects(step: &[Option<Svc>]) -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::new();
    let mut slices = Vec::new();
    for (i, s) in step.iter().enumerate() {
        let Some(s) = s else { continue };
        let name = format!("svc{i}");
        let proto = if s.udp { "UDP" } else { "TCP" };
        let ports: Vec<Value> = (0..s.ports)
            .map(|p| {
                let mut port = json!({"name": format!("p{p}"), "port": 80 + u16::from(p), "protocol": proto});
                if s.kind > 0 {
                    port["nodePort"] = json!(30000 + i * 4 + usize::from(p));
                }
                port
            })
            .collect();
        let ty = ["ClusterIP", "NodePort", "LoadBalancer"][s.kind as usize];
        let mut spec = json!({
            "type": ty,
            "clusterIP": format!("10.96.0.{}", i + 1),
            "ports": ports,
        });
        if s.kind > 0 {
            spec["externalTrafficPolicy"] = json!(if s.etp_local { "Local" } else { "Cluster" });
        }
        if s.kind == 2 && s.etp_local {
            spec["healthCheckNodePort"] = json!(32000 + i);
        }
        if s.affinity {
            spec["sessionAffinity"] = json!("ClientIP");
        }
        if s.ranges && s.kind == 2 {
            spec["loadBalancerSourceRanges"] = json!(["192.168.0.0/16", "203.0.113.0/24"]);
        }
        if s.ext_ip {
            spec["externalIPs"] = json!([format!("198.51.100.{}", i + 1)]);
        }
        let mut svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "tx"},
            "spec": spec,
        });
        if s.kind == 2 {
            svc["status"] = json!({"loadBalancer": {"ingress": [{"ip": format!("35.1.0.{}", i + 1)}]}});
        }
        services.push(serde_json::from_value(svc).expect("service json"));
        let endpoints: Vec<Value> = s
            .eps
            .iter()
            .enumerate()
            .map(|(j, (node, ready, term))| {
                json!({
                    "addresses": [format!("10.76.{node}.{}", i * 8 + j + 1)],
                    "conditions": {"ready": ready, "serving": *ready || *term, "terminating": term},
                    "nodeName": format!("node-{node}"),
                })
            })
            .collect();
        let sports: Vec<Value> = (0..s.ports)
            .map(|p| json!({"name": format!("p{p}"), "port": 8000 + u16::from(p), "protocol": proto}))
            .collect();
        slices.push(
            serde_json::from_value(json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": format!("svc{i}-abc"), "namespace": "tx",
                    "labels": {"kubernetes.io/service-name": name}},
                "addressType": "IPv4",
                "ports": sports,
                "endpoints": endpoints,
            }))
            .expect("slice json"),
        );
    }
    (services, slices)
}

fn render(step: &[Option<Svc>], node_ip: &str) -> nft::Inputs {
    let (services, slices) = objects(step);
    let state = ProxyState::from_k8s(&services, &slices, Family::V4);
    let node = NodeFacts {
        name: "node-1".into(),
        ips: vec![node_ip.parse().expect("literal address")],
        ..Default::default()
    };
    let cfg = RenderConfig {
        detect_local: DetectLocal::ClusterCidr(vec!["10.76.0.0/14".parse().expect("literal address")]),
        service_cidrs: vec!["10.96.0.0/16".parse().expect("literal address")],
        ..RenderConfig::default()
    };
    nft::Inputs::new(&state, node, cfg)
}

fn apply(ns: &Netns, text: &str) -> Result<(), TestCaseError> {
    if text.is_empty() {
        return Ok(());
    }
    let (ok, _, err) = ns.exec(&["nft", "-f", "-"], text);
    prop_assert!(ok, "nft -f rejected the transaction: {err}\n{text}");
    Ok(())
}

/// How the incremental side writes its transactions.
#[derive(Clone, Copy)]
enum Via {
    Text,
    Netlink,
}

fn apply_tx(ns: &Netns, tx: &nft::Transaction, via: Via) -> Result<(), TestCaseError> {
    match via {
        Via::Text => apply(ns, &tx.text()),
        Via::Netlink => {
            if tx.ops.is_empty() {
                return Ok(());
            }
            let path = std::path::Path::new("/run/netns").join(ns.name());
            let mut socket = NftSocket::open_in(&path, Duration::from_secs(60))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let batch = netlink::encode(tx.family(), &tx.ops, tx.sets(), socket.next_start())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            socket
                .apply(&batch)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{}", tx.text())))
        }
    }
}

fn check(
    steps: &[Vec<Option<Svc>>],
    incremental: &Netns,
    fresh: &Netns,
    via: Via,
) -> Result<(), TestCaseError> {
    // A table from an earlier case: the first full transaction must clear what it does not want.
    let mut applied = Applied::default();
    for (n, step) in steps.iter().enumerate() {
        // The node address changes once, so the base chains change too.
        let node_ip = if n < 2 { "10.140.0.3" } else { "10.140.0.4" };
        let next = render(step, node_ip);
        let tx = if n == 0 {
            let existing = existing(incremental);
            nft::full(next.clone(), &existing, nft::Start::Over)
        } else {
            nft::partial(&applied, next.clone())
        };
        apply_tx(incremental, &tx, via)?;
        applied.commit(tx);

        let whole = nft::full(next, &Existing::default(), nft::Start::Recreated);
        apply(fresh, &whole.text())?;
        let (a, b) = (
            common::nft_listing(incremental, "ip"),
            common::nft_listing(fresh, "ip"),
        );
        if a != b {
            let a: Vec<String> = a.iter().map(Value::to_string).collect();
            let b: Vec<String> = b.iter().map(Value::to_string).collect();
            let only_a: Vec<_> = a.iter().filter(|x| !b.contains(x)).collect();
            let only_b: Vec<_> = b.iter().filter(|x| !a.contains(x)).collect();
            prop_assert!(
                false,
                "step {n}: the kernel after partial transactions differs from a fresh load\nonly after partials: {only_a:#?}\nonly in the fresh load: {only_b:#?}"
            );
        }
    }
    Ok(())
}

fn existing(ns: &Netns) -> Existing {
    let (ok, out, _) = ns.exec(&["nft", "-t", "list", "table", "ip", "kube-proxy"], "");
    if !ok {
        return Existing::default();
    }
    svcnet_proxy::nftables::kernel::parse_listing(&out)
}

#[test]
fn partial_transactions_leave_the_kernel_as_a_fresh_full_load_does() {
    run(Via::Text, "nfttxa", "nfttxb");
}

#[test]
fn partial_netlink_batches_leave_the_kernel_as_a_fresh_nft_load_does() {
    run(Via::Netlink, "nfttxc", "nfttxd");
}

fn run(via: Via, a: &str, b: &str) {
    let Some(incremental) = svcnet_netns::netns_or_skip(a) else {
        return;
    };
    let Some(fresh) = svcnet_netns::netns_or_skip(b) else {
        return;
    };
    let cases = std::env::var("SVCNET_PROP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    // Up to 8 services in two variants each; 4 steps choose per service: variant a, b, or absent.
    let strategy = (1usize..8).prop_flat_map(|n| {
        (
            prop::collection::vec(svc(), n),
            prop::collection::vec(svc(), n),
            prop::collection::vec(prop::collection::vec(0u8..3, n), 4),
        )
    });
    let result = runner.run(&strategy, |(a, b, picks)| {
        let steps: Vec<Vec<Option<Svc>>> = picks
            .iter()
            .map(|p| {
                p.iter()
                    .enumerate()
                    .map(|(i, pick)| match pick {
                        0 => Some(a[i].clone()),
                        1 => Some(b[i].clone()),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        check(&steps, &incremental, &fresh, via)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
