//! Protocol details over plain HTTP: operation lifecycle and wait, paging, aggregated lists,
//! raw batch, selfLinks, unknown parameters, admin API, state file, metadata server.
mod common;

use common::{Fake, REGION, ZONE_B, ZONE_C, raw};
use serde_json::{Value, json};

#[test]
fn operations_move_pending_running_done_and_wait_blocks() {
    // PENDING for 500 ms, RUNNING until 2.5 s: wide windows so a loaded CI machine does not flake.
    let fake = Fake::start(&["--op-latency-ms", "2500"]);
    let (s, op) = fake.post(
        &fake.api("global/firewalls"),
        &json!({"name": "a", "allowed": [{"IPProtocol": "tcp"}]}),
    );
    assert_eq!(s, 200);
    assert_eq!(op["status"], "PENDING");
    assert_eq!(op["operationType"], "insert");
    assert_eq!(op["targetLink"], fake.link("global/firewalls/a"));
    let link = op["selfLink"].as_str().unwrap_or_default().to_string();
    let path = &link[fake.base().len()..];
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (_, running) = fake.get(path);
    assert_eq!(running["status"], "RUNNING", "{running}");
    assert_eq!(
        running["selfLink"],
        link.as_str(),
        "selfLink is stable across polls"
    );
    assert!(running["startTime"].is_string() && running.get("endTime").is_none());
    let t = std::time::Instant::now();
    let (s, done) = fake.call("POST", &format!("{path}/wait"), None);
    assert_eq!(s, 200);
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(done["progress"], 100);
    assert!(done["endTime"].is_string());
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(300),
        "wait blocked until DONE"
    );
    // Regional and zonal operations carry their scope as URLs.
    fake.add_instance("n1", ZONE_B, &["a"]);
    let (_, rop) = fake.post(
        &fake.api(&format!("regions/{REGION}/addresses")),
        &json!({"name": "ip"}),
    );
    assert_eq!(rop["region"], fake.link(&format!("regions/{REGION}")));
    let inst = fake.get(&fake.api(&format!("zones/{ZONE_B}/instances/n1"))).1;
    let (_, zop) = fake.post(
        &fake.api(&format!("zones/{ZONE_B}/instances/n1/setTags")),
        &json!({"items": ["a", "b"], "fingerprint": inst["tags"]["fingerprint"]}),
    );
    assert_eq!(zop["zone"], fake.link(&format!("zones/{ZONE_B}")), "{zop}");
    assert_eq!(zop["operationType"], "setTags");
    let (_, ops) = fake.get(&fake.api("global/operations"));
    assert_eq!(ops["items"].as_array().map(Vec::len), Some(1));
    let (s, _) = fake.get(&fake.api("global/operations/operation-nope"));
    assert_eq!(s, 404);
}

