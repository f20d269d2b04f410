//! The seeded random corpus: clusters from the property tests' generator (`common::generator`:
//! Services of every type and policy, terminating endpoints, topology hints, bulk endpoints), made
//! acceptable to the API server (hostile strings replaced), with endpoints split into slices of at
//! most 100 as the EndpointSlice controller does, and every third Service dual-stack with an IPv6
//! slice. Each round: create, then per Service an endpoint change, a traffic-policy flip and the
//! deletion, then the rest deleted.

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

use super::{Step, Write, adapt_service, key, namespace, shrink};
use crate::common::generator::{HOSTILE, Svc, objects_json, svc};

pub const NS: &str = "prop";
/// The EndpointSlice controller's default `--max-endpoints-per-slice`.
const PER_SLICE: usize = 100;
/// Services of a round whose updates are scripted (the rest are only created and deleted).
const SCRIPTED: usize = 4;

/// The clusters of `rounds` rounds from `seed` (the same seed gives the same clusters).
pub fn clusters(seed: u64, rounds: usize) -> Vec<Vec<Svc>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = proptest::collection::vec(svc(), 1..14);
    (0..rounds)
        .map(|_| {
            let tree = strategy
                .new_tree(&mut runner)
                .unwrap_or_else(|e| panic!("generator: {e}"));
            tree.current().into_iter().map(api_safe).collect()
        })
        .collect()
}

/// The generator's Svc with what the API server refuses replaced: hostile names, bogus source
/// ranges, the hostile annotation (dropped later, see [`objects`]).
fn api_safe(mut s: Svc) -> Svc {
    if HOSTILE.contains(&s.name.as_str()) {
        s.name = "hostile".into();
    }
    if HOSTILE.contains(&s.port_name.as_str()) {
        s.port_name = "p".into();
    }
    s.ranges.retain(|r| r.parse::<ipnet::IpNet>().is_ok());
    s
}

/// Services (with their status writes) and slices of one cluster, as the API server takes them.
fn objects(svcs: &[Svc]) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let (services, slices) = objects_json(svcs);
    let mut out_svcs = Vec::new();
    let mut statuses = Vec::new();
    let mut out_slices = Vec::new();
    for (i, (mut svc, slice)) in services.into_iter().zip(slices).enumerate() {
        svc["metadata"].as_object_mut().map(|m| m.remove("annotations"));
        let lb = svc["spec"]["type"] == "LoadBalancer";
        if !lb && let Some(spec) = svc["spec"].as_object_mut() {
            // Only LoadBalancer Services may carry source ranges.
            spec.remove("loadBalancerSourceRanges");
        }
        let dual = dual_stack(i);
        if dual {
            svc["spec"]["ipFamilyPolicy"] = json!("PreferDualStack");
        }
        let (svc, status) = adapt_service(svc);
        out_slices.extend(split(&slice, "IPv4"));
        if dual {
            out_slices.extend(split(&to_ipv6(&slice), "IPv6"));
        }
        out_svcs.push(svc);
        statuses.extend(status);
    }
    (out_svcs, statuses, out_slices)
}

/// Whether the `i`th Service of a cluster is dual-stack (PreferDualStack, an IPv6 slice too).
fn dual_stack(i: usize) -> bool {
    i.is_multiple_of(3)
}

/// The same endpoints in IPv6 (`10.a.b.c` -> `fd00:76::a:b:c`, inside the IPv6 cluster CIDR), as the
/// controller's IPv6 slice.
fn to_ipv6(slice: &Value) -> Value {
    let mut s = slice.clone();
    s["addressType"] = json!("IPv6");
    if let Some(eps) = s["endpoints"].as_array_mut() {
        for ep in eps {
            let v4 = ep["addresses"][0].as_str().unwrap_or_default().to_string();
            let o: Vec<&str> = v4.split('.').collect();
            if o.len() == 4 {
                ep["addresses"] = json!([format!("fd00:76::{}:{}:{}", o[1], o[2], o[3])]);
            }
        }
    }
    s
}

