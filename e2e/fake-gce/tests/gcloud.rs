//! Conformance with the real gcloud CLI (env-configured endpoint override, token file, no
//! prompts, no metadata probing). Operations stay RUNNING ~1 s so gcloud's wait/poll path runs.
mod common;

use common::{Fake, REGION, ZONE_B, ZONE_C};
use serde_json::{Value, json};

struct Gcloud {
    /// Its config directory and token file.
    dir: tempfile::TempDir,
    port: u16,
    project: String,
}

struct Out {
    ok: bool,
    json: Value,
    stderr: String,
}

impl Gcloud {
    fn new(fake: &Fake) -> Gcloud {
        Gcloud {
            dir: tempfile::tempdir().expect("config dir"),
            port: fake.port,
            project: fake.project.clone(),
        }
    }

    fn run(&self, args: &[&str]) -> Out {
        let out = svcnet_testcluster::gcloud::command(self.dir.path(), self.port, &self.project)
            .expect("gcloud command")
            .args(args)
            .arg("--format=json")
            .output()
            .expect("run gcloud");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        Out {
            ok: out.status.success(),
            json,
            stderr,
        }
    }

    /// Runs and requires success; returns the JSON output.
    fn ok(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(out.ok, "gcloud {args:?} failed:\n{}", out.stderr);
        out.json
    }
}

fn skip() -> bool {
    if common::have("gcloud") {
        return false;
    }
    println!("SKIPPED: gcloud is not installed; this conformance test did not run");
    true
}

