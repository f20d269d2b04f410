//! Backend-service NetLBs (`--rbs-netlb`) end to end: the real controller under its manifests'
//! RBAC (it reads the kube-system namespace for the names) builds one for a Service annotated
//! `cloud.google.com/l4-rbs: enabled`: NetLB v2 finalizer, ingress IP, ingress-gce's status
//! annotations, and the objects read back with the real gcloud (when installed). Removing the
//! annotation switches it to a target pool and adding it back switches it again, each time with
//! nothing of the old kind left; deleting it leaves no GCE object in any collection. An internal
//! Service switches to RBS and back the same way. Without the flag the same Service stays another
//! controller's.
#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::Describe;
use common::l4::*;
use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const V2: &str = "gke.networking.io/l4-netlb-v2";
const V1: &str = "gke.networking.io/l4-netlb-v1";
const ILB: &str = "networking.gke.io/load-balancer-type";
const ILB_V1: &str = "gke.networking.io/l4-ilb-v1";

fn last(v: &Value) -> &str {
    v.as_str().and_then(|s| s.rsplit('/').next()).unwrap_or("")
}

/// The Service once `done` holds for it and its ingress IP is that of its forwarding rule, of the
/// kind `rbs` says (a backend service, else a target pool): during a switch the status still shows
/// the old kind's IP until the new kind converged.
async fn wait_svc(
    api: &Api<Service>,
    gce: &FakeGce,
    name: &str,
    what: &str,
    rbs: bool,
    done: fn(&Service) -> bool,
) -> Service {
    eventually(what, WAIT, || {
        let api = api.clone();
        async move {
            let s = api.get(name).await.ok().filter(done)?;
            let rule = gce.find("forwardingRules", &lb_name(&s))?;
            let kind_ok = rule[if rbs { "backendService" } else { "target" }].is_string();
            let ip_ok = rule["IPAddress"].as_str() == ingress_ip(&s).as_deref();
            (kind_ok && ip_ok).then_some(s)
        }
    })
    .await
}

fn is_rbs(s: &Service) -> bool {
    finalizers(s) == [V2]
        && ingress_ip(s).is_some()
        && annotations(s).contains_key("service.kubernetes.io/backend-service")
}

fn is_target_pool(s: &Service) -> bool {
    finalizers(s).contains(&V1.to_owned())
        && ingress_ip(s).is_some()
        && !annotations(s)
            .keys()
            .any(|k| k.starts_with("service.kubernetes.io/"))
}

