use super::*;
use crate::testutil::{node, taint};

fn facts() -> InstanceFacts {
    InstanceFacts {
        project: "proj".into(),
        zone: "us-central1-b".into(),
        name: "node-1".into(),
        machine_type:
            "https://www.googleapis.com/compute/v1/projects/proj/zones/us-central1-b/machineTypes/e2-medium"
                .into(),
        internal_ips: vec!["10.128.0.5".into()],
        external_ips: vec!["34.1.2.3".into()],
    }
}

fn uninitialised() -> Node {
    let mut n = node("node-1", "us-central1-b");
    let spec = n.spec.as_mut().unwrap();
    spec.provider_id = None;
    spec.taints = Some(vec![taint(UNINITIALIZED_TAINT), taint("dedicated")]);
    n.status.as_mut().unwrap().addresses = Some(vec![NodeAddress {
        type_: "Hostname".into(),
        address: "node-1".into(),
    }]);
    n
}

#[test]
fn provider_id_round_trip_and_rejects() {
    let id = parse_provider_id("gce://proj/us-central1-a/vm-1").unwrap();
    assert_eq!(
        (id.project.as_str(), id.zone.as_str(), id.instance.as_str()),
        ("proj", "us-central1-a", "vm-1")
    );
    assert_eq!(id.format(), "gce://proj/us-central1-a/vm-1");
    for bad in [
        "",
        "aws:///x",
        "gce://proj/zone",
        "gce://proj//vm",
        "gce://a/b/c/d",
    ] {
        assert_eq!(parse_provider_id(bad), None, "{bad}");
    }
    assert_eq!(region_of_zone("europe-west4-a"), "europe-west4");
}

#[test]
fn initialises_uninitialised_node() {
    let n = uninitialised();
    assert!(needs_initialization(&n));
    let init = plan_node_init(&n, &facts()).unwrap();
    assert_eq!(
        init.provider_id.as_deref(),
        Some("gce://proj/us-central1-b/node-1")
    );
    assert_eq!(init.labels[LABEL_ZONE], "us-central1-b");
    assert_eq!(init.labels[LABEL_ZONE_BETA], "us-central1-b");
    assert_eq!(init.labels[LABEL_REGION], "us-central1");
    assert_eq!(init.labels[LABEL_REGION_BETA], "us-central1");
    assert_eq!(init.labels[LABEL_INSTANCE_TYPE], "e2-medium");
    assert_eq!(init.labels[LABEL_INSTANCE_TYPE_BETA], "e2-medium");
    let addrs: Vec<(&str, &str)> = init
        .addresses
        .iter()
        .map(|a| (a.type_.as_str(), a.address.as_str()))
        .collect();
    assert_eq!(
        addrs,
        [
            ("InternalIP", "10.128.0.5"),
            ("ExternalIP", "34.1.2.3"),
            ("Hostname", "node-1")
        ]
    );
    let keys: Vec<&str> = init.taints.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["dedicated"], "only the uninitialized taint is removed");

    let spec = init.spec_patch();
    assert_eq!(spec["spec"]["providerID"], "gce://proj/us-central1-b/node-1");
    assert_eq!(spec["spec"]["taints"].as_array().unwrap().len(), 1);
    assert_eq!(spec["metadata"]["labels"][LABEL_ZONE], "us-central1-b");
    assert_eq!(
        init.status_patch()["status"]["addresses"][0]["type"],
        "InternalIP"
    );
}

#[test]
fn existing_provider_id_is_kept_and_validated() {
    let mut n = uninitialised();
    n.spec.as_mut().unwrap().provider_id = Some("gce://proj/us-central1-b/node-1".into());
    let init = plan_node_init(&n, &facts()).unwrap();
    assert_eq!(init.provider_id, None);
    assert!(
        !init.spec_patch()["spec"]
            .as_object()
            .unwrap()
            .contains_key("providerID")
    );

    n.spec.as_mut().unwrap().provider_id = Some("aws:///i-123".into());
    assert_eq!(
        plan_node_init(&n, &facts()).unwrap_err().field(),
        "spec.providerID"
    );
}