fn names(list: &Value) -> Vec<String> {
    let mut v: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["name"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v
}

fn calls(fake: &Fake, query: &str) -> Vec<Value> {
    fake.admin("GET", &format!("calls?{query}"), None)["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn gcloud_firewalls_routes_health_checks_instances_filter_and_batch() {
    if skip() {
        return;
    }
    let fake = Fake::start(&["--op-latency-ms", "1200"]);
    fake.add_instance("node-b", ZONE_B, &["node"]);
    fake.add_instance("node-c", ZONE_C, &["node"]);
    let g = Gcloud::new(&fake);

    let fw = g.ok(&[
        "compute",
        "firewall-rules",
        "create",
        "k8s-fw-a",
        "--allow",
        "tcp:80,udp:53",
        "--target-tags",
        "node",
        "--source-ranges",
        "10.0.0.0/8",
    ]);
    assert_eq!(fw[0]["name"], "k8s-fw-a");
    assert_eq!(
        fw[0]["allowed"],
        json!([{"IPProtocol": "tcp", "ports": ["80"]}, {"IPProtocol": "udp", "ports": ["53"]}])
    );
    assert_eq!(fw[0]["targetTags"], json!(["node"]));
    assert_eq!(fw[0]["network"], fake.link("global/networks/default"));
    // The operation was RUNNING when created, so gcloud had to wait for it.
    assert!(
        !calls(&fake, "method=POST&pathRegex=/operations/.*/wait$").is_empty(),
        "gcloud polled with wait"
    );

    g.ok(&[
        "compute",
        "firewall-rules",
        "create",
        "k8s-fw-b",
        "--allow",
        "tcp:443",
    ]);
    g.ok(&[
        "compute",
        "firewall-rules",
        "create",
        "allow-ssh",
        "--allow",
        "tcp:22",
    ]);
    let listed = g.ok(&["compute", "firewall-rules", "list", "--filter=name~^k8s-fw"]);
    assert_eq!(names(&listed), ["k8s-fw-a", "k8s-fw-b"]);
    let list_calls = calls(&fake, "method=GET&pathRegex=/global/firewalls$");
    let last_query = list_calls
        .last()
        .map(|c| c["query"].as_str().unwrap_or("").to_string())
        .unwrap_or_default();
    assert!(
        last_query.contains("filter="),
        "filter sent to the server: {last_query}"
    );

    let upd = g.ok(&[
        "compute",
        "firewall-rules",
        "update",
        "k8s-fw-a",
        "--source-ranges",
        "192.168.0.0/16",
    ]);
    let _ = upd;
    let d = g.ok(&["compute", "firewall-rules", "describe", "k8s-fw-a"]);
    assert_eq!(d["sourceRanges"], json!(["192.168.0.0/16"]));
    assert_eq!(
        d["allowed"][0]["IPProtocol"], "tcp",
        "patch kept the other fields"
    );

    let hc = g.ok(&[
        "compute",
        "http-health-checks",
        "create",
        "k8s-hc",
        "--port",
        "10256",
        "--request-path",
        "/healthz",
    ]);
    assert_eq!(
        (hc[0]["port"].as_i64(), hc[0]["requestPath"].as_str()),
        (Some(10256), Some("/healthz"))
    );

    let inst = g.ok(&["compute", "instances", "list"]);
    assert_eq!(names(&inst), ["node-b", "node-c"]);
    let b = inst
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["name"] == "node-b")
        .cloned()
        .unwrap_or_default();
    assert_eq!(b["zone"], fake.link(&format!("zones/{ZONE_B}")));
    assert_eq!(b["tags"]["items"], json!(["node"]));

    let r = g.ok(&[
        "compute",
        "routes",
        "create",
        "cluster-node-b",
        "--destination-range",
        "10.64.1.0/24",
        "--next-hop-instance",
        "node-b",
        "--next-hop-instance-zone",
        ZONE_B,
        "--network",
        "default",
    ]);
    assert_eq!(
        r[0]["nextHopInstance"],
        fake.link(&format!("zones/{ZONE_B}/instances/node-b"))
    );
    assert_eq!(r[0]["destRange"], "10.64.1.0/24");
    assert_eq!(names(&g.ok(&["compute", "routes", "list"])), ["cluster-node-b"]);

    // Multi-resource delete arrives as one multipart batch.
    let before = calls(&fake, "method=DELETE").len();
    g.ok(&["compute", "firewall-rules", "delete", "k8s-fw-a", "k8s-fw-b"]);
    let deletes = calls(&fake, "method=DELETE");
    assert_eq!(deletes.len() - before, 2);
    assert!(
        deletes
            .iter()
            .rev()
            .take(2)
            .all(|c| c["batch"] == true && c["status"] == 200),
        "{deletes:?}"
    );
    assert_eq!(
        names(&g.ok(&["compute", "firewall-rules", "list"])),
        ["allow-ssh"]
    );

    let missing = g.run(&["compute", "firewall-rules", "describe", "k8s-fw-a"]);
    assert!(
        !missing.ok && missing.stderr.contains("was not found"),
        "{}",
        missing.stderr
    );

    g.ok(&["compute", "routes", "delete", "cluster-node-b"]);
    g.ok(&["compute", "http-health-checks", "delete", "k8s-hc"]);
    let state = fake.admin("GET", "state", None);
    assert_eq!(state["routes"], json!([]));
    assert_eq!(state["httpHealthChecks"], json!([]));
}

#[test]
fn gcloud_target_pools_addresses_forwarding_rules() {
    if skip() {
        return;
    }
    let fake = Fake::start(&["--op-latency-ms", "1000"]);
    fake.add_instance("n1", ZONE_B, &["node"]);
    fake.add_instance("n2", ZONE_B, &["node"]);
    let g = Gcloud::new(&fake);
    let region = ["--region", REGION];

    g.ok(&["compute", "http-health-checks", "create", "hc", "--port", "10256"]);
    let tp = g.ok(&[
        &[
            "compute",
            "target-pools",
            "create",
            "tp",
            "--http-health-check",
            "hc",
        ][..],
        &region,
    ]
    .concat());
    assert_eq!(
        tp[0]["healthChecks"],
        json!([fake.link("global/httpHealthChecks/hc")])
    );
    assert_eq!(tp[0]["sessionAffinity"], "NONE");
    g.ok(&[
        &[
            "compute",
            "target-pools",
            "add-instances",
            "tp",
            "--instances",
            "n1,n2",
            "--instances-zone",
            ZONE_B,
        ][..],
        &region,
    ]
    .concat());
    g.ok(&[
        &[
            "compute",
            "target-pools",
            "remove-instances",
            "tp",
            "--instances",
            "n2",
            "--instances-zone",
            ZONE_B,
        ][..],
        &region,
    ]
    .concat());
    let d = g.ok(&[&["compute", "target-pools", "describe", "tp"][..], &region].concat());
    assert_eq!(
        d["instances"],
        json!([fake.link(&format!("zones/{ZONE_B}/instances/n1"))])
    );
    // Removing a non-member is a 400.
    let bad = g.run(
        &[
            &[
                "compute",
                "target-pools",
                "remove-instances",
                "tp",
                "--instances",
                "n2",
                "--instances-zone",
                ZONE_B,
            ][..],
            &region,
        ]
        .concat(),
    );
    assert!(
        !bad.ok && bad.stderr.contains("is not a member"),
        "{}",
        bad.stderr
    );

    let a1 = g.ok(&[&["compute", "addresses", "create", "ip1"][..], &region].concat());
    let ip1 = a1[0]["address"].as_str().unwrap_or_default().to_string();
    assert!(ip1.starts_with("203.0.113."), "{a1}");
    assert_eq!(a1[0]["status"], "RESERVED");
    let a2 = g.ok(&[
        &[
            "compute",
            "addresses",
            "create",
            "ip2",
            "--addresses",
            "203.0.113.77",
        ][..],
        &region,
    ]
    .concat());
    assert_eq!(a2[0]["address"], "203.0.113.77");

    let fr = g.ok(&[
        &[
            "compute",
            "forwarding-rules",
            "create",
            "fr",
            "--target-pool",
            "tp",
            "--ports",
            "80-81",
            "--address",
            &ip1,
        ][..],
        &region,
    ]
    .concat());
    assert_eq!(fr[0]["IPAddress"], ip1.as_str());
    assert_eq!(fr[0]["portRange"], "80-81");
    assert_eq!(fr[0]["IPProtocol"], "TCP");
    assert_eq!(
        fr[0]["target"],
        fake.link(&format!("regions/{REGION}/targetPools/tp"))
    );
    let a = g.ok(&[&["compute", "addresses", "describe", "ip1"][..], &region].concat());
    assert_eq!(a["status"], "IN_USE");
    assert_eq!(
        a["users"],
        json!([fake.link(&format!("regions/{REGION}/forwardingRules/fr"))])
    );

    // Lists without --regions go through aggregated/ lists.
    assert_eq!(names(&g.ok(&["compute", "forwarding-rules", "list"])), ["fr"]);
    assert_eq!(names(&g.ok(&["compute", "target-pools", "list"])), ["tp"]);
    assert_eq!(names(&g.ok(&["compute", "addresses", "list"])), ["ip1", "ip2"]);
    assert!(!calls(&fake, "pathRegex=/aggregated/forwardingRules$").is_empty());

    // Referential integrity: in-use resources cannot go.
    let out = g.run(&[&["compute", "target-pools", "delete", "tp"][..], &region].concat());
    assert!(
        !out.ok && out.stderr.contains("already being used by"),
        "{}",
        out.stderr
    );
    let out = g.run(&["compute", "http-health-checks", "delete", "hc"]);
    assert!(
        !out.ok && out.stderr.contains("already being used by"),
        "{}",
        out.stderr
    );
    // An address in use is released, not refused: the forwarding rule keeps the IP (demoted).
    g.ok(&[&["compute", "addresses", "delete", "ip1"][..], &region].concat());

    g.ok(&[&["compute", "forwarding-rules", "delete", "fr"][..], &region].concat());
    g.ok(&[&["compute", "target-pools", "delete", "tp"][..], &region].concat());
    g.ok(&[&["compute", "addresses", "delete", "ip2"][..], &region].concat());
    g.ok(&["compute", "http-health-checks", "delete", "hc"]);
    let state = fake.admin("GET", "state", None);
    for coll in ["forwardingRules", "targetPools", "addresses", "httpHealthChecks"] {
        assert_eq!(state[coll], json!([]), "{coll}");
    }
}

/// The objects of a backend-service network LB, made and read back by gcloud itself: a regional
/// health check (beside a global one of the same name), an EXTERNAL regional backend service with
/// an unmanaged group as backend (`add-backend`: GET then fingerprinted PUT), and an EXTERNAL
/// forwarding rule pointing at it.
#[test]
fn gcloud_regional_health_checks_and_external_backend_services() {
    if skip() {
        return;
    }
    let fake = Fake::start(&["--op-latency-ms", "300"]);
    fake.add_instance("n1", ZONE_B, &[]);
    let g = Gcloud::new(&fake);
    let hc_args = [
        "--port",
        "10256",
        "--request-path",
        "/healthz",
        "--check-interval",
        "8s",
        "--timeout",
        "1s",
    ];
    let mut regional = vec![
        "compute",
        "health-checks",
        "create",
        "http",
        "hc",
        "--region",
        REGION,
    ];
    regional.extend(hc_args);
    g.ok(&regional);
    g.ok(&[
        "compute",
        "health-checks",
        "create",
        "http",
        "hc",
        "--global",
        "--port",
        "9999",
    ]);
    let hc = g.ok(&["compute", "health-checks", "describe", "hc", "--region", REGION]);
    assert_eq!(hc["httpHealthCheck"]["port"], 10256, "{hc}");
    assert_eq!(hc["checkIntervalSec"], 8);
    assert_eq!(hc["region"], fake.link(&format!("regions/{REGION}")));
    let ghc = g.ok(&["compute", "health-checks", "describe", "hc", "--global"]);
    assert_eq!(ghc["httpHealthCheck"]["port"], 9999, "{ghc}");
    let listed = g.ok(&["compute", "health-checks", "list", "--regions", REGION]);
    assert_eq!(names(&listed), ["hc"], "{listed}");
    // A plain list is GCE's aggregated one: both checks, without a warning (gcloud exits 0 either way).
    let out = g.run(&["compute", "health-checks", "list"]);
    assert!(out.ok && out.stderr.trim().is_empty(), "{}", out.stderr);
    let all = out.json;
    let regions: Vec<&str> = all
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["region"].as_str().unwrap_or("global"))
        .collect();
    assert_eq!(names(&all), ["hc", "hc"], "{all}");
    assert!(regions.contains(&"global") && regions.len() == 2, "{all}");

    g.ok(&[
        "compute",
        "instance-groups",
        "unmanaged",
        "create",
        "ig",
        "--zone",
        ZONE_B,
    ]);
    g.ok(&[
        "compute",
        "backend-services",
        "create",
        "bs",
        "--region",
        REGION,
        "--load-balancing-scheme",
        "EXTERNAL",
        "--protocol",
        "TCP",
        "--health-checks",
        "hc",
        "--health-checks-region",
        REGION,
    ]);
    g.ok(&[
        "compute",
        "backend-services",
        "add-backend",
        "bs",
        "--region",
        REGION,
        "--instance-group",
        "ig",
        "--instance-group-zone",
        ZONE_B,
    ]);
    let bs = g.ok(&[
        "compute",
        "backend-services",
        "describe",
        "bs",
        "--region",
        REGION,
    ]);
    assert_eq!(bs["loadBalancingScheme"], "EXTERNAL", "{bs}");
    assert_eq!(
        bs["healthChecks"][0],
        fake.link(&format!("regions/{REGION}/healthChecks/hc"))
    );
    assert_eq!(
        bs["backends"][0]["group"],
        fake.link(&format!("zones/{ZONE_B}/instanceGroups/ig"))
    );
    assert_eq!(bs["backends"][0]["balancingMode"], "CONNECTION");

    g.ok(&[
        "compute",
        "forwarding-rules",
        "create",
        "fr",
        "--region",
        REGION,
        "--load-balancing-scheme",
        "EXTERNAL",
        "--ip-protocol",
        "TCP",
        "--ports",
        "80-81",
        "--backend-service",
        "bs",
        "--backend-service-region",
        REGION,
    ]);
    let fr = g.ok(&[
        "compute",
        "forwarding-rules",
        "describe",
        "fr",
        "--region",
        REGION,
    ]);
    assert_eq!(
        fr["backendService"],
        fake.link(&format!("regions/{REGION}/backendServices/bs"))
    );
    assert_eq!(fr["loadBalancingScheme"], "EXTERNAL");
    assert_eq!(fr["networkTier"], "PREMIUM");

    // In use while the backend service references it: gcloud reports GCE's refusal.
    let out = g.run(&["compute", "health-checks", "delete", "hc", "--region", REGION]);
    assert!(!out.ok, "a check in use was deleted");
    assert!(out.stderr.contains("already being used"), "{}", out.stderr);
    g.ok(&["compute", "forwarding-rules", "delete", "fr", "--region", REGION]);
    g.ok(&["compute", "backend-services", "delete", "bs", "--region", REGION]);
    g.ok(&["compute", "health-checks", "delete", "hc", "--region", REGION]);
    g.ok(&["compute", "health-checks", "delete", "hc", "--global"]);
}