#[test]
fn paging_filters_and_unknown_parameters() {
    let fake = Fake::start(&[]);
    for i in 0..7 {
        fake.mutate_ok(
            "POST",
            &fake.api("global/firewalls"),
            &json!({"name": format!("fw-{i}"), "allowed": [{"IPProtocol": "tcp"}], "priority": 1000 + i}),
        );
    }
    let mut names = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let q = format!(
            "global/firewalls?maxResults=3&alt=json&%24alt=json%3Benum-encoding%3Dint&%24apiVersion=x&returnPartialSuccess=true&pageToken={token}"
        );
        let (s, v) = fake.get(&fake.api(&q));
        assert_eq!(s, 200, "{v}");
        pages += 1;
        names.extend(
            v["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["name"].as_str().map(str::to_string)),
        );
        match v["nextPageToken"].as_str() {
            Some(t) => token = t.to_string(),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("fw-{i}")).collect::<Vec<_>>());
    let q = |f: &str| {
        let enc: String = f.bytes().map(|b| format!("%{b:02X}")).collect();
        let v = fake.get(&fake.api(&format!("global/firewalls?filter={enc}"))).1;
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["name"].as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert_eq!(q("name eq fw-[12]"), ["fw-1", "fw-2"]);
    assert_eq!(q(r#"(name eq ".*(^fw-6).*")"#), ["fw-6"]);
    assert_eq!(q("(name eq fw-.*) (priority eq 1003)"), ["fw-3"]);
    assert_eq!(q("name ne fw-[0-5]"), ["fw-6"]);
    let (s, v) = fake.get(&fake.api("global/firewalls?filter=name%20lt%203"));
    assert_eq!((s, common::reason(&v)), (400, "invalid"));
    let empty = fake.get(&fake.api("global/routes")).1;
    assert!(
        empty.get("items").is_none() && empty["kind"] == "compute#routeList",
        "{empty}"
    );
}

#[test]
fn aggregated_lists_are_keyed_by_scope() {
    let fake = Fake::start(&[]);
    fake.add_instance("b1", ZONE_B, &[]);
    fake.add_instance("c1", ZONE_C, &[]);
    let (s, v) = fake.get(&fake.api("aggregated/instances?includeAllScopes=true&returnPartialSuccess=true"));
    assert_eq!(s, 200);
    assert_eq!(v["kind"], "compute#instanceAggregatedList");
    assert_eq!(
        v["items"][format!("zones/{ZONE_B}")]["instances"][0]["name"],
        "b1"
    );
    assert_eq!(
        v["items"][format!("zones/{ZONE_C}")]["instances"][0]["name"],
        "c1"
    );
    let (_, v) = fake.get(&fake.api("aggregated/forwardingRules"));
    assert_eq!(
        v["items"][format!("regions/{REGION}")]["warning"]["code"],
        "NO_RESULTS_ON_PAGE",
        "{v}"
    );
    let (_, v) = fake.get(&fake.api("aggregated/instances?maxResults=1"));
    assert!(v["nextPageToken"].is_string());
    assert_eq!(
        v["items"][format!("zones/{ZONE_B}")]["instances"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn raw_batch_dispatches_parts_and_echoes_content_ids() {
    let fake = Fake::start(&[]);
    let b = "===============123==";
    let part = |id: &str, req: &str| {
        format!(
            "--{b}\nContent-Type: application/http\nMIME-Version: 1.0\nContent-Transfer-Encoding: binary\nContent-ID: <base+{id}>\n\n{req}\n"
        )
    };
    let p = fake.api("global/firewalls");
    let body = format!(
        "{}{}{}--{b}--",
        part(
            "1",
            &format!(
                "POST {p}?alt=json HTTP/1.1\nContent-Type: application/json\nHost: x\n\n{{\"name\": \"a\", \"allowed\": [{{\"IPProtocol\": \"tcp\"}}]}}"
            )
        ),
        part("2", &format!("GET {p}/nope?alt=json HTTP/1.1\nHost: x\n\n")),
        part("3", &format!("GET {p}/a HTTP/1.1\n\n")),
    );
    let ct = format!("multipart/mixed; boundary=\"{b}\"");
    let (s, head, resp) = raw(
        fake.port,
        "POST",
        "/batch/compute/v1",
        &[("Content-Type", &ct)],
        Some(body.as_bytes()),
    );
    assert_eq!(s, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: multipart/mixed; boundary="),
        "{head}"
    );
    let text = String::from_utf8_lossy(&resp);
    for id in ["1", "2", "3"] {
        assert!(
            text.contains(&format!("Content-ID: <response-base+{id}>")),
            "{text}"
        );
    }
    assert!(text.contains("HTTP/1.1 200 OK"));
    assert!(text.contains("HTTP/1.1 404 Not Found"));
    assert!(text.contains("\"kind\":\"compute#operation\""));
    assert_eq!(
        fake.get(&fake.api("global/firewalls/a")).0,
        200,
        "the batched insert happened"
    );
    let calls = fake.admin("GET", "calls?pathRegex=/global/firewalls", None);
    assert_eq!(
        calls["calls"]
            .as_array()
            .map(|c| c.iter().filter(|x| x["batch"] == true).count()),
        Some(3)
    );
}

#[test]
fn self_links_use_the_base_url_not_the_host_header() {
    let fake = Fake::start(&["--base-url", "https://compute.example.test/compute/v1/"]);
    let (_, op) = fake.post(
        &fake.api("global/firewalls"),
        &json!({"name": "a", "allowed": [{"IPProtocol": "tcp"}]}),
    );
    assert!(
        op["selfLink"]
            .as_str()
            .unwrap_or("")
            .starts_with("https://compute.example.test/compute/v1/projects/"),
        "{op}"
    );
    // References with any host are accepted and normalised to the base URL.
    let (s, v) = fake.post(&fake.api("global/routes"), &json!({"name": "r", "destRange": "10.0.0.0/24",
        "network": "https://www.googleapis.com/compute/v1/projects/svcnet-e2e/global/networks/default", "nextHopIp": "10.1.1.1"}));
    assert_eq!(s, 200, "{v}");
    let r = fake.get(&fake.api("global/routes/r")).1;
    assert_eq!(
        r["network"],
        "https://compute.example.test/compute/v1/projects/svcnet-e2e/global/networks/default"
    );
}

#[test]
fn admin_instances_reset_and_state_file_survive_restart() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("state.json");
    let file_arg = file.to_string_lossy().to_string();
    {
        let fake = Fake::start(&["--state-file", &file_arg]);
        let i = fake.admin(
            "POST",
            "instances",
            Some(&json!({"name": "n1", "zone": ZONE_B, "networkIP": "10.0.0.5",
            "natIP": "198.51.100.5", "tags": ["node"], "machineType": "n1-standard-2", "status": "RUNNING"})),
        );
        assert_eq!(
            i["networkInterfaces"][0]["accessConfigs"][0]["natIP"],
            "198.51.100.5"
        );
        assert_eq!(i["networkInterfaces"][0]["stackType"], "IPV4_ONLY", "{i}");
        assert!(i["networkInterfaces"][0].get("ipv6Address").is_none(), "{i}");
        // A dual-stack instance; registering it again without the field keeps the address.
        for body in [
            json!({"name": "n2", "zone": ZONE_B, "networkIP": "10.0.0.6", "ipv6Address": "FD20:0:0:1::6"}),
            json!({"name": "n2", "zone": ZONE_B}),
        ] {
            let nic = fake.admin("POST", "instances", Some(&body))["networkInterfaces"][0].clone();
            assert_eq!(nic["ipv6Address"], "fd20:0:0:1::6", "{nic}");
            assert_eq!(nic["stackType"], "IPV4_IPV6", "{nic}");
            assert_eq!(nic["ipv6AccessType"], "INTERNAL", "{nic}");
        }
        let (s, body) = fake.call(
            "POST",
            "/_fake/instances",
            Some(&json!({"name": "n3", "zone": ZONE_B, "ipv6Address": "10.0.0.7"})),
        );
        assert_eq!(s, 400, "an IPv4 ipv6Address is refused: {body}");
        fake.call("DELETE", &format!("/_fake/instances/{ZONE_B}/n2"), None);
        assert!(
            i["machineType"]
                .as_str()
                .unwrap_or("")
                .ends_with("/machineTypes/n1-standard-2")
        );
        fake.mutate_ok(
            "POST",
            &fake.api("global/routes"),
            &json!({"name": "r1", "destRange": "10.64.0.0/24",
            "network": "global/networks/default", "nextHopInstance": format!("zones/{ZONE_B}/instances/n1")}),
        );
        let st = fake.admin("GET", "state", None);
        assert_eq!(
            st["routes"][0]["nextHopInstance"],
            fake.link(&format!("zones/{ZONE_B}/instances/n1"))
        );
        assert_eq!(st["networks"][0]["name"], "default");
        assert_eq!(
            st["instances"][0]["networkInterfaces"][0]["networkIP"],
            "10.0.0.5"
        );
    }
    // A new process (new random port) reads the file back, with links rewritten to its address.
    let fake = Fake::start(&["--state-file", &file_arg]);
    let (s, r) = fake.get(&fake.api("global/routes/r1"));
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        r["nextHopInstance"],
        fake.link(&format!("zones/{ZONE_B}/instances/n1"))
    );
    let (s, _) = fake.call("DELETE", &format!("/_fake/instances/{ZONE_B}/n1"), None);
    assert_eq!(s, 200);
    assert_eq!(
        fake.get(&fake.api(&format!("zones/{ZONE_B}/instances/n1"))).0,
        404
    );
    fake.admin("POST", "reset", None);
    let st = fake.admin("GET", "state", None);
    assert_eq!(st["routes"], json!([]));
    assert_eq!(st["networks"].as_array().map(Vec::len), Some(1));
    let calls = fake.admin("GET", "calls", None);
    assert_eq!(calls["total"], 0, "reset clears the call log");
}

#[test]
fn metadata_server_answers_adc_lookups() {
    let fake = Fake::start(&[]);
    let h = [("Metadata-Flavor", "Google")];
    let (s, head, body) = raw(
        fake.port,
        "GET",
        "/computeMetadata/v1/project/project-id",
        &h,
        None,
    );
    assert_eq!(
        (s, String::from_utf8_lossy(&body).to_string()),
        (200, fake.project.clone())
    );
    assert!(head.to_ascii_lowercase().contains("metadata-flavor: google"));
    let (_, _, body) = raw(
        fake.port,
        "GET",
        "/computeMetadata/v1/instance/service-accounts/default/token",
        &h,
        None,
    );
    let tok: Value = serde_json::from_slice(&body).expect("token json");
    assert_eq!(tok["token_type"], "Bearer");
    let (_, _, body) = raw(fake.port, "GET", "/computeMetadata/v1/instance/zone", &h, None);
    assert!(String::from_utf8_lossy(&body).ends_with(&format!("/zones/{ZONE_B}")));
    let (s, _, _) = raw(
        fake.port,
        "GET",
        "/computeMetadata/v1/project/project-id",
        &[],
        None,
    );
    assert_eq!(s, 403, "the Metadata-Flavor header is required");
}

#[test]
fn update_patch_and_custom_verbs() {
    let fake = Fake::start(&[]);
    let fw = fake.api("global/firewalls");
    fake.mutate_ok(
        "POST",
        &fw,
        &json!({"name": "a", "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}],
        "targetTags": ["t1"], "sourceRanges": ["10.0.0.0/8"]}),
    );
    let before = fake.get(&format!("{fw}/a")).1;
    // PATCH merges; PUT replaces (fields left out go back to defaults).
    fake.mutate_ok(
        "PATCH",
        &format!("{fw}/a"),
        &json!({"sourceRanges": ["1.2.3.0/24"]}),
    );
    let p = fake.get(&format!("{fw}/a")).1;
    assert_eq!(
        (p["sourceRanges"].clone(), p["targetTags"].clone()),
        (json!(["1.2.3.0/24"]), json!(["t1"]))
    );
    assert_eq!(
        (p["id"].clone(), p["creationTimestamp"].clone()),
        (before["id"].clone(), before["creationTimestamp"].clone())
    );
    fake.mutate_ok(
        "PUT",
        &format!("{fw}/a"),
        &json!({"name": "a", "allowed": [{"IPProtocol": "udp"}]}),
    );
    let u = fake.get(&format!("{fw}/a")).1;
    assert_eq!(
        (u["allowed"].clone(), u.get("targetTags").cloned()),
        (json!([{"IPProtocol": "udp"}]), None)
    );
    assert_eq!(u["sourceRanges"], json!(["0.0.0.0/0"]));
    let (s, v) = fake.call("PATCH", &format!("{fw}/a"), Some(&json!({"priority": 70000})));
    assert_eq!((s, common::reason(&v)), (400, "invalid"));

    let hc = fake.api("global/httpHealthChecks");
    fake.mutate_ok("POST", &hc, &json!({"name": "h1"}));
    fake.mutate_ok("POST", &hc, &json!({"name": "h2", "port": 10256}));
    fake.mutate_ok("PATCH", &format!("{hc}/h1"), &json!({"requestPath": "/healthz"}));
    let h = fake.get(&format!("{hc}/h1")).1;
    assert_eq!(
        (
            h["requestPath"].as_str(),
            h["port"].as_i64(),
            h["checkIntervalSec"].as_i64()
        ),
        (Some("/healthz"), Some(80), Some(5))
    );

    fake.add_instance("n1", ZONE_B, &[]);
    let r = |rest: &str| fake.api(&format!("regions/{REGION}/{rest}"));
    fake.mutate_ok("POST", &r("targetPools"), &json!({"name": "tp1"}));
    fake.mutate_ok("POST", &r("targetPools"), &json!({"name": "tp2"}));
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp1/addHealthCheck"),
        &json!({"healthChecks": [{"healthCheck": "global/httpHealthChecks/h1"}]}),
    );
    let (s, v) = fake.post(
        &r("targetPools/tp1/addHealthCheck"),
        &json!({"healthChecks": [{"healthCheck": "global/httpHealthChecks/h2"}]}),
    );
    assert_eq!(
        (s, common::reason(&v)),
        (400, "invalid"),
        "one health check per pool: {v}"
    );
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp1/removeHealthCheck"),
        &json!({"healthChecks": [{"healthCheck": fake.link("global/httpHealthChecks/h1")}]}),
    );
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp1/addInstance"),
        &json!({"instances": [{"instance": fake.link(&format!("zones/{ZONE_B}/instances/n1"))}]}),
    );
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp1/addInstance"),
        &json!({"instances": [{"instance": format!("zones/{ZONE_B}/instances/n1")}]}),
    );
    let tp = fake.get(&r("targetPools/tp1")).1;
    assert_eq!(
        (
            tp["healthChecks"].clone(),
            tp["instances"].as_array().map(Vec::len)
        ),
        (json!([]), Some(1))
    );
    // An instance that is gone can still be removed from a pool (node deleted first).
    fake.admin("DELETE", &format!("instances/{ZONE_B}/n1"), None);
    fake.mutate_ok(
        "POST",
        &r("targetPools/tp1/removeInstance"),
        &json!({"instances": [{"instance": format!("zones/{ZONE_B}/instances/n1")}]}),
    );

    fake.mutate_ok(
        "POST",
        &r("forwardingRules"),
        &json!({"name": "fr", "portRange": "53", "IPProtocol": "UDP",
        "target": r("targetPools/tp1")}),
    );
    fake.mutate_ok(
        "POST",
        &r("forwardingRules/fr/setTarget"),
        &json!({"target": format!("regions/{REGION}/targetPools/tp2")}),
    );
    assert_eq!(
        fake.get(&r("forwardingRules/fr")).1["target"],
        fake.link(&format!("regions/{REGION}/targetPools/tp2"))
    );
    fake.mutate_ok("DELETE", &r("targetPools/tp1"), &Value::Null);

    let (s, _) = fake.post(
        &fake.api("global/networks"),
        &json!({"name": "lab", "autoCreateSubnetworks": false}),
    );
    assert_eq!(s, 200);
    let nets = fake.get(&fake.api("global/networks")).1;
    assert_eq!(nets["items"].as_array().map(Vec::len), Some(2));
    let (s, _) = fake.post(
        &fake.api("global/firewalls"),
        &json!({"name": "lab-fw", "network": "global/networks/lab",
        "allowed": [{"IPProtocol": "all"}]}),
    );
    assert_eq!(s, 200);
    let (s, v) = fake.call("DELETE", &fake.api("global/networks/lab"), None);
    assert_eq!((s, common::reason(&v)), (400, "resourceInUseByAnotherResource"));
}

#[test]
fn request_id_makes_retries_idempotent() {
    let fake = Fake::start(&[]);
    let path = fake.api("global/firewalls?requestId=5e1f0b3c-1111-4c1e-9d2a-000000000001");
    let body = json!({"name": "a", "allowed": [{"IPProtocol": "tcp"}]});
    let (s1, op1) = fake.post(&path, &body);
    let (s2, op2) = fake.post(&path, &body);
    assert_eq!((s1, s2), (200, 200), "{op2}");
    assert_eq!(op1["name"], op2["name"]);
    let (s3, v) = fake.post(&fake.api("global/firewalls"), &body);
    assert_eq!(
        (s3, common::reason(&v)),
        (409, "alreadyExists"),
        "without requestId it is a new call"
    );
}