#[test]
fn provided_node_ip_must_exist_and_goes_first() {
    let mut n = uninitialised();
    n.metadata.annotations = Some([(PROVIDED_NODE_IP_ANNOTATION.to_string(), "34.1.2.3".to_string())].into());
    let init = plan_node_init(&n, &facts()).unwrap();
    assert_eq!(init.addresses[0].address, "34.1.2.3");

    n.metadata.annotations = Some([(PROVIDED_NODE_IP_ANNOTATION.to_string(), "10.9.9.9".to_string())].into());
    let e = plan_node_init(&n, &facts()).unwrap_err();
    assert_eq!(e.metric_label(), "invalid_node_address");
}

#[test]
fn dual_stack_instance_and_dual_provided_node_ips() {
    let mut f = facts();
    f.internal_ips.push("fd20:0:0:1::5".into());
    let mut n = uninitialised();
    let order = |init: &NodeInit| {
        init.addresses
            .iter()
            .map(|a| format!("{} {}", a.type_, a.address))
            .collect::<Vec<_>>()
    };
    // cloud-provider-gcp's order: IPv4 internal, external, then the NIC's IPv6 as an InternalIP.
    assert_eq!(
        order(&plan_node_init(&n, &f).unwrap()),
        [
            "InternalIP 10.128.0.5",
            "ExternalIP 34.1.2.3",
            "InternalIP fd20:0:0:1::5",
            "Hostname node-1"
        ]
    );
    let provided = |n: &mut Node, v: &str| {
        n.metadata.annotations = Some([(PROVIDED_NODE_IP_ANNOTATION.to_string(), v.to_string())].into());
    };
    // kubelet --node-ip=IPv4,IPv6 (KEP-3705): both first, in that order; spelling does not matter.
    provided(&mut n, "10.128.0.5,FD20::1:0:0:0:5");
    assert_eq!(
        order(&plan_node_init(&n, &f).unwrap())[..3],
        [
            "InternalIP 10.128.0.5",
            "InternalIP fd20:0:0:1::5",
            "ExternalIP 34.1.2.3"
        ]
    );
    provided(&mut n, "fd20:0:0:1::5,10.128.0.5");
    assert_eq!(
        order(&plan_node_init(&n, &f).unwrap())[..2],
        ["InternalIP fd20:0:0:1::5", "InternalIP 10.128.0.5"]
    );
    // An IPv6 the instance does not have (an IPv4-only instance) leaves the node uninitialized.
    provided(&mut n, "10.128.0.5,fd20:0:0:1::5");
    let e = plan_node_init(&n, &facts()).unwrap_err();
    assert_eq!(e.metric_label(), "invalid_node_address");
    assert!(e.to_string().contains("fd20:0:0:1::5"), "{e}");
    provided(&mut n, "10.128.0.5,fd20:0:0:1::5,34.1.2.3");
    assert_eq!(
        plan_node_init(&n, &f).unwrap_err().metric_label(),
        "invalid_node_address"
    );
}

#[test]
fn initialised_node_needs_nothing() {
    assert!(!needs_initialization(&node("node-2", "us-central1-a")));
}

#[test]
fn lifecycle_deletes_only_not_ready_nodes_whose_instance_is_gone() {
    let ready = node("r", "us-central1-a");
    let mut not_ready = node("n", "us-central1-a");
    not_ready.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "Unknown".into();
    let mut no_conditions = node("c", "us-central1-a");
    no_conditions.status = None;

    assert_eq!(
        plan_node_lifecycle(&not_ready, InstanceLookup::NotFound),
        LifecycleAction::Delete
    );
    assert_eq!(
        plan_node_lifecycle(&no_conditions, InstanceLookup::NotFound),
        LifecycleAction::Delete
    );
    assert_eq!(
        plan_node_lifecycle(&not_ready, InstanceLookup::Exists),
        LifecycleAction::Keep
    );
    assert_eq!(
        plan_node_lifecycle(&ready, InstanceLookup::NotFound),
        LifecycleAction::Keep
    );
}