#[test]
fn gcloud_subnetworks_ipv6_addresses_and_rules() {
    if skip() {
        return;
    }
    let fake = Fake::start(&["--op-latency-ms", "600"]);
    let g = Gcloud::new(&fake);
    g.ok(&[
        "compute",
        "networks",
        "subnets",
        "create",
        "ext6",
        "--network",
        "default",
        "--region",
        REGION,
        "--range",
        "10.1.0.0/24",
        "--stack-type",
        "IPV4_IPV6",
        "--ipv6-access-type",
        "EXTERNAL",
    ]);
    // The default subnet made dual-stack the way a user would (PATCH with its fingerprint).
    g.ok(&[
        "compute",
        "networks",
        "subnets",
        "update",
        "default",
        "--region",
        REGION,
        "--stack-type",
        "IPV4_IPV6",
        "--ipv6-access-type",
        "INTERNAL",
    ]);
    let d = g.ok(&[
        "compute", "networks", "subnets", "describe", "default", "--region", REGION,
    ]);
    assert_eq!(d["internalIpv6Prefix"], "fd20:0:1::/64", "{d}");
    let list = g.ok(&["compute", "networks", "subnets", "list"]);
    assert_eq!(names(&list), ["default", "ext6"], "{list}");
    let d = g.ok(&[
        "compute", "networks", "subnets", "describe", "ext6", "--region", REGION,
    ]);
    assert_eq!(d["stackType"], "IPV4_IPV6", "{d}");
    assert_eq!(d["ipv6AccessType"], "EXTERNAL");
    assert_eq!(d["externalIpv6Prefix"], "2001:db8:4000::/64");
    assert_eq!(d["ipCidrRange"], "10.1.0.0/24");
    // A subnet that does not exist: GCE's error reaches the user.
    let out = g.run(&[
        "compute",
        "addresses",
        "create",
        "ilb",
        "--region",
        REGION,
        "--subnet",
        "missing",
    ]);
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("The referenced subnetwork resource cannot be found"),
        "{}",
        out.stderr
    );
    // An external IPv6 address reserved in the dual-stack subnet, read back.
    g.ok(&[
        "compute",
        "addresses",
        "create",
        "v6",
        "--region",
        REGION,
        "--subnet",
        "ext6",
        "--ip-version",
        "IPV6",
        "--endpoint-type",
        "NETLB",
    ]);
    let a = g.ok(&["compute", "addresses", "describe", "v6", "--region", REGION]);
    assert_eq!(a["ipVersion"], "IPV6", "{a}");
    assert_eq!(a["prefixLength"], 96, "{a}");
    assert!(
        a["address"].as_str().unwrap().starts_with("2001:db8:4000::"),
        "{a}"
    );

    // An external IPv6 forwarding rule (an RBS NetLB's) created and read back with gcloud.
    fake.mutate_ok(
        "POST",
        &fake.api(&format!("zones/{ZONE_B}/instanceGroups")),
        &json!({"name": "ig"}),
    );
    fake.mutate_ok(
        "POST",
        &fake.api(&format!("regions/{REGION}/healthChecks")),
        &json!({"name": "rhc", "type": "HTTP"}),
    );
    fake.mutate_ok(
        "POST",
        &fake.api(&format!("regions/{REGION}/backendServices")),
        &json!({"name": "xbs", "loadBalancingScheme": "EXTERNAL", "protocol": "TCP",
                "healthChecks": [fake.link(&format!("regions/{REGION}/healthChecks/rhc"))],
                "backends": [{"group": fake.link(&format!("zones/{ZONE_B}/instanceGroups/ig"))}]}),
    );
    g.ok(&[
        "compute",
        "forwarding-rules",
        "create",
        "a1-ipv6",
        "--region",
        REGION,
        "--backend-service",
        "xbs",
        "--backend-service-region",
        REGION,
        "--ip-version",
        "IPV6",
        "--subnet",
        "ext6",
        "--ports",
        "80",
    ]);
    let fr = g.ok(&[
        "compute",
        "forwarding-rules",
        "describe",
        "a1-ipv6",
        "--region",
        REGION,
    ]);
    assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    assert_eq!(fr["loadBalancingScheme"], "EXTERNAL", "{fr}");
    let ip = fr["IPAddress"].as_str().unwrap();
    assert!(ip.starts_with("2001:db8:4000::") && ip.ends_with("/96"), "{fr}");
    assert_eq!(
        fr["subnetwork"],
        fake.link(&format!("regions/{REGION}/subnetworks/ext6"))
    );
}

