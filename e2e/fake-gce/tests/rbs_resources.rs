//! The resources of backend-service-based external network load balancers (RBS NetLB, as GKE's
//! controller builds them), over HTTP: regional health checks (`regions/R/healthChecks`, apart from
//! the global ones of the same name), EXTERNAL regional backend services (one regional check,
//! backends balanced by connection) and EXTERNAL forwarding rules pointing at them.

mod common;

use common::{Fake, REGION, ZONE_B, reason};
use serde_json::{Value, json};

fn http_check(name: &str, port: u16) -> Value {
    json!({"name": name, "type": "HTTP", "checkIntervalSec": 8, "timeoutSec": 1,
           "healthyThreshold": 1, "unhealthyThreshold": 3,
           "httpHealthCheck": {"port": port, "requestPath": "/healthz"}})
}

#[test]
fn regional_health_checks_are_their_own_collection() {
    let fake = Fake::start(&[]);
    let regional = fake.api(&format!("regions/{REGION}/healthChecks"));
    let global = fake.api("global/healthChecks");
    fake.mutate_ok("POST", &regional, &http_check("hc", 10256));
    // The same name globally is another object.
    fake.mutate_ok("POST", &global, &http_check("hc", 9999));
    let hc = fake.get(&format!("{regional}/hc")).1;
    assert_eq!(hc["kind"], "compute#healthCheck");
    assert_eq!(hc["region"], fake.link(&format!("regions/{REGION}")));
    assert_eq!(
        hc["selfLink"],
        fake.link(&format!("regions/{REGION}/healthChecks/hc"))
    );
    assert_eq!(hc["httpHealthCheck"]["port"], 10256);
    assert_eq!(
        fake.get(&format!("{global}/hc")).1["httpHealthCheck"]["port"],
        9999
    );
    let listed = fake.get(&regional).1;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
    // Updates go to the regional one only.
    let mut upd = http_check("hc", 31000);
    upd["checkIntervalSec"] = json!(3);
    fake.mutate_ok("PUT", &format!("{regional}/hc"), &upd);
    assert_eq!(fake.get(&format!("{regional}/hc")).1["checkIntervalSec"], 3);
    assert_eq!(fake.get(&format!("{global}/hc")).1["checkIntervalSec"], 8);
    // The state dump keeps them apart.
    let state = fake.admin("GET", "state", None);
    assert_eq!(state["regionHealthChecks"][0]["httpHealthCheck"]["port"], 31000);
    assert_eq!(state["healthChecks"][0]["httpHealthCheck"]["port"], 9999);
    // The aggregated list carries both, keyed by scope as GCE's.
    let (code, agg) = fake.get(&fake.api("aggregated/healthChecks"));
    assert_eq!(code, 200, "{agg}");
    assert_eq!(agg["kind"], "compute#healthCheckAggregatedList");
    assert_eq!(
        agg["items"]["global"]["healthChecks"][0]["httpHealthCheck"]["port"], 9999,
        "{agg}"
    );
    assert_eq!(
        agg["items"][format!("regions/{REGION}")]["healthChecks"][0]["httpHealthCheck"]["port"],
        31000,
        "{agg}"
    );
    fake.mutate_ok("DELETE", &format!("{regional}/hc"), &Value::Null);
    assert_eq!(fake.get(&format!("{regional}/hc")).0, 404);
    assert_eq!(fake.get(&format!("{global}/hc")).0, 200);
}

