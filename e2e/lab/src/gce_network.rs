//! `svcnet-lab gce-network`: the VPC agent's GCE network ([`vpc::wanted_routes`]) for a network the lab did
//! not make: the kind e2e (e2e/kind) runs it in its container engine's namespace, where the kind nodes sit
//! on one bridge. Every half second it reads the fake GCE's `/_fake/state` and routes each forwarding
//! rule's IP to the healthy members of its backends, and each GCE route to its instance, over `--dev`
//! (kernel routes of protocol 99, stale ones removed). Firewall rules are not emulated here: the lab's
//! filter works on its own client links.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::{http, lb_health, vpc};

pub fn run(gce: &str, dev: &str) -> Result<()> {
    let mut health = lb_health::Checker::default();
    loop {
        if let Err(e) = tick(gce, dev, &mut health) {
            eprintln!("gce-network: {e:#}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn tick(gce: &str, dev: &str, health: &mut lb_health::Checker) -> Result<()> {
    let state = http::json("GET", &format!("{gce}/_fake/state"), "application/json", None)?;
    // Routes only: the ECMP hash of a namespace the lab did not make is left as it is (weights
    // apply, but with address hashing one client's connections stay on one member).
    let want = vpc::wanted_routes(&state, &instances(&state, dev), health);
    vpc::program_routes(&want)
}

/// Instance name -> (IP, `dev`): every instance is a node on the one bridge.
fn instances(state: &Value, dev: &str) -> BTreeMap<String, (String, String)> {
    state["instances"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let name = i["name"].as_str()?;
            let ip = i["networkInterfaces"][0]["networkIP"].as_str()?;
            Some((name.to_owned(), (ip.to_owned(), dev.to_owned())))
        })
        .collect()
}
