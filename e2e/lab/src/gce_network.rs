//! `svcnet-lab gce-network`: the VPC agent's GCE network ([`vpc::wanted_routes`]) for a network the lab did
//! not make: the kind e2e (e2e/kind) runs it in its container engine's namespace, where the kind nodes sit
//! on one bridge. Every half second it reads the fake GCE's `/_fake/state` and routes each forwarding
//! rule's IP to the healthy members of its backends (an IPv6 rule's /96 to the members' IPv6 addresses,
//! the instances' `ipv6Address`), and each GCE route to its instance, over `--dev`
//! (kernel routes of protocol 99, stale ones removed; ECMP weighted and hashed by the 5-tuple while a
//! weighted backend service exists, as the lab's router does), and renders the GCE firewall rules into the
//! namespace's filter tables, IPv4 and IPv6 ([`vpc::apply_firewall`], the lab's filter): traffic the namespace forwards
//! from outside clients (links `cl*`) and from the VPC's VM (link `vm`) reaches the nodes only where a
//! firewall rule allows it, internal LB addresses never from outside. The namespace's own traffic (the
//! e2e's kubectl and curl, the health probes) is not forwarded, so not filtered.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::lb_targets::Hop;
use crate::{http, lb_health, vpc};

pub fn run(gce: &str, dev: &str) -> Result<()> {
    let mut health = lb_health::Checker::default();
    let mut last_fw = String::new();
    loop {
        if let Err(e) = tick(gce, dev, &mut health, &mut last_fw) {
            eprintln!("gce-network: {e:#}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn tick(gce: &str, dev: &str, health: &mut lb_health::Checker, last_fw: &mut String) -> Result<()> {
    let state = http::json("GET", &format!("{gce}/_fake/state"), "application/json", None)?;
    let inst = instances(&state, dev);
    let want = vpc::wanted_routes(&state, &inst, health, &ipv6_of(&state));
    vpc::program_routes(&want)?;
    // As the lab's router: by the 5-tuple while a weighted backend service exists, so one client's
    // connections split by the weights, else by addresses only.
    vpc::program_hash_policy(&state, &inst)?;
    let links: Vec<Hop> = inst.into_values().collect();
    vpc::apply_firewall(&state, &links, last_fw)
}

/// Instance IP -> its NIC's IPv6 address, for the instances that have one (dual-stack nodes).
fn ipv6_of(state: &Value) -> BTreeMap<String, String> {
    state["instances"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let nic = &i["networkInterfaces"][0];
            let ip = nic["networkIP"].as_str()?;
            let ip6 = nic["ipv6Address"].as_str()?;
            Some((ip.to_owned(), ip6.to_owned()))
        })
        .collect()
}

/// Instance name -> (IP, `dev`): every instance is a node on the one bridge.
fn instances(state: &Value, dev: &str) -> BTreeMap<String, Hop> {
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

#[cfg(test)]
mod tests;
