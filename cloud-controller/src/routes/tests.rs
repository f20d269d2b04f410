use k8s_openapi::api::core::v1::NodeCondition;

use super::*;
use crate::testutil::{config, node};

const UID_PREFIX: &str = "svcnet-uid-";

fn with_cidr(name: &str, zone: &str, cidr: &str) -> Node {
    let mut n = node(name, zone);
    n.spec.as_mut().unwrap().pod_cidr = Some(cidr.into());
    n.spec.as_mut().unwrap().pod_cidrs = Some(vec![cidr.into()]);
    n
}

fn route_created(mut n: Node) -> Node {
    n.status
        .as_mut()
        .unwrap()
        .conditions
        .as_mut()
        .unwrap()
        .push(NodeCondition {
            type_: CONDITION_NETWORK_UNAVAILABLE.into(),
            status: "False".into(),
            reason: Some("RouteCreated".into()),
            ..Default::default()
        });
    n
}

#[test]
fn creates_one_route_per_node_cidr() {
    let cfg = config();
    let nodes = vec![
        with_cidr("node-1", "us-central1-a", "10.64.1.0/24"),
        node("no-cidr", "us-central1-a"),
    ];
    let plan = plan_routes(&nodes, &[], &cfg, &Located::new());
    assert_eq!(plan.delete, Vec::<String>::new());
    assert_eq!(
        plan.create,
        [Route {
            name: format!("{UID_PREFIX}node-1"),
            description: "k8s-node-route".into(),
            dest_range: "10.64.1.0/24".into(),
            next_hop_instance:
                "https://www.googleapis.com/compute/v1/projects/proj/zones/us-central1-a/instances/node-1"
                    .into(),
            network: "https://www.googleapis.com/compute/v1/projects/proj/global/networks/default".into(),
            priority: 1000,
        }]
    );
    assert_eq!(
        plan.conditions.len(),
        1,
        "nodes without a pod CIDR are left alone"
    );
    assert_eq!(
        (plan.conditions[0].status, plan.conditions[0].reason),
        ("False", "RouteCreated")
    );
    let patch = plan.conditions[0].status_patch("2026-01-01T00:00:00Z");
    assert_eq!(patch["status"]["conditions"][0]["type"], "NetworkUnavailable");
}

#[test]
fn settled_routes_plan_nothing() {
    let cfg = config();
    let nodes = vec![route_created(with_cidr(
        "node-1",
        "us-central1-a",
        "10.64.1.0/24",
    ))];
    let existing = plan_routes(&nodes, &[], &cfg, &Located::new()).create;
    let plan = plan_routes(&nodes, &existing, &cfg, &Located::new());
    assert_eq!(plan, RoutePlan::default());
}

#[test]
fn stale_routes_are_deleted_and_foreign_ones_ignored() {
    let mut cfg = config();
    cfg.cluster_cidrs = vec!["10.64.0.0/14".parse().unwrap()];
    let nodes = vec![route_created(with_cidr(
        "node-1",
        "us-central1-a",
        "10.64.2.0/24",
    ))];
    let mk = |name: &str, dest: &str, inst: &str, desc: &str| Route {
        name: name.into(),
        description: desc.into(),
        dest_range: dest.into(),
        next_hop_instance: format!("projects/proj/zones/us-central1-a/instances/{inst}"),
        network: cfg.network_url(),
        priority: 1000,
    };
    let existing = vec![
        // node-1's CIDR changed: old route has node-1's name and must go before the new one.
        mk(
            &format!("{UID_PREFIX}node-1"),
            "10.64.1.0/24",
            "node-1",
            "k8s-node-route",
        ),
        // node gone.
        mk("svcnet-uid-gone", "10.64.9.0/24", "gone", "k8s-node-route"),
        // ours by prefix but outside the cluster CIDRs: not our business.
        mk("svcnet-uid-other", "172.16.0.0/24", "gone", "k8s-node-route"),
        // another cluster / manual routes.
        mk("prod-uid-x", "10.64.7.0/24", "x", "k8s-node-route"),
        mk("svcnet-manual", "10.64.8.0/24", "x", "hand made"),
    ];
    let plan = plan_routes(&nodes, &existing, &cfg, &Located::new());
    assert_eq!(
        plan.delete,
        ["svcnet-uid-gone".to_string(), format!("{UID_PREFIX}node-1")],
        "sorted"
    );
    assert_eq!(plan.create.len(), 1);
    assert_eq!(plan.create[0].dest_range, "10.64.2.0/24");
    assert!(plan.conditions.is_empty(), "condition already RouteCreated");
}

