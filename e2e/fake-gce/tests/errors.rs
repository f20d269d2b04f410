//! Error behaviour over plain HTTP: Google's error shape, codes and reasons for validation,
//! conflicts, referential integrity, quotas, rate limits and injected faults.
mod common;

use common::{Fake, REGION, ZONE_B, reason};
use serde_json::{Value, json};

fn fw(name: &str) -> Value {
    json!({"name": name, "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}]})
}

#[test]
fn validation_errors_are_400_invalid() {
    let fake = Fake::start(&[]);
    let path = fake.api("global/firewalls");
    let cases = [
        json!({"name": "Bad_Name", "allowed": [{"IPProtocol": "tcp"}]}),
        json!({"name": "-x", "allowed": [{"IPProtocol": "tcp"}]}),
        json!({"name": "ok", "allowed": [{"IPProtocol": "tcp", "ports": ["90-80"]}]}),
        json!({"name": "ok", "allowed": [{"IPProtocol": "tcp", "ports": ["70000"]}]}),
        json!({"name": "ok", "allowed": [{"IPProtocol": "bogus"}]}),
        json!({"name": "ok", "allowed": [{"IPProtocol": "tcp"}], "sourceRanges": ["10.0.0.0/99"]}),
        json!({"name": "ok", "allowed": [{"IPProtocol": "icmp", "ports": ["80"]}]}),
    ];
    for body in cases {
        let (s, v) = fake.post(&path, &body);
        assert_eq!((s, reason(&v)), (400, "invalid"), "{body} -> {v}");
        assert_eq!(v["error"]["code"], 400);
        assert_eq!(v["error"]["errors"][0]["domain"], "global");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (s, v) = fake.post(
        &fake.api("global/routes"),
        &json!({"name": "r", "network": "global/networks/default",
        "destRange": "10.0.0.0/33", "nextHopIp": "10.0.0.1"}),
    );
    assert_eq!((s, reason(&v)), (400, "invalid"), "{v}");
    let (s, v) = fake.post(
        &fake.api(&format!("regions/{REGION}/forwardingRules")),
        &json!({"name": "fr", "IPProtocol": "GRE", "portRange": "80"}),
    );
    assert_eq!((s, reason(&v)), (400, "invalid"), "{v}");
    let (s, v) = fake.call("POST", &path, None);
    assert_eq!((s, reason(&v)), (400, "required"), "{v}");
    let (s, _) = fake.post(&path, &fw("ok"));
    assert_eq!(s, 200, "a valid rule still goes through");
}

#[test]
fn not_found_and_already_exists() {
    let fake = Fake::start(&[]);
    let (s, v) = fake.get(&fake.api("global/firewalls/none"));
    assert_eq!((s, reason(&v)), (404, "notFound"));
    assert_eq!(
        v["error"]["message"],
        format!(
            "The resource 'projects/{}/global/firewalls/none' was not found",
            fake.project
        )
    );
    fake.mutate_ok("POST", &fake.api("global/firewalls"), &fw("a"));
    let (s, v) = fake.post(&fake.api("global/firewalls"), &fw("a"));
    assert_eq!((s, reason(&v)), (409, "alreadyExists"));
    let (s, v) = fake.call("DELETE", &fake.api("global/firewalls/none"), None);
    assert_eq!((s, reason(&v)), (404, "notFound"));
    // References to missing resources are 404 too.
    let (s, v) = fake.post(
        &fake.api(&format!("regions/{REGION}/targetPools")),
        &json!({"name": "tp", "instances": [format!("zones/{ZONE_B}/instances/ghost")]}),
    );
    assert_eq!((s, reason(&v)), (404, "notFound"), "{v}");
    let (s, _) = fake.get("/compute/v1/projects/other-project/global/firewalls");
    assert_eq!(s, 404);
}

#[test]
fn in_use_and_membership_errors() {
    let fake = Fake::start(&[]);
    fake.add_instance("n1", ZONE_B, &[]);
    fake.add_instance("n2", ZONE_B, &[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    fake.mutate_ok(
        "POST",
        &fake.api("global/httpHealthChecks"),
        &json!({"name": "hc", "port": 10256}),
    );
    fake.mutate_ok("POST", &r("targetPools"), &json!({"name": "tp",
        "instances": [format!("zones/{ZONE_B}/instances/n1")], "healthChecks": ["global/httpHealthChecks/hc"]}));
    fake.mutate_ok(
        "POST",
        &r("addresses"),
        &json!({"name": "ip", "address": "203.0.113.50"}),
    );
    fake.mutate_ok(
        "POST",
        &r("forwardingRules"),
        &json!({"name": "fr", "IPAddress": "203.0.113.50",
        "portRange": "80", "target": format!("regions/{REGION}/targetPools/tp")}),
    );

    for (path, what) in [
        (r("targetPools/tp"), "targetPools/tp"),
        (fake.api("global/httpHealthChecks/hc"), "httpHealthChecks/hc"),
    ] {
        let (s, v) = fake.call("DELETE", &path, None);
        assert_eq!(
            (s, reason(&v)),
            (400, "resourceInUseByAnotherResource"),
            "{what}: {v}"
        );
        assert!(v["error"]["message"].as_str().unwrap_or("").contains(what), "{v}");
    }
    // An address in use is released, not refused: the rule keeps the IP, now ephemeral.
    let (s, v) = fake.call("DELETE", &r("addresses/ip"), None);
    assert_eq!(s, 200, "{v}");
    let (_, fr) = fake.get(&r("forwardingRules/fr"));
    assert_eq!(fr["IPAddress"], "203.0.113.50", "{fr}");
    // Same IP, same protocol, overlapping ports: conflict.
    let (s, v) = fake.post(
        &r("forwardingRules"),
        &json!({"name": "fr2", "IPAddress": "203.0.113.50",
        "portRange": "80-90", "target": format!("regions/{REGION}/targetPools/tp")}),
    );
    assert_eq!((s, reason(&v)), (400, "invalid"), "{v}");
    // removeInstance of a non-member.
    let (s, v) = fake.post(
        &r("targetPools/tp/removeInstance"),
        &json!({"instances": [{"instance": format!("zones/{ZONE_B}/instances/n2")}]}),
    );
    assert_eq!((s, reason(&v)), (400, "invalid"), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("is not a member"),
        "{v}"
    );
    // setTags with a stale fingerprint.
    let (s, v) = fake.post(
        &fake.api(&format!("zones/{ZONE_B}/instances/n1/setTags")),
        &json!({"items": ["x"], "fingerprint": "stale"}),
    );
    assert_eq!((s, reason(&v)), (412, "conditionNotMet"), "{v}");

    // Tear down in the right order works.
    fake.mutate_ok("DELETE", &r("forwardingRules/fr"), &Value::Null);
    fake.mutate_ok("DELETE", &r("targetPools/tp"), &Value::Null);
    fake.mutate_ok("DELETE", &fake.api("global/httpHealthChecks/hc"), &Value::Null);
}

/// A health check shared by several target pools (the cloud controller's node health check)
/// cannot be deleted while any pool references it, however the reference was written; the
/// refusal changes nothing and names a pool still using it; the last reference gone, it can.
#[test]
fn shared_health_check_delete_is_refused_until_no_pool_uses_it() {
    let fake = Fake::start(&[]);
    fake.add_instance("n1", ZONE_B, &[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    let hc = fake.api("global/httpHealthChecks/node-hc");
    fake.mutate_ok(
        "POST",
        &fake.api("global/httpHealthChecks"),
        &json!({"name": "node-hc", "port": 10256}),
    );
    // One pool references it on insert (relative), the other through addHealthCheck (full URL
    // of Google's host, as clients send it).
    fake.mutate_ok(
        "POST",
        &r("targetPools"),
        &json!({"name": "tp-a", "healthChecks": ["global/httpHealthChecks/node-hc"]}),
    );
    fake.mutate_ok("POST", &r("targetPools"), &json!({"name": "tp-b"}));
    let google = format!(
        "https://www.googleapis.com/compute/v1/projects/{}/global/httpHealthChecks/node-hc",
        fake.project
    );
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp-b/addHealthCheck"),
        &json!({"healthChecks": [{"healthCheck": google}]}),
    );
    let refused = |user: &str| {
        let (s, v) = fake.call("DELETE", &hc, None);
        assert_eq!((s, reason(&v)), (400, "resourceInUseByAnotherResource"), "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains("httpHealthChecks/node-hc"), "{v}");
        assert!(msg.contains(&format!("targetPools/{user}")), "{v}");
        let (s, v) = fake.get(&hc);
        assert_eq!(
            (s, v["port"].as_i64()),
            (200, Some(10256)),
            "refusal changed nothing"
        );
    };
    refused("tp-a");
    fake.mutate_ok("DELETE", &r("targetPools/tp-a"), &Value::Null);
    refused("tp-b");
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp-b/removeHealthCheck"),
        &json!({"healthChecks": [{"healthCheck": "global/httpHealthChecks/node-hc"}]}),
    );
    fake.mutate_ok("DELETE", &hc, &Value::Null);
    let (s, v) = fake.get(&hc);
    assert_eq!((s, reason(&v)), (404, "notFound"), "{v}");
}

#[test]
fn quotas_are_403_quota_exceeded() {
    let fake = Fake::start(&[]);
    fake.admin(
        "POST",
        "quotas",
        Some(&json!({"FIREWALLS": 2, "STATIC_ADDRESSES": 1})),
    );
    fake.mutate_ok("POST", &fake.api("global/firewalls"), &fw("a"));
    fake.mutate_ok("POST", &fake.api("global/firewalls"), &fw("b"));
    let (s, v) = fake.post(&fake.api("global/firewalls"), &fw("c"));
    assert_eq!((s, reason(&v)), (403, "quotaExceeded"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap_or("").contains("FIREWALLS"));
    let addrs = fake.api(&format!("regions/{REGION}/addresses"));
    fake.mutate_ok("POST", &addrs, &json!({"name": "a1"}));
    let (s, v) = fake.post(&addrs, &json!({"name": "a2"}));
    assert_eq!((s, reason(&v)), (403, "quotaExceeded"), "{v}");
    // Freeing one makes room; lifting the quota makes room.
    fake.mutate_ok("DELETE", &fake.api("global/firewalls/a"), &Value::Null);
    fake.mutate_ok("POST", &fake.api("global/firewalls"), &fw("c"));
    fake.admin("POST", "quotas", Some(&json!({"STATIC_ADDRESSES": null})));
    fake.mutate_ok("POST", &addrs, &json!({"name": "a2"}));
    let region = fake.get(&fake.api(&format!("regions/{REGION}"))).1;
    assert!(
        region["quotas"].as_array().is_some_and(|q| q
            .iter()
            .any(|m| m["metric"] == "STATIC_ADDRESSES" && m["usage"] == 2.0)),
        "{region}"
    );
}

#[test]
fn rate_limit_is_403_rate_limit_exceeded() {
    let fake = Fake::start(&[]);
    fake.admin("POST", "rate-limit", Some(&json!({"perSecond": 1})));
    let statuses: Vec<(u16, String)> = (0..4)
        .map(|_| {
            let (s, v) = fake.get(&fake.api("global/firewalls"));
            (s, reason(&v).to_string())
        })
        .collect();
    let limited: Vec<_> = statuses.iter().filter(|(s, _)| *s == 403).collect();
    assert!(limited.len() >= 2, "{statuses:?}");
    assert!(
        limited.iter().all(|(_, r)| r == "rateLimitExceeded"),
        "{statuses:?}"
    );
    fake.admin("POST", "rate-limit", Some(&json!({"perSecond": null})));
    assert_eq!(fake.get(&fake.api("global/firewalls")).0, 200);
}

#[test]
fn injected_faults_next_n_fraction_operation_mode_and_latency() {
    let fake = Fake::start(&[]);
    let path = fake.api("global/firewalls");
    // Fail the next 2 inserts with 503 backendError, then recover.
    fake.admin(
        "POST",
        "faults",
        Some(&json!({"method": "POST", "pathRegex": "/global/firewalls$",
        "count": 2, "status": 503, "reason": "backendError"})),
    );
    for _ in 0..2 {
        let (s, v) = fake.post(&path, &fw("x"));
        assert_eq!((s, reason(&v)), (503, "backendError"), "{v}");
    }
    assert_eq!(fake.get(&path).0, 200, "reads do not match the POST rule");
    fake.mutate_ok("POST", &path, &fw("x"));

    // Operation mode: accepted, then DONE with an error; nothing changes.
    fake.admin("POST", "faults", Some(&json!({"method": "DELETE", "count": 1, "reason": "resourceInUseByAnotherResource", "mode": "operation"})));
    let (s, op) = fake.call("DELETE", &fake.api("global/firewalls/x"), None);
    assert_eq!(s, 200, "{op}");
    let done = fake.wait_op(&op);
    assert_eq!(done["httpErrorStatusCode"], 400, "{done}");
    assert_eq!(done["httpErrorMessage"], "BAD REQUEST");
    assert_eq!(
        done["error"]["errors"][0]["code"],
        "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"
    );
    assert_eq!(
        fake.get(&fake.api("global/firewalls/x")).0,
        200,
        "the delete did not happen"
    );

    // Fraction: about half of matching calls fail (seeded, so reproducible).
    fake.admin("DELETE", "faults", None);
    fake.admin(
        "POST",
        "faults",
        Some(
            &json!({"method": "GET", "pathRegex": "/firewalls/x$", "fraction": 0.5,
        "status": 500, "seed": 7}),
        ),
    );
    let failed = (0..60)
        .filter(|_| fake.get(&fake.api("global/firewalls/x")).0 == 500)
        .count();
    assert!((15..=45).contains(&failed), "{failed} of 60");
    let listed = fake.admin("GET", "faults", None);
    assert_eq!(listed["faults"][0]["hits"], failed);

    // Latency only.
    fake.admin("DELETE", "faults", None);
    fake.admin(
        "POST",
        "faults",
        Some(&json!({"pathRegex": "/global/routes$", "delayMs": 300})),
    );
    let t = std::time::Instant::now();
    assert_eq!(fake.get(&fake.api("global/routes")).0, 200);
    assert!(t.elapsed() >= std::time::Duration::from_millis(300));

    // Faults are logged with their status in the call log.
    let calls = fake.admin("GET", "calls?method=POST&pathRegex=/global/firewalls$", None);
    let statuses: Vec<u64> = calls["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["status"].as_u64())
        .collect();
    assert_eq!(statuses, [503, 503, 200]);
    assert_eq!(calls["mutating"], 3);
}
