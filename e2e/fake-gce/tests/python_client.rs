//! The official Python client (google-cloud-compute from PyPI) against the fake. The venv is
//! cached under the target dir, so only the first run downloads packages.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Fake, REGION, ZONE_B};
use serde_json::{Value, json};

fn venv() -> Option<PathBuf> {
    if !common::have("python3") {
        println!("SKIPPED: python3 is not installed; the Python client test did not run");
        return None;
    }
    let py = |dir: &Path| dir.join("bin/python");
    let ready = |dir: &Path| {
        Command::new(py(dir))
            .args(["-c", "import google.cloud.compute_v1, google.auth"])
            .status()
            .is_ok_and(|s| s.success())
    };
    let venv = svcnet_testcluster::python::venv("fake-gce-pyvenv", "google-cloud-compute", ready)
        .unwrap_or_else(|e| panic!("installing google-cloud-compute: {e}"));
    let Some(dir) = venv else {
        println!(
            "SKIPPED: python3 -m venv failed (python3-venv missing?); the Python client test did not run"
        );
        return None;
    };
    Some(py(&dir))
}

#[test]
fn official_python_client_insert_result_list_paging_and_errors() {
    let Some(py) = venv() else { return };
    let fake = Fake::start(&["--op-latency-ms", "800"]);
    fake.add_instance("py-node", ZONE_B, &["node"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/compute_client.py");
    let out = Command::new(py)
        .arg(script)
        .args([&fake.port.to_string(), &fake.project, REGION, ZONE_B])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(stdout.trim()).expect("json summary");

    assert_eq!(
        r["first_status"], "PENDING",
        "operations start pending with latency"
    );
    assert_eq!(r["done"], true);
    assert_eq!(
        r["firewall"],
        json!({"name": "py-fw-0", "ports": ["80", "443"], "target_tags": ["node"], "priority": 1000,
               "self_link": fake.link("global/firewalls/py-fw-0")})
    );
    assert_eq!(r["pages"], 3);
    assert_eq!(
        r["names"],
        json!(["py-fw-0", "py-fw-1", "py-fw-2", "py-fw-3", "py-fw-4"])
    );
    assert_eq!(r["filtered"], json!(["py-fw-1", "py-fw-2"]));
    assert_eq!(r["address_status"], "IN_USE");
    assert_eq!(r["fr_ip_matches"], true);
    assert_eq!(r["aggregated"], json!([format!("regions/{REGION}/py-fr")]));
    assert_eq!(r["instances"], json!(["py-node"]));
    assert_eq!(r["not_found"], "NotFound");
    assert!(
        r["in_use"]
            .as_str()
            .unwrap_or("")
            .contains("already being used by"),
        "{}",
        r["in_use"]
    );
    assert_eq!(r["failed_op"], "Forbidden");

    // The client really polled the fake's operations endpoints (not the real API).
    let polls = fake.admin("GET", "calls?method=GET&pathRegex=/operations/", None);
    assert!(polls["total"].as_u64().unwrap_or(0) > 0, "{polls}");
    let state = fake.admin("GET", "state", None);
    assert!(
        state["firewalls"]
            .as_array()
            .is_some_and(|a| a.iter().all(|f| f["name"] != "py-fw-quota"))
    );
}