#[test]
fn bad_inputs_are_reported_per_node() {
    let cfg = config();
    let mut no_id = with_cidr("no-id", "us-central1-a", "10.64.3.0/24");
    no_id.spec.as_mut().unwrap().provider_id = None;
    let nodes = vec![
        with_cidr("bad", "us-central1-a", "10.64.300.0/24"),
        no_id,
        with_cidr("ok", "us-central1-a", "10.64.4.0/24"),
    ];
    let plan = plan_routes(&nodes, &[], &cfg, &Located::new());
    assert_eq!(plan.create.len(), 1);
    let labels: Vec<_> = plan.errors.iter().map(|e| e.metric_label()).collect();
    assert_eq!(labels, ["invalid_pod_cidr", "invalid_provider_id"]);
}

#[test]
fn ipv6_only_cidrs_get_no_route_and_dual_stack_routes_v4() {
    let cfg = config();
    let mut dual = node("dual", "us-central1-a");
    dual.spec.as_mut().unwrap().pod_cidrs = Some(vec!["fd00::/64".into(), "10.64.5.0/24".into()]);
    let mut v6 = node("v6", "us-central1-a");
    v6.spec.as_mut().unwrap().pod_cidrs = Some(vec!["fd00:1::/64".into()]);
    let plan = plan_routes(&[dual, v6], &[], &cfg, &Located::new());
    assert_eq!(plan.create.len(), 1);
    assert_eq!(plan.create[0].dest_range, "10.64.5.0/24");
}

#[test]
fn invalid_cluster_name_is_an_error_not_a_gce_call() {
    let mut cfg = config();
    cfg.cluster_name = "My_Cluster".into();
    let plan = plan_routes(
        &[with_cidr("node-1", "us-central1-a", "10.64.1.0/24")],
        &[],
        &cfg,
        &Located::new(),
    );
    assert!(plan.create.is_empty());
    assert_eq!(plan.errors[0].metric_label(), "invalid_name");
}

/// Upstream CreateRoute finds the next hop by node name (getInstanceByName) when no providerID
/// is set: the node is to be looked up, then routed to the instance found, once.
#[test]
fn nodes_without_provider_id_are_routed_by_name() {
    let cfg = config();
    let mut n = with_cidr("node-7.c.proj.internal", "us-central1-a", "10.64.7.0/24");
    n.spec.as_mut().unwrap().provider_id = None;
    n.metadata.uid = Some("0f0e0d0c-node-7".into());
    let nodes = vec![n, with_cidr("node-1", "us-central1-a", "10.64.1.0/24")];
    assert_eq!(nodes_to_locate(&nodes, &[], &cfg), ["node-7.c.proj.internal"]);

    // Not found in any zone: an error for that node only.
    let plan = plan_routes(&nodes, &[], &cfg, &Located::new());
    assert_eq!(plan.create.len(), 1);
    assert_eq!(plan.errors.len(), 1);

    let located: Located = [("node-7.c.proj.internal".to_owned(), "us-central1-c".to_owned())].into();
    let plan = plan_routes(&nodes, &[], &cfg, &located);
    assert!(plan.errors.is_empty(), "{:?}", plan.errors);
    let hop = plan
        .create
        .iter()
        .find(|r| r.dest_range == "10.64.7.0/24")
        .map(|r| r.next_hop_instance.clone())
        .expect("route for node-7");
    assert!(hop.ends_with("zones/us-central1-c/instances/node-7"), "{hop}");

    // Once its route exists the node is not looked up again, and the route is kept.
    let existing = plan.create.clone();
    assert!(nodes_to_locate(&nodes, &existing, &cfg).is_empty());
    let again = plan_routes(&nodes, &existing, &cfg, &Located::new());
    assert!(again.create.is_empty() && again.delete.is_empty(), "{again:?}");
    assert!(again.errors.is_empty(), "{:?}", again.errors);
}
