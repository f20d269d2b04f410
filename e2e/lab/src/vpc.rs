//! The `vpc` router namespace and its agent. The agent runs inside the `vpc` namespace and, every half
//! second, reads the fake GCE's `/_fake/state` and programs the namespace like GCE's network would:
//! - GCE routes (`nextHopInstance` / `nextHopIp`) -> kernel routes (cross-node pod traffic exists only
//!   once the cloud controller's route controller made them);
//! - forwarding rule + target pool -> the LB IP routed, without NAT, to the pool's healthy members
//!   (ECMP; health = the pool's HTTP health checks probed on each node every tick, with the checks'
//!   thresholds ([`lb_health`]); all members when none is healthy,
//!   as GCE does);
//! - firewall rules -> filter rules on traffic from outside (`client`) toward the nodes ([`firewall`]).
//!
//! It also plays the nodes' kubelets and the scheduler ([`crate::kubelet`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::kube::Api;
use crate::state::{self, CLIENT_GW, CLIENT_IP, CLIENT2_GW, CLIENT2_IP, State, VPC_IP};
use crate::{cluster, firewall, http, kubelet, lb_health, netns};

/// Kernel routes the agent owns carry this protocol number, so stale ones can be found and removed.
const PROTO: &str = "99";

/// Creates the `vpc` namespace and the two outside clients linked to it (`client` over `cl`, `client2`
/// over `cl2`: two sources for loadBalancerSourceRanges).
pub fn create(st: &State) -> Result<()> {
    let vpc = st.vpc();
    netns::add(&vpc)?;
    // The control plane's address, whatever node links come and go.
    netns::ip(&vpc, &["addr", "add", &format!("{VPC_IP}/32"), "dev", "lo"])?;
    for (ns, link, gw, ip) in [
        (st.client(), "cl", CLIENT_GW, CLIENT_IP),
        (st.client2(), "cl2", CLIENT2_GW, CLIENT2_IP),
    ] {
        netns::add(&ns)?;
        netns::veth(&vpc, link, &ns, "eth0")?;
        netns::ip(&vpc, &["addr", "add", &format!("{gw}/24"), "dev", link])?;
        netns::ip(&ns, &["addr", "add", &format!("{ip}/24"), "dev", "eth0"])?;
        netns::ip(&ns, &["route", "add", "default", "via", gw])?;
    }
    Ok(())
}

