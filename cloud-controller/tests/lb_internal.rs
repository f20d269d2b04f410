//! Internal passthrough load balancers (`networking.gke.io/load-balancer-type: Internal`) against
//! svcnet-fake-gce: every object field for field as cloud-provider-gcp's
//! gce_loadbalancer_internal.go creates it, the mutating calls counted, a no-op resync that only
//! reads, port / ETP / node changes, switching external <-> internal, and deletion without leaks.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const ILB_TYPE: &str = "networking.gke.io/load-balancer-type";
const BASE: &str = "compute/v1/projects";

fn ilb_service(name: &str, ports: &[i32]) -> Service {
    let mut svc = lb_service(name, ports);
    svc.metadata.annotations = Some([(ILB_TYPE.to_owned(), "Internal".to_owned())].into());
    svc
}

/// `…/compute/v1/projects/P/<rest>` of a link, for comparing links regardless of the endpoint.
fn rel(link: &Value) -> String {
    let s = link.as_str().unwrap_or_default();
    s.find(BASE)
        .map_or(s.to_owned(), |i| s[i + BASE.len() + 1..].to_owned())
}

fn rels(list: &Value) -> Vec<String> {
    let mut v: Vec<String> = list.as_array().into_iter().flatten().map(rel).collect();
    v.sort();
    v
}

fn members(gce: &FakeGce, zone: &str, group: &str) -> Vec<String> {
    let (s, v) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/zones/{zone}/instanceGroups/{group}/listInstances"),
        Some(&json!({"instanceState": "ALL"})),
    );
    assert_eq!(s, 200, "{v}");
    let mut out: Vec<String> = v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| rel(&i["instance"]))
        .collect();
    out.sort();
    out
}