#[test]
fn external_backend_service_and_rule() {
    let fake = Fake::start(&[]);
    fake.add_instance("n1", ZONE_B, &[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    let igs = fake.api(&format!("zones/{ZONE_B}/instanceGroups"));
    fake.mutate_ok("POST", &igs, &json!({"name": "ig"}));
    fake.mutate_ok("POST", &r("healthChecks"), &http_check("rhc", 10256));
    fake.mutate_ok(
        "POST",
        &fake.api("global/healthChecks"),
        &http_check("ghc", 10256),
    );

    let bss = r("backendServices");
    let group = fake.link(&format!("zones/{ZONE_B}/instanceGroups/ig"));
    let bs = |hcs: Value| {
        json!({"name": "bs", "loadBalancingScheme": "EXTERNAL", "protocol": "TCP",
               "healthChecks": hcs, "backends": [{"group": group}],
               "connectionDraining": {"drainingTimeoutSec": 30}})
    };
    // EXTERNAL needs exactly one check, and a regional one.
    for hcs in [
        json!([]),
        json!([fake.link("global/healthChecks/ghc")]),
        json!([
            fake.link(&format!("regions/{REGION}/healthChecks/rhc")),
            fake.link("global/healthChecks/ghc")
        ]),
    ] {
        let (s, e) = fake.post(&bss, &bs(hcs.clone()));
        assert_eq!((s, reason(&e)), (400, "invalid"), "{hcs}: {e}");
    }
    let (s, _) = fake.post(
        &bss,
        &bs(json!([
            fake.link(&format!("regions/{REGION}/healthChecks/missing"))
        ])),
    );
    assert_eq!(s, 404);
    fake.mutate_ok(
        "POST",
        &bss,
        &bs(json!([fake.link(&format!("regions/{REGION}/healthChecks/rhc"))])),
    );
    let got = fake.get(&format!("{bss}/bs")).1;
    assert_eq!(got["loadBalancingScheme"], "EXTERNAL");
    assert_eq!(got["backends"][0]["balancingMode"], "CONNECTION");
    assert_eq!(got["connectionDraining"]["drainingTimeoutSec"], 30);

    // An INTERNAL rule cannot use it; an EXTERNAL one gets an external IP and the tier.
    let frs = r("forwardingRules");
    let bs_link = fake.link(&format!("regions/{REGION}/backendServices/bs"));
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "INTERNAL", "backendService": bs_link, "ports": ["80"]}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    fake.mutate_ok(
        "POST",
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "EXTERNAL", "IPProtocol": "TCP",
                "portRange": "80-81", "backendService": bs_link}),
    );
    let fr = fake.get(&format!("{frs}/fr")).1;
    assert!(
        fr["IPAddress"]
            .as_str()
            .unwrap_or_default()
            .starts_with("203.0.113."),
        "{fr}"
    );
    assert_eq!(fr["networkTier"], "PREMIUM");
    assert_eq!(fr["backendService"], bs_link);
    assert!(
        fr.get("target").is_none() && fr.get("subnetwork").is_none(),
        "{fr}"
    );

    // In use: the rule holds the backend service, which holds the regional check and the group.
    for (path, noun) in [
        (format!("{bss}/bs"), "backend_service"),
        (format!("{}/rhc", r("healthChecks")), "health_check"),
        (format!("{igs}/ig"), "instance_group"),
    ] {
        let (s, e) = fake.call("DELETE", &path, None);
        assert_eq!(
            (s, reason(&e)),
            (400, "resourceInUseByAnotherResource"),
            "{path}: {e}"
        );
        assert!(
            e["error"]["message"].as_str().unwrap_or_default().contains(noun),
            "{e}"
        );
    }
    // The global check of another name was never in use.
    fake.mutate_ok("DELETE", &fake.api("global/healthChecks/ghc"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{frs}/fr"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{bss}/bs"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{}/rhc", r("healthChecks")), &Value::Null);
}

#[test]
fn internal_backend_service_may_use_a_regional_check() {
    let fake = Fake::start(&[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    fake.mutate_ok("POST", &r("healthChecks"), &http_check("rhc", 10256));
    fake.mutate_ok(
        "POST",
        &r("backendServices"),
        &json!({"name": "ilb", "loadBalancingScheme": "INTERNAL",
                "healthChecks": [format!("regions/{REGION}/healthChecks/rhc")]}),
    );
    let bs = fake.get(&format!("{}/ilb", r("backendServices"))).1;
    assert_eq!(
        bs["healthChecks"][0],
        fake.link(&format!("regions/{REGION}/healthChecks/rhc"))
    );
}

/// Mixed protocols (an L3_DEFAULT rule over an UNSPECIFIED backend service) and weighted load
/// balancing (`localityLbPolicy: WEIGHTED_MAGLEV`), accepted and refused as GCE does.
#[test]
fn l3_default_rules_and_weighted_maglev() {
    let fake = Fake::start(&[]);
    fake.add_instance("n1", ZONE_B, &[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    fake.mutate_ok(
        "POST",
        &fake.api(&format!("zones/{ZONE_B}/instanceGroups")),
        &json!({"name": "ig"}),
    );
    fake.mutate_ok("POST", &r("healthChecks"), &http_check("rhc", 31000));
    let hc = fake.link(&format!("regions/{REGION}/healthChecks/rhc"));
    let group = fake.link(&format!("zones/{ZONE_B}/instanceGroups/ig"));
    let bs = |name: &str, scheme: &str, policy: &str| {
        json!({"name": name, "loadBalancingScheme": scheme, "protocol": "UNSPECIFIED",
               "healthChecks": [hc], "backends": [{"group": group}], "localityLbPolicy": policy})
    };
    let bss = r("backendServices");
    for (scheme, policy) in [("EXTERNAL", "FASTEST"), ("INTERNAL", "WEIGHTED_MAGLEV")] {
        let (s, e) = fake.post(&bss, &bs("bad", scheme, policy));
        assert_eq!((s, reason(&e)), (400, "invalid"), "{scheme} {policy}: {e}");
    }
    fake.mutate_ok("POST", &bss, &bs("bs", "EXTERNAL", "WEIGHTED_MAGLEV"));
    let got = fake.get(&format!("{bss}/bs")).1;
    assert_eq!(
        (got["protocol"].as_str(), got["localityLbPolicy"].as_str()),
        (Some("UNSPECIFIED"), Some("WEIGHTED_MAGLEV"))
    );

    let frs = r("forwardingRules");
    let bs_link = fake.link(&format!("regions/{REGION}/backendServices/bs"));
    let rule = |proto: &str, extra: Value| {
        let mut v = json!({"name": "fr", "loadBalancingScheme": "EXTERNAL", "IPProtocol": proto,
                           "backendService": bs_link});
        if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
            v.extend(extra);
        }
        v
    };
    for (proto, extra) in [
        // L3_DEFAULT needs allPorts, and allPorts excludes a range.
        ("L3_DEFAULT", json!({})),
        ("L3_DEFAULT", json!({"allPorts": true, "portRange": "80-80"})),
        // A TCP rule cannot use an UNSPECIFIED backend service on EXTERNAL.
        ("TCP", json!({"portRange": "80-80"})),
    ] {
        let (s, e) = fake.post(&frs, &rule(proto, extra.clone()));
        assert_eq!((s, reason(&e)), (400, "invalid"), "{proto} {extra}: {e}");
    }
    fake.mutate_ok("POST", &frs, &rule("L3_DEFAULT", json!({"allPorts": true})));
    let fr = fake.get(&format!("{frs}/fr")).1;
    assert_eq!(fr["IPProtocol"], "L3_DEFAULT");
    assert_eq!(fr["allPorts"], true);
    assert!(fr.get("portRange").is_none(), "{fr}");
}
