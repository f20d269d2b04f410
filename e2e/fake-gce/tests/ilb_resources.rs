//! The resources internal load balancers use, over HTTP as the official clients send them:
//! zonal instanceGroups (insert/get/delete/addInstances/removeInstances/listInstances),
//! regionBackendServices, healthChecks, and INTERNAL forwarding rules, with GCE's errors.

mod common;

use common::{Fake, REGION, ZONE_B, ZONE_C, reason};
use serde_json::{Value, json};

fn calls(fake: &Fake) -> (u64, u64) {
    let v = fake.admin("GET", "calls", None);
    (
        v["total"].as_u64().unwrap_or(0),
        v["mutating"].as_u64().unwrap_or(0),
    )
}

#[test]
fn instance_groups_members_and_errors() {
    let fake = Fake::start(&[]);
    fake.add_instance("n1", ZONE_B, &[]);
    fake.add_instance("n2", ZONE_B, &[]);
    fake.add_instance("n3", ZONE_C, &[]);
    let igs = fake.api(&format!("zones/{ZONE_B}/instanceGroups"));
    fake.mutate_ok("POST", &igs, &json!({"name": "k8s-ig--abc"}));
    let (s, ig) = fake.get(&format!("{igs}/k8s-ig--abc"));
    assert_eq!(s, 200);
    assert_eq!(ig["kind"], "compute#instanceGroup");
    assert_eq!(ig["size"], 0);
    assert_eq!(ig["zone"], fake.link(&format!("zones/{ZONE_B}")));
    assert!(ig.get("_members").is_none(), "bookkeeping leaked: {ig}");

    let add = format!("{igs}/k8s-ig--abc/addInstances");
    let inst = |z: &str, n: &str| json!({"instance": fake.link(&format!("zones/{z}/instances/{n}"))});
    fake.mutate_ok(
        "POST",
        &add,
        &json!({"instances": [inst(ZONE_B, "n2"), inst(ZONE_B, "n1")]}),
    );
    // Twice: memberAlreadyExists. Another zone's instance: invalid. Unknown instance: 404.
    let (s, e) = fake.post(&add, &json!({"instances": [inst(ZONE_B, "n1")]}));
    assert_eq!((s, reason(&e)), (400, "memberAlreadyExists"), "{e}");
    let (s, e) = fake.post(&add, &json!({"instances": [inst(ZONE_C, "n3")]}));
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    let (s, _) = fake.post(&add, &json!({"instances": [inst(ZONE_B, "nope")]}));
    assert_eq!(s, 404);

    // listInstances is a POST that reads: not counted as a mutation.
    fake.admin("DELETE", "calls", None);
    let (s, list) = fake.post(
        &format!("{igs}/k8s-ig--abc/listInstances"),
        &json!({"instanceState": "ALL"}),
    );
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["kind"], "compute#instanceGroupsListInstances");
    let got: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["instance"])
        .collect();
    assert_eq!(
        got,
        [
            &json!(fake.link(&format!("zones/{ZONE_B}/instances/n1"))),
            &json!(fake.link(&format!("zones/{ZONE_B}/instances/n2")))
        ]
    );
    assert_eq!(list["items"][0]["status"], "RUNNING");
    assert_eq!(calls(&fake).1, 0);
    assert_eq!(fake.get(&format!("{igs}/k8s-ig--abc")).1["size"], 2);

    let remove = format!("{igs}/k8s-ig--abc/removeInstances");
    fake.mutate_ok("POST", &remove, &json!({"instances": [inst(ZONE_B, "n1")]}));
    let (s, e) = fake.post(&remove, &json!({"instances": [inst(ZONE_B, "n1")]}));
    assert_eq!((s, reason(&e)), (400, "memberNotFound"), "{e}");
    assert_eq!(fake.get(&format!("{igs}/k8s-ig--abc")).1["size"], 1);

    // Aggregated list keyed by zone, without bookkeeping.
    let (s, agg) = fake.get(&fake.api("aggregated/instanceGroups"));
    assert_eq!(s, 200);
    let zb = &agg["items"][format!("zones/{ZONE_B}")]["instanceGroups"][0];
    assert_eq!(zb["name"], "k8s-ig--abc");
    assert!(zb.get("_members").is_none());
    fake.mutate_ok("DELETE", &format!("{igs}/k8s-ig--abc"), &Value::Null);
    assert_eq!(fake.get(&format!("{igs}/k8s-ig--abc")).0, 404);
}