async fn patch_svc(client: &kube::Client, name: &str, patch: Value) {
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// [`eventually`] for a condition on the fake's state alone.
async fn wait_gce<F: Fn(&FakeGce) -> bool>(gce: &FakeGce, what: &str, f: F) {
    eventually(what, WAIT, || async { f(gce).then_some(()) }).await;
}

async fn wait_gone(client: &kube::Client, name: &str) {
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    eventually(&format!("{name} deleted"), WAIT, || {
        let api = api.clone();
        async move { api.get_opt(name).await.unwrap().is_none().then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_lb_created_resynced_updated_and_deleted() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    add_node(&client, &gce, "node-2", ZONE, None).await;
    add_node(&client, &gce, "node-3", ZONE_C, None).await;
    let _ctl = Controller::start(&api_server, &gce, &[]);
    let cid = cluster_id(&client).await;

    gce.clear_calls();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &ilb_service("db", &[5432, 80]))
        .await
        .unwrap();
    let (svc, ip) = wait_ingress(&client, "db").await;
    let lb = lb_name(&svc);
    let ig = format!("k8s-ig--{cid}");
    let hc_name = format!("k8s-{cid}-node");
    let p = |rest: &str| format!("{PROJECT}/{rest}");

    // The IP comes from the subnetwork (the fake's internal range), never the external pool.
    assert!(ip.starts_with("10.128."), "internal IP: {ip}");

    // Instance groups: one per zone, named the cluster's, with the zone's nodes.
    for (zone, nodes) in [(ZONE, vec!["node-1", "node-2"]), (ZONE_C, vec!["node-3"])] {
        let groups: Vec<Value> = gce.state()["instanceGroups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["name"] == ig.as_str() && rel(&g["zone"]) == p(&format!("zones/{zone}")))
            .cloned()
            .collect();
        assert_eq!(groups.len(), 1, "group in {zone}");
        let want: Vec<String> = nodes
            .iter()
            .map(|n| p(&format!("zones/{zone}/instances/{n}")))
            .collect();
        assert_eq!(members(&gce, zone, &ig), want);
        assert_eq!(groups[0]["size"], json!(nodes.len()));
    }

    // The shared node health check (non-legacy), upstream newInternalLBHealthCheck.
    let hc = gce.find("healthChecks", &hc_name).expect("node health check");
    assert_eq!(hc["type"], "HTTP");
    // Empty: GCE (and the fake) leave the field out.
    assert!(hc.get("description").is_none_or(|d| d == ""), "{hc}");
    assert_eq!(hc["httpHealthCheck"]["port"], 10256);
    assert_eq!(hc["httpHealthCheck"]["requestPath"], "/healthz");
    assert_eq!(
        (
            &hc["checkIntervalSec"],
            &hc["timeoutSec"],
            &hc["healthyThreshold"],
            &hc["unhealthyThreshold"]
        ),
        (&json!(8), &json!(1), &json!(1), &json!(3))
    );
    let hc_fw = gce
        .find("firewalls", &format!("{hc_name}-hc"))
        .expect("health check firewall");
    assert!(hc_fw.get("description").is_none_or(|d| d == ""), "{hc_fw}");
    assert_eq!(
        rels(&hc_fw["sourceRanges"]),
        [
            "130.211.0.0/22",
            "209.85.152.0/22",
            "209.85.204.0/22",
            "35.191.0.0/16"
        ]
    );
    assert_eq!(
        hc_fw["allowed"],
        json!([{"IPProtocol": "tcp", "ports": ["10256"]}])
    );
    assert_eq!(hc_fw["targetTags"], json!([NODE_TAG]));
    assert!(hc_fw.get("destinationRanges").is_none_or(|d| d == &json!([])));

    // The regional backend service over both groups.
    let bs = gce.find("backendServices", &lb).expect("backend service");
    assert_eq!(
        bs["description"],
        r#"{"kubernetes.io/service-name":"default/db"}"#
    );
    assert_eq!(bs["protocol"], "TCP");
    assert_eq!(bs["sessionAffinity"], "NONE");
    assert_eq!(bs["loadBalancingScheme"], "INTERNAL");
    assert_eq!(
        rels(&bs["healthChecks"]),
        [p(&format!("global/healthChecks/{hc_name}"))]
    );
    let mut groups: Vec<String> = bs["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| rel(&b["group"]))
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [
            p(&format!("zones/{ZONE}/instanceGroups/{ig}")),
            p(&format!("zones/{ZONE_C}/instanceGroups/{ig}"))
        ]
    );

    // The INTERNAL forwarding rule: ports (not a range), subnetwork, no target pool.
    let fr = gce.find("forwardingRules", &lb).expect("forwarding rule");
    assert_eq!(fr["IPAddress"], ip.as_str());
    assert_eq!(fr["IPProtocol"], "TCP");
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL");
    assert_eq!(fr["ports"], json!(["5432", "80"]));
    assert_eq!(
        rel(&fr["backendService"]),
        p(&format!("regions/{REGION}/backendServices/{lb}"))
    );
    assert_eq!(
        rel(&fr["subnetwork"]),
        p(&format!("regions/{REGION}/subnetworks/default"))
    );
    assert_eq!(rel(&fr["network"]), p("global/networks/default"));
    assert_eq!(
        fr["description"],
        r#"{"kubernetes.io/service-name":"default/db"}"#
    );
    for absent in [
        "target",
        "portRange",
        "allowGlobalAccess",
        "allPorts",
        "networkTier",
    ] {
        assert!(fr.get(absent).is_none(), "{absent} set: {fr}");
    }

    // The traffic firewall for the rule's IP.
    let fw = gce
        .find("firewalls", &format!("k8s-fw-{lb}"))
        .expect("traffic firewall");
    assert_eq!(
        fw["description"],
        format!(r#"{{"kubernetes.io/service-name":"default/db", "kubernetes.io/service-ip":"{ip}"}}"#)
    );
    assert_eq!(fw["destinationRanges"], json!([ip]));
    assert_eq!(fw["sourceRanges"], json!(["0.0.0.0/0"]));
    assert_eq!(fw["targetTags"], json!([NODE_TAG]));
    assert_eq!(rels(&fw["allowed"][0]["ports"]), ["5432", "80"]);

    // Never a target pool or a legacy health check; the reservation released.
    assert_eq!(gce.names("targetPools"), Vec::<String>::new());
    assert_eq!(gce.names("httpHealthChecks"), Vec::<String>::new());
    assert!(gce.find("addresses", &lb).is_none(), "reservation not released");

    // Mutating calls of a new ILB (first in the cluster): 2 groups + 2 addInstances, health
    // check, address, backend service, rule, 2 firewalls, address release.
    let calls = gce.mutating_calls();
    let count = |m: &str, suffix: &str| {
        calls
            .iter()
            .filter(|c| c.starts_with(m) && c.ends_with(suffix))
            .count()
    };
    assert_eq!(count("POST", "/instanceGroups"), 2, "{calls:?}");
    assert_eq!(count("POST", "/addInstances"), 2, "{calls:?}");
    assert_eq!(count("POST", "/global/healthChecks"), 1, "{calls:?}");
    assert_eq!(count("POST", "/addresses"), 1, "{calls:?}");
    assert_eq!(count("POST", "/backendServices"), 1, "{calls:?}");
    assert_eq!(count("POST", "/forwardingRules"), 1, "{calls:?}");
    assert_eq!(count("POST", "/firewalls"), 2, "{calls:?}");
    assert_eq!(count("DELETE", &format!("/addresses/{lb}")), 1, "{calls:?}");
    assert_eq!(calls.len(), 11, "{calls:?}");

    // Finalizers: the cleanup one and upstream's ILB v1; events as for external LBs.
    let svc = services.get("db").await.unwrap();
    let fin = svc.metadata.finalizers.clone().unwrap_or_default();
    assert_eq!(
        fin,
        [
            "service.kubernetes.io/load-balancer-cleanup",
            "gke.networking.io/l4-ilb-v1"
        ]
    );
    let reasons = event_reasons(&client, "db").await;
    assert!(
        reasons.contains(&"EnsuringLoadBalancer".to_owned()),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"EnsuredLoadBalancer".to_owned()), "{reasons:?}");

    // The CloudLoadBalancer record shows the internal LB.
    let clbs: Api<svcnet_crds::CloudLoadBalancer> = Api::namespaced(client.clone(), "default");
    let rec = eventually("record of db", WAIT, || {
        let clbs = clbs.clone();
        async move {
            let c = clbs.get_opt("db").await.ok()??;
            c.status
                .and_then(|s| s.gce)
                .filter(|g| g.backend_service.is_some())
        }
    })
    .await;
    assert_eq!(rec.load_balancing_scheme.as_deref(), Some("INTERNAL"));
    assert_eq!(
        rec.backend_service.as_ref().map(|b| b.name.as_str()),
        Some(lb.as_str())
    );
    assert_eq!(rec.instance_groups.len(), 2);
    assert!(rec.target_pool.is_none());
    assert_eq!(
        rec.health_checks
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>(),
        [hc_name.as_str()]
    );

    // A no-op resync reads only.
    tokio::time::sleep(Duration::from_secs(1)).await;
    gce.clear_calls();
    patch_svc(
        &client,
        "db",
        json!({"metadata": {"annotations": {"touched": "yes"}}}),
    )
    .await;
    eventually("the resync read GCE", WAIT, || async {
        (gce.calls().0 >= 10).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (total, mutating) = gce.calls();
    assert_eq!(mutating, 0, "no-op resync mutated: {:?}", gce.mutating_calls());
    assert!(total > 0);

    // Port change: the rule is recreated on the same IP (held by a reservation meanwhile).
    gce.clear_calls();
    patch_svc(
        &client,
        "db",
        json!({"spec": {"ports": [
            {"name": "p80", "port": 80, "protocol": "TCP", "targetPort": 80},
            {"name": "p81", "port": 81, "protocol": "TCP", "targetPort": 81}]}}),
    )
    .await;
    wait_gce(&gce, "rule with the new ports", |g| {
        g.find("forwardingRules", &lb)
            .is_some_and(|f| f["ports"] == json!(["80", "81"]))
            && g.find("addresses", &lb).is_none()
            && g.find("firewalls", &format!("k8s-fw-{lb}"))
                .is_some_and(|f| f["allowed"][0]["ports"] == json!(["80-81"]))
    })
    .await;
    assert_eq!(
        gce.find("forwardingRules", &lb).unwrap()["IPAddress"],
        ip.as_str()
    );
    let calls = gce.mutating_calls();
    assert_eq!(
        calls.len(),
        5,
        "address, rule delete + create, firewall patch, release: {calls:?}"
    );

    // More than 5 ports: allPorts instead of a list.
    let many: Vec<Value> = (0..6)
        .map(
            |i| json!({"name": format!("p{i}"), "port": 9000 + i, "protocol": "TCP", "targetPort": 9000 + i}),
        )
        .collect();
    patch_svc(&client, "db", json!({"spec": {"ports": many}})).await;
    wait_gce(&gce, "allPorts rule", |g| {
        g.find("forwardingRules", &lb)
            .is_some_and(|f| f["allPorts"] == true && f.get("ports").is_none())
    })
    .await;

    // ETP Local: the Service's own check on its healthCheckNodePort, then the shared one goes.
    patch_svc(&client, "db", json!({"spec": {"externalTrafficPolicy": "Local"}})).await;
    wait_gce(&gce, "service health check in use", |g| {
        g.find("backendServices", &lb)
            .is_some_and(|b| rels(&b["healthChecks"]) == [format!("{PROJECT}/global/healthChecks/{lb}")])
            && g.find("healthChecks", &hc_name).is_none()
            && g.find("firewalls", &format!("{hc_name}-hc")).is_none()
    })
    .await;
    let svc = services.get("db").await.unwrap();
    let hcnp = svc.spec.as_ref().unwrap().health_check_node_port.unwrap();
    let local = gce.find("healthChecks", &lb).unwrap();
    assert_eq!(local["httpHealthCheck"]["port"], hcnp);
    assert_eq!(local["httpHealthCheck"]["requestPath"], "/healthz");
    assert_eq!(
        local["description"],
        r#"{"kubernetes.io/service-name":"default/db"}"#
    );
    let local_fw = gce.find("firewalls", &format!("{lb}-hc")).unwrap();
    assert_eq!(local_fw["allowed"][0]["ports"], json!([hcnp.to_string()]));
    // Back to Cluster: the shared check returns, the service's goes.
    patch_svc(
        &client,
        "db",
        json!({"spec": {"externalTrafficPolicy": "Cluster"}}),
    )
    .await;
    wait_gce(&gce, "shared health check back", |g| {
        g.find("healthChecks", &hc_name).is_some()
            && g.find("healthChecks", &lb).is_none()
            && g.find("firewalls", &format!("{lb}-hc")).is_none()
            && g.find("firewalls", &format!("{hc_name}-hc")).is_some()
    })
    .await;

    // Nodes come and go: membership calls on the zone's group only.
    gce.clear_calls();
    add_node(&client, &gce, "node-4", ZONE_C, None).await;
    wait_gce(&gce, "node-4 in the group", |g| {
        members(g, ZONE_C, &ig).len() == 2
    })
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes.delete("node-1", &DeleteParams::default()).await.unwrap();
    wait_gce(&gce, "node-1 out of the group", |g| {
        members(g, ZONE, &ig) == [format!("{PROJECT}/zones/{ZONE}/instances/node-2")]
    })
    .await;
    let calls = gce.mutating_calls();
    assert_eq!(calls.len(), 2, "one addInstances, one removeInstances: {calls:?}");

    // Delete: nothing of the ILB (or the shared objects no one else uses) is left.
    services.delete("db", &DeleteParams::default()).await.unwrap();
    wait_gone(&client, "db").await;
    assert_eq!(
        inventory(&gce, &TARGET_POOL_AND_ILB_KINDS),
        Vec::<String>::new(),
        "objects left behind"
    );
    let reasons = event_reasons(&client, "db").await;
    assert!(reasons.contains(&"DeletedLoadBalancer".to_owned()), "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_external_internal_and_shared_groups() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &[]);
    let cid = cluster_id(&client).await;
    let ig = format!("k8s-ig--{cid}");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    // External first.
    services
        .create(&PostParams::default(), &lb_service("web", &[80]))
        .await
        .unwrap();
    let (svc, _) = wait_ingress(&client, "web").await;
    let lb = lb_name(&svc);
    assert!(gce.find("targetPools", &lb).is_some());

    // -> internal: the external LB goes entirely, the internal one comes.
    patch_svc(
        &client,
        "web",
        json!({"metadata": {"annotations": {ILB_TYPE: "Internal"}}}),
    )
    .await;
    wait_gce(&gce, "internal rule", |g| {
        g.find("forwardingRules", &lb)
            .is_some_and(|f| f["loadBalancingScheme"] == "INTERNAL")
    })
    .await;
    eventually("internal ingress IP", WAIT, || async {
        let s = services.get("web").await.ok()?;
        ingress_ip(&s).filter(|ip| ip.starts_with("10.128.")).map(|_| ())
    })
    .await;
    assert_eq!(gce.names("targetPools"), Vec::<String>::new());
    assert_eq!(gce.names("httpHealthChecks"), Vec::<String>::new());
    assert!(
        !gce.names("firewalls")
            .contains(&format!("k8s-{cid}-node-http-hc"))
    );
    let fin = services
        .get("web")
        .await
        .unwrap()
        .metadata
        .finalizers
        .unwrap_or_default();
    assert!(fin.contains(&"gke.networking.io/l4-ilb-v1".to_owned()), "{fin:?}");
    assert!(
        !fin.contains(&"gke.networking.io/l4-netlb-v1".to_owned()),
        "{fin:?}"
    );

    // A second internal LB shares the groups; deleting it keeps them for the first.
    services
        .create(&PostParams::default(), &ilb_service("db", &[5432]))
        .await
        .unwrap();
    let (db, _) = wait_ingress(&client, "db").await;
    let db_lb = lb_name(&db);
    services.delete("db", &DeleteParams::default()).await.unwrap();
    wait_gone(&client, "db").await;
    assert!(gce.find("backendServices", &db_lb).is_none());
    assert_eq!(gce.names("instanceGroups"), [ig], "groups kept for web");
    assert!(
        gce.find("healthChecks", &format!("k8s-{cid}-node")).is_some(),
        "shared check kept"
    );

    // -> external again: the internal LB goes, groups and checks with it (no other user).
    let mut back = json!({"metadata": {"annotations": {}}});
    back["metadata"]["annotations"][ILB_TYPE] = Value::Null;
    patch_svc(&client, "web", back).await;
    wait_gce(&gce, "external rule", |g| {
        g.find("forwardingRules", &lb)
            .is_some_and(|f| f["loadBalancingScheme"] == "EXTERNAL" && f.get("target").is_some())
    })
    .await;
    wait_gce(&gce, "internal objects gone", |g| {
        g.names("backendServices").is_empty()
            && g.names("instanceGroups").is_empty()
            && g.names("healthChecks").is_empty()
    })
    .await;
    eventually("external ingress IP", WAIT, || async {
        let s = services.get("web").await.ok()?;
        ingress_ip(&s).filter(|ip| !ip.starts_with("10.128.")).map(|_| ())
    })
    .await;

    services.delete("web", &DeleteParams::default()).await.unwrap();
    wait_gone(&client, "web").await;
    assert_eq!(
        inventory(&gce, &TARGET_POOL_AND_ILB_KINDS),
        Vec::<String>::new(),
        "objects left behind"
    );
}