/// Issue 34's objects read back with the real gcloud: an UNSPECIFIED backend service with
/// `localityLbPolicy: WEIGHTED_MAGLEV` (weighted LB) and an L3_DEFAULT all-ports rule (mixed
/// protocols) over it.
#[test]
fn gcloud_l3_default_rule_and_weighted_backend_service() {
    if skip() {
        return;
    }
    let fake = Fake::start(&[]);
    let g = Gcloud::new(&fake);
    g.ok(&[
        "compute",
        "health-checks",
        "create",
        "http",
        "hc",
        "--region",
        REGION,
        "--port",
        "31000",
        "--request-path",
        "/healthz",
    ]);
    g.ok(&[
        "compute",
        "backend-services",
        "create",
        "bs",
        "--region",
        REGION,
        "--load-balancing-scheme",
        "EXTERNAL",
        "--protocol",
        "UNSPECIFIED",
        "--health-checks",
        "hc",
        "--health-checks-region",
        REGION,
        "--locality-lb-policy",
        "WEIGHTED_MAGLEV",
    ]);
    let bs = g.ok(&[
        "compute",
        "backend-services",
        "describe",
        "bs",
        "--region",
        REGION,
    ]);
    assert_eq!(bs["protocol"], "UNSPECIFIED", "{bs}");
    assert_eq!(bs["localityLbPolicy"], "WEIGHTED_MAGLEV", "{bs}");
    g.ok(&[
        "compute",
        "forwarding-rules",
        "create",
        "fr",
        "--region",
        REGION,
        "--load-balancing-scheme",
        "EXTERNAL",
        "--ip-protocol",
        "L3_DEFAULT",
        "--ports",
        "ALL",
        "--backend-service",
        "bs",
        "--backend-service-region",
        REGION,
    ]);
    let fr = g.ok(&[
        "compute",
        "forwarding-rules",
        "describe",
        "fr",
        "--region",
        REGION,
    ]);
    assert_eq!(fr["IPProtocol"], "L3_DEFAULT", "{fr}");
    assert_eq!(fr["allPorts"], true, "{fr}");
    assert!(fr.get("portRange").is_none(), "{fr}");
    g.ok(&["compute", "forwarding-rules", "delete", "fr", "--region", REGION]);
    g.ok(&["compute", "backend-services", "delete", "bs", "--region", REGION]);
    g.ok(&["compute", "health-checks", "delete", "hc", "--region", REGION]);
}