/// The agent loop (`svcnet-lab agent`), run inside the `vpc` namespace.
pub fn agent(dir: &Path) -> Result<()> {
    netns::ensure_inside(&state::load(dir)?.vpc())?;
    let mut last_fw = String::new();
    let mut health = lb_health::Checker::default();
    let mut kubelet = kubelet::Kubelet::new(dir);
    loop {
        let st = match state::load(dir) {
            Ok(st) => st,
            Err(_) => return Ok(()), // torn down
        };
        if let Err(e) = tick(&st, &mut last_fw, &mut health) {
            eprintln!("vpc agent: {e:#}");
        }
        if let Err(e) = kubelet.tick(dir, &st, &Api::Inside) {
            eprintln!("kubelet: {e:#}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn get(url: &str) -> Result<Value> {
    http::json("GET", url, "application/json", None)
}

/// The last path segment of a GCE URL (a resource name).
pub fn last(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

fn tick(st: &State, last_fw: &mut String, health: &mut lb_health::Checker) -> Result<()> {
    let gce = get(&cluster::gce_url("/_fake/state"))?;
    let arr = |k: &str| gce[k].as_array().cloned().unwrap_or_default();
    // Instance name -> (IP, link to it).
    let mut inst: BTreeMap<String, (String, String)> = BTreeMap::new();
    for i in arr("instances") {
        let name = i["name"].as_str().unwrap_or_default().to_owned();
        let ip = i["networkInterfaces"][0]["networkIP"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(node) = st.nodes.iter().find(|n| n.ip == ip) {
            inst.insert(name, (ip, format!("n{}", node.index)));
        }
    }
    // Destination -> next hops (IP, dev).
    let mut want: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for r in arr("routes") {
        let dest = r["destRange"].as_str().unwrap_or_default();
        let hop = r["nextHopInstance"]
            .as_str()
            .and_then(|u| inst.get(last(u)).cloned())
            .or_else(|| {
                let ip = r["nextHopIp"].as_str()?;
                inst.values().find(|(i, _)| i == ip).cloned()
            });
        if let Some(hop) = hop {
            want.entry(dest.to_owned()).or_default().push(hop);
        }
    }
    let pools: BTreeMap<String, Value> = arr("targetPools")
        .into_iter()
        .map(|p| (p["name"].as_str().unwrap_or_default().to_owned(), p))
        .collect();
    let checks: BTreeMap<String, Value> = arr("httpHealthChecks")
        .into_iter()
        .map(|h| (h["name"].as_str().unwrap_or_default().to_owned(), h))
        .collect();
    // One probe per member and check per tick, however many pools share the check.
    let mut decided: BTreeMap<(String, String), bool> = BTreeMap::new();
    for fr in arr("forwardingRules") {
        let (Some(ip), Some(target)) = (fr["IPAddress"].as_str(), fr["target"].as_str()) else {
            continue;
        };
        let Some(pool) = pools.get(last(target)) else {
            continue;
        };
        let members: Vec<(String, String)> = pool["instances"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u.as_str().and_then(|u| inst.get(last(u)).cloned()))
            .collect();
        let hc: Vec<&Value> = pool["healthChecks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u.as_str().and_then(|u| checks.get(last(u))))
            .collect();
        let healthy: Vec<(String, String)> = members
            .iter()
            .filter(|(mip, _)| {
                // Every check probed (no short cut), so each one's consecutive count stays true.
                hc.iter().fold(true, |all, h| {
                    let key = (mip.clone(), h["name"].as_str().unwrap_or_default().to_owned());
                    let up = *decided
                        .entry(key)
                        .or_insert_with(|| health.observe(mip, h, probe(mip, h)));
                    all && up
                })
            })
            .cloned()
            .collect();
        let hops = if healthy.is_empty() { members } else { healthy };
        if !hops.is_empty() {
            want.insert(format!("{ip}/32"), hops);
        }
    }
    health.retain(&decided.into_keys().collect::<Vec<_>>());
    program_routes(&want)?;
    let fw = firewall::render(&arr("firewalls"), &arr("instances"), &st.nodes);
    if fw != *last_fw {
        netns::run_stdin(&["iptables-restore"], &fw)?;
        *last_fw = fw;
    }
    Ok(())
}

/// HTTP health check of one member (GCE: 200 within the check's timeoutSec is a pass).
fn probe(ip: &str, hc: &Value) -> bool {
    let port = hc["port"].as_u64().unwrap_or(80);
    let path = hc["requestPath"].as_str().unwrap_or("/");
    let timeout = Duration::from_secs(hc["timeoutSec"].as_u64().unwrap_or(1).clamp(1, 5));
    http::request(
        "GET",
        &format!("http://{ip}:{port}{path}"),
        "text/plain",
        "",
        timeout,
    )
    .is_ok_and(|(code, _)| code == 200)
}

fn program_routes(want: &BTreeMap<String, Vec<(String, String)>>) -> Result<()> {
    let have = netns::run(&["ip", "-j", "route", "show", "proto", PROTO])?;
    let have: Vec<Value> = serde_json::from_str(&have).unwrap_or_default();
    let have: BTreeSet<String> = have
        .iter()
        .filter_map(|r| r["dst"].as_str())
        .map(|d| {
            if d.contains('/') {
                d.to_owned()
            } else {
                format!("{d}/32")
            }
        })
        .collect();
    for stale in have.iter().filter(|d| !want.contains_key(*d)) {
        let _ = netns::run(&["ip", "route", "del", stale, "proto", PROTO]);
    }
    for (dest, hops) in want {
        let mut args: Vec<String> = ["ip", "route", "replace", dest, "proto", PROTO]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let [(ip, dev)] = hops.as_slice() {
            args.extend(["via".into(), ip.clone(), "dev".into(), dev.clone()]);
        } else {
            for (ip, dev) in hops {
                args.extend([
                    "nexthop".into(),
                    "via".into(),
                    ip.clone(),
                    "dev".into(),
                    dev.clone(),
                ]);
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        netns::run(&refs)?;
    }
    Ok(())
}