/// Slices of at most [`PER_SLICE`] endpoints, named `<slice>-<family>-<k>`.
fn split(slice: &Value, family: &str) -> Vec<Value> {
    let eps = slice["endpoints"].as_array().cloned().unwrap_or_default();
    let base = key(slice).1;
    let chunks: Vec<Vec<Value>> = if eps.is_empty() {
        vec![vec![]]
    } else {
        eps.chunks(PER_SLICE).map(<[Value]>::to_vec).collect()
    };
    chunks
        .into_iter()
        .enumerate()
        .map(|(k, chunk)| {
            let mut s = slice.clone();
            s["metadata"]["name"] = json!(format!("{base}-{}-{k}", family.to_lowercase()));
            s["endpoints"] = json!(chunk);
            s
        })
        .collect()
}

/// The steps of round `round` of the cluster `svcs`.
pub fn steps(seed: u64, round: usize, svcs: &[Svc]) -> Vec<Step> {
    let (services, statuses, slices) = objects(svcs);
    let tag = format!("random seed {seed} round {round}");
    let mut create = vec![namespace(NS)];
    create.extend(services.iter().cloned());
    create.extend(slices.iter().cloned());
    let mut writes = vec![Write::Apply(create)];
    if !statuses.is_empty() {
        writes.push(Write::Status(statuses));
    }
    let mut steps = vec![Step {
        name: format!("{tag}: create {} services", services.len()),
        writes,
    }];
    for svc in services.iter().take(SCRIPTED) {
        let name = key(svc).1;
        let own: Vec<&Value> = slices
            .iter()
            .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == name.as_str())
            .collect();
        if let Some(first) = own.first() {
            steps.push(Step {
                name: format!("{tag}: endpoints of {name} change"),
                writes: vec![Write::Apply(vec![shrink(first)])],
            });
        }
        steps.push(Step {
            name: format!("{tag}: traffic policy of {name} flips"),
            writes: vec![Write::Apply(vec![flip_policy(svc)])],
        });
        let mut objects = vec![("service", name.clone())];
        objects.extend(own.iter().map(|s| ("endpointslice", key(s).1)));
        steps.push(Step {
            name: format!("{tag}: delete {name}"),
            writes: vec![Write::Delete {
                ns: NS.into(),
                objects,
            }],
        });
    }
    steps.push(Step {
        name: format!("{tag}: delete the rest"),
        writes: vec![Write::DeleteAll { ns: NS.into() }],
    });
    steps
}

/// The Service with externalTrafficPolicy (NodePort, LoadBalancer) or internalTrafficPolicy
/// (ClusterIP) switched between Cluster and Local.
fn flip_policy(svc: &Value) -> Value {
    let mut s = svc.clone();
    let field = if s["spec"]["type"] == "ClusterIP" {
        "internalTrafficPolicy"
    } else {
        "externalTrafficPolicy"
    };
    let local = s["spec"][field] == "Local";
    s["spec"][field] = json!(if local { "Cluster" } else { "Local" });
    s
}

/// What the random clusters hold, for the test's summary line.
pub fn summary(clusters: &[Vec<Svc>]) -> String {
    let all: Vec<(usize, &Svc)> = clusters.iter().flat_map(|c| c.iter().enumerate()).collect();
    let count = |f: &dyn Fn(usize, &Svc) -> bool| all.iter().filter(|(i, s)| f(*i, s)).count();
    format!(
        "{} random services: {} LoadBalancer, {} NodePort, {} with > {PER_SLICE} endpoints (several slices), {} dual-stack, {} with terminating endpoints",
        all.len(),
        count(&|_, s| s.kind == 2),
        count(&|_, s| s.kind == 1),
        count(&|_, s| s.eps.len() + s.bulk > PER_SLICE),
        count(&|i, _| dual_stack(i)),
        count(&|_, s| s.eps.iter().any(|e| e.2)),
    )
}