#[test]
fn backend_services_health_checks_and_internal_rules() {
    let fake = Fake::start(&[]);
    fake.add_instance("n1", ZONE_B, &[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    let igs = fake.api(&format!("zones/{ZONE_B}/instanceGroups"));
    fake.mutate_ok("POST", &igs, &json!({"name": "ig"}));

    // Health checks: a type is required; HTTP settings get GCE's defaults.
    let hcs = fake.api("global/healthChecks");
    let (s, e) = fake.post(&hcs, &json!({"name": "hc"}));
    assert_eq!((s, reason(&e)), (400, "required"), "{e}");
    fake.mutate_ok(
        "POST",
        &hcs,
        &json!({"name": "hc", "type": "HTTP", "checkIntervalSec": 8, "timeoutSec": 1,
                "healthyThreshold": 1, "unhealthyThreshold": 3,
                "httpHealthCheck": {"port": 10256, "requestPath": "/healthz"}}),
    );
    let hc = fake.get(&format!("{hcs}/hc")).1;
    assert_eq!(hc["kind"], "compute#healthCheck");
    assert_eq!(hc["httpHealthCheck"]["port"], 10256);
    assert_eq!(hc["httpHealthCheck"]["proxyHeader"], "NONE");

    // Backend services: INTERNAL needs exactly one health check; groups must exist.
    let bss = r("backendServices");
    let (s, e) = fake.post(&bss, &json!({"name": "bs", "loadBalancingScheme": "INTERNAL"}));
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    let (s, _) = fake.post(
        &bss,
        &json!({"name": "bs", "loadBalancingScheme": "INTERNAL", "healthChecks": ["global/healthChecks/hc"],
                "backends": [{"group": format!("zones/{ZONE_B}/instanceGroups/missing")}]}),
    );
    assert_eq!(s, 404);
    let body = json!({"name": "bs", "loadBalancingScheme": "INTERNAL", "protocol": "TCP",
        "healthChecks": [fake.link("global/healthChecks/hc")],
        "backends": [{"group": fake.link(&format!("zones/{ZONE_B}/instanceGroups/ig"))}]});
    fake.mutate_ok("POST", &bss, &body);
    let bs = fake.get(&format!("{bss}/bs")).1;
    assert_eq!(bs["kind"], "compute#backendService");
    assert_eq!(bs["sessionAffinity"], "NONE");
    assert_eq!(bs["backends"][0]["balancingMode"], "CONNECTION");
    assert_eq!(bs["region"], fake.link(&format!("regions/{REGION}")));
    let fp = bs["fingerprint"].as_str().unwrap().to_owned();
    // Update: a stale or missing fingerprint is refused (412), the current one accepted.
    let (s, e) = fake.call("PUT", &format!("{bss}/bs"), Some(&body));
    assert_eq!((s, reason(&e)), (412, "conditionNotMet"), "{e}");
    let mut upd = body.clone();
    upd["fingerprint"] = json!(fp);
    upd["sessionAffinity"] = json!("CLIENT_IP");
    fake.mutate_ok("PUT", &format!("{bss}/bs"), &upd);
    let bs2 = fake.get(&format!("{bss}/bs")).1;
    assert_eq!(bs2["sessionAffinity"], "CLIENT_IP");
    assert_ne!(bs2["fingerprint"], json!(fp));

    // Internal rules: subnetwork defaulted from the network, ports listed, no tier.
    let frs = r("forwardingRules");
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "INTERNAL", "backendService": fake.link(&format!("regions/{REGION}/backendServices/bs")),
                "ports": ["1", "2", "3", "4", "5", "6"], "IPProtocol": "TCP"}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "INTERNAL", "backendService": "bs",
                "ports": ["80"], "allPorts": true}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "fr", "backendService": "bs", "ports": ["80"], "allowGlobalAccess": true}),
    );
    assert_eq!(
        (s, reason(&e)),
        (400, "invalid"),
        "EXTERNAL rule with global access: {e}"
    );
    fake.mutate_ok(
        "POST",
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "INTERNAL", "IPProtocol": "TCP",
                "backendService": fake.link(&format!("regions/{REGION}/backendServices/bs")),
                "ports": ["80", "443"], "allowGlobalAccess": true,
                "network": fake.link("global/networks/default")}),
    );
    let fr = fake.get(&format!("{frs}/fr")).1;
    assert_eq!(
        fr["subnetwork"],
        fake.link(&format!("regions/{REGION}/subnetworks/default"))
    );
    assert!(fr["IPAddress"].as_str().unwrap().starts_with("10.128."), "{fr}");
    assert!(
        fr.get("networkTier").is_none() && fr.get("target").is_none(),
        "{fr}"
    );
    assert_eq!(fr["allowGlobalAccess"], true);

    // In use: the rule holds the backend service, which holds the check and the group.
    for (path, noun) in [
        (format!("{bss}/bs"), "backend_service"),
        (format!("{hcs}/hc"), "health_check"),
        (format!("{igs}/ig"), "instance_group"),
    ] {
        let (s, e) = fake.call("DELETE", &path, None);
        assert_eq!(
            (s, reason(&e)),
            (400, "resourceInUseByAnotherResource"),
            "{path}: {e}"
        );
        assert!(e["error"]["message"].as_str().unwrap().contains(noun), "{e}");
    }
    fake.mutate_ok("DELETE", &format!("{frs}/fr"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{bss}/bs"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{hcs}/hc"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{igs}/ig"), &Value::Null);
}