/// The RBS objects of `svc` as `read` describes them.
fn check_rbs_objects(read: &Describe<'_>, gce: &FakeGce, svc: &Service, ip: &str) {
    let lb = lb_name(svc);
    let a = annotations(svc);
    let backend = a["service.kubernetes.io/backend-service"].clone();
    assert!(
        backend.starts_with("k8s2-") && backend.contains("-default-web-"),
        "{backend}"
    );
    assert_eq!(a["service.kubernetes.io/tcp-forwarding-rule"], lb);
    assert_eq!(a["service.kubernetes.io/firewall-rule"], backend);
    let hc = a["service.kubernetes.io/healthcheck"].clone();
    assert!(hc.ends_with("-l4-shared-hc"), "{hc}");
    assert_eq!(
        a["service.kubernetes.io/firewall-rule-for-hc"],
        format!("{hc}-fw")
    );
    assert!(
        gce.names("targetPools").is_empty(),
        "a target pool for an RBS Service"
    );
    assert_eq!(gce.names("backendServices"), std::slice::from_ref(&backend));
    let fr = read.regional("forwarding-rules", "forwardingRules", &lb);
    assert_eq!(fr["IPAddress"], ip);
    assert_eq!(fr["loadBalancingScheme"], "EXTERNAL");
    assert_eq!(fr["portRange"], "80-80");
    assert_eq!(last(&fr["backendService"]), backend);
    assert!(fr["target"].is_null(), "{fr}");
    let bs = read.regional("backend-services", "backendServices", &backend);
    assert_eq!(bs["loadBalancingScheme"], "EXTERNAL");
    assert_eq!(bs["protocol"], "TCP");
    assert_eq!(last(&bs["healthChecks"][0]), hc);
    assert!(
        bs["healthChecks"][0].as_str().unwrap().contains("/regions/"),
        "{bs}"
    );
    assert_eq!(bs["connectionDraining"]["drainingTimeoutSec"], 30);
    let groups: Vec<&str> = bs["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| last(&b["group"]))
        .collect();
    assert!(
        !groups.is_empty() && groups.iter().all(|g| g.starts_with("k8s-ig--")),
        "{groups:?}"
    );
    let check = read.regional("health-checks", "healthChecks", &hc);
    assert_eq!(check["type"], "HTTP");
    assert_eq!(check["httpHealthCheck"]["port"], 10256);
    let fw = read.global("firewall-rules", "firewalls", &backend);
    assert_eq!(fw["destinationRanges"], json!([ip]));
    // ingress-gce writes the Service's protocol as it is ("TCP"); GCE reads it back lowercase.
    assert_eq!(
        fw["allowed"][0]["IPProtocol"]
            .as_str()
            .map(str::to_lowercase)
            .as_deref(),
        Some("tcp")
    );
    assert_eq!(fw["allowed"][0]["ports"], json!(["80"]));
    let hc_fw = read.global("firewall-rules", "firewalls", &format!("{hc}-fw"));
    assert_eq!(hc_fw["allowed"][0]["ports"], json!(["10256"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbs_netlb_is_built_switched_to_a_target_pool_and_back_and_deleted_without_leaks() {
    let rig = Rig::start(&[ZONE, ZONE_C], &["--rbs-netlb"]).await;
    let (gce, services) = (&rig.gce, &rig.services);
    services
        .create(&PostParams::default(), &rbs_service("web", &[80]))
        .await
        .unwrap();

    let svc = wait_svc(services, gce, "web", "an RBS NetLB for web", true, is_rbs).await;
    let ip = ingress_ip(&svc).unwrap();
    // The real gcloud reads the RBS objects here; the switches below rebuild the same objects,
    // read from the fake's REST API (what gcloud's describe sends).
    let gcloud = Describe::gcloud_or_rest(gce, "the gcloud read-back of the RBS NetLB");
    check_rbs_objects(&gcloud, gce, &svc, &ip);
    let rbs_objects = everything(gce);

    // RBS -> target pool: the RBS objects go first, every one of them.
    let off = json!({"metadata": {"annotations": {RBS: null}}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&off))
        .await
        .unwrap();
    let svc = wait_svc(
        services,
        gce,
        "web",
        "web on a target pool",
        false,
        is_target_pool,
    )
    .await;
    let lb = lb_name(&svc);
    assert_eq!(gce.names("targetPools"), std::slice::from_ref(&lb));
    let left: Vec<&String> = rbs_objects
        .iter()
        .filter(|o| everything(gce).contains(o) && !o.ends_with(&format!("/{lb}")))
        .collect();
    assert!(left.is_empty(), "RBS objects left after the switch: {left:?}");
    for k in ["backendServices", "regionHealthChecks", "instanceGroups"] {
        assert!(gce.names(k).is_empty(), "{k}: {:?}", gce.names(k));
    }
    let tp_objects = everything(gce);

    // Target pool -> RBS: the target-pool objects go first.
    let on = json!({"metadata": {"annotations": {RBS: "enabled"}}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&on))
        .await
        .unwrap();
    let svc = wait_svc(services, gce, "web", "web back on RBS", true, is_rbs).await;
    let ip = ingress_ip(&svc).unwrap();
    check_rbs_objects(&Describe::Rest(gce), gce, &svc, &ip);
    for k in ["targetPools", "httpHealthChecks"] {
        assert!(gce.names(k).is_empty(), "{k}: {:?}", gce.names(k));
    }
    let now = everything(gce);
    let left: Vec<&String> = tp_objects
        .iter()
        .filter(|o| now.contains(o) && !o.ends_with(&format!("/{lb}")))
        .collect();
    assert!(
        left.is_empty(),
        "target-pool objects left after the switch: {left:?}"
    );

    delete_and_wait(services, &["web"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_flag_an_rbs_service_is_left_alone() {
    let rig = Rig::start(&[ZONE], &[]).await;
    let (gce, services) = (&rig.gce, &rig.services);
    services
        .create(&PostParams::default(), &rbs_service("web", &[80]))
        .await
        .unwrap();
    // A target-pool Service beside it shows the controller is running and synced.
    services
        .create(&PostParams::default(), &lb_service("other", &[81]))
        .await
        .unwrap();
    wait_ingress(&rig.client, "other").await;
    let svc = services.get("web").await.unwrap();
    assert!(finalizers(&svc).is_empty(), "{:?}", finalizers(&svc));
    assert!(ingress_ip(&svc).is_none());
    for k in ["backendServices", "regionHealthChecks"] {
        assert!(gce.names(k).is_empty(), "{k}: {:?}", gce.names(k));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_to_rbs_and_back_then_rbs_to_cluster_ip() {
    // One control plane for both: each starts and ends with nothing in the fake.
    let rig = Rig::start(&[ZONE], &["--rbs-netlb"]).await;
    internal_to_rbs_and_back_leaves_nothing_of_the_old_kind(&rig).await;
    rbs_to_cluster_ip_removes_the_lb_finalizer_annotations_and_status(&rig).await;
}

async fn internal_to_rbs_and_back_leaves_nothing_of_the_old_kind(rig: &Rig) {
    let (gce, services) = (&rig.gce, &rig.services);
    let mut svc = lb_service("web", &[80]);
    svc.metadata.annotations = Some([(ILB.to_owned(), "Internal".to_owned())].into());
    services.create(&PostParams::default(), &svc).await.unwrap();
    let (svc, _) = wait_ingress(&rig.client, "web").await;
    let lb = lb_name(&svc);
    assert_eq!(gce.names("backendServices"), std::slice::from_ref(&lb));
    let ilb_objects = everything(gce);

    // Internal -> RBS: the internal LB goes first (its finalizers too); the groups are shared.
    let to_rbs = json!({"metadata": {"annotations": {ILB: null, RBS: "enabled"}}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&to_rbs))
        .await
        .unwrap();
    let svc = wait_svc(services, gce, "web", "web on RBS", true, is_rbs).await;
    check_rbs_objects(&Describe::Rest(gce), gce, &svc, &ingress_ip(&svc).unwrap());
    let now = everything(gce);
    let left: Vec<&String> = ilb_objects
        .iter()
        .filter(|o| now.contains(o) && !o.starts_with("instanceGroups/") && !o.ends_with(&format!("/{lb}")))
        .collect();
    assert!(
        left.is_empty(),
        "internal LB objects left after the switch: {left:?}"
    );
    assert!(
        gce.names("healthChecks").is_empty(),
        "{:?}",
        gce.names("healthChecks")
    );
    assert!(
        !gce.names("backendServices").contains(&lb),
        "the internal backend service is left"
    );

    // RBS -> internal: the RBS objects go first.
    let to_ilb = json!({"metadata": {"annotations": {ILB: "Internal", RBS: null}}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&to_ilb))
        .await
        .unwrap();
    eventually("web internal again", WAIT, || {
        let services = services.clone();

        let lb = lb.clone();
        async move {
            let s = services.get("web").await.ok()?;
            let rule = gce.find("forwardingRules", &lb)?;
            let internal = rule["loadBalancingScheme"] == "INTERNAL"
                && rule["IPAddress"].as_str() == ingress_ip(&s).as_deref();
            (internal && finalizers(&s).contains(&ILB_V1.to_owned())).then_some(())
        }
    })
    .await;
    for k in ["regionHealthChecks", "targetPools"] {
        assert!(gce.names(k).is_empty(), "{k}: {:?}", gce.names(k));
    }
    assert!(
        !gce.names("firewalls").iter().any(|f| f.starts_with("k8s2-")),
        "{:?}",
        gce.names("firewalls")
    );
    delete_and_wait(services, &["web"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
}

async fn rbs_to_cluster_ip_removes_the_lb_finalizer_annotations_and_status(rig: &Rig) {
    assert_eq!(everything(&rig.gce), Vec::<String>::new());
    let (gce, services) = (&rig.gce, &rig.services);
    services
        .create(&PostParams::default(), &rbs_service("web", &[80]))
        .await
        .unwrap();
    wait_svc(services, gce, "web", "an RBS NetLB for web", true, is_rbs).await;
    let to_cluster_ip = json!({"spec": {"type": "ClusterIP"}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&to_cluster_ip))
        .await
        .unwrap();
    let svc = eventually("web released", WAIT, || {
        let services = services.clone();
        async move {
            let s = services.get("web").await.ok()?;
            let done = finalizers(&s).is_empty() && ingress_ip(&s).is_none();
            done.then_some(s)
        }
    })
    .await;
    let left: Vec<String> = annotations(&svc)
        .into_keys()
        .filter(|k| k.starts_with("service.kubernetes.io/"))
        .collect();
    assert!(left.is_empty(), "status annotations left: {left:?}");
    assert_eq!(everything(gce), Vec::<String>::new());
}
