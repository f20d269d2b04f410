//! The `vpc` router namespace and its agent. The agent runs inside the `vpc` namespace and, every half
//! second, reads the fake GCE's `/_fake/state` and programs the namespace like GCE's network would:
//! - GCE routes (`nextHopInstance` / `nextHopIp`) -> kernel routes (cross-node pod traffic exists only
//!   once the cloud controller's route controller made them);
//! - nodes' IPv6 pod ranges -> routes to the nodes' IPv6 addresses (GCE routes a VPC-native node's
//!   alias range without route objects; the controller's GCE routes are IPv4);
//! - forwarding rules -> the rule's IP (an IPv6 rule's /96) routed, without NAT, to the healthy
//!   members of its backends ([`lb_targets`]: a target pool's instances, or a backend service's
//!   instance groups) (ECMP; health = the backends' HTTP health checks probed on each node every tick, with
//!   the checks' thresholds ([`lb_health`]); all members when none is healthy, as GCE does);
//! - firewall rules -> filter rules (a table per family) on traffic from outside (`client`) and from
//!   the `vm` toward the nodes, internal LB addresses closed to the outside and to other ports
//!   ([`firewall`]).
//!
//! It also plays the nodes' kubelets and the scheduler ([`crate::kubelet`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::Value;
use svcnet_netns::link;

use crate::kube::Api;
use crate::state::{
    self, CLIENT_GW, CLIENT_GW6, CLIENT_IP, CLIENT_IP6, CLIENT2_GW, CLIENT2_GW6, CLIENT2_IP, CLIENT2_IP6,
    State, VM_IP, VM_IP6, VPC_IP, VPC_IP6,
};
use crate::{firewall, gce, http, kubelet, lb_health, lb_targets, netns};

/// Kernel routes the agent owns carry this protocol number, so stale ones can be found and removed.
const PROTO: &str = "99";
/// The header a weighted backend service reads a member's weight from (GCE WEIGHTED_MAGLEV).
const WEIGHT_HEADER: &str = "x-load-balancing-endpoint-weight";
/// The kernel's largest nexthop weight.
const MAX_NEXTHOP_WEIGHT: u64 = 256;

/// A route's next hop: (IP, dev, weight).
pub type WeightedHop = (String, String, u64);

/// Creates the `vpc` namespace, the two outside clients linked to it (`client` over `cl`, `client2`
/// over `cl2`: two sources for loadBalancerSourceRanges) and the `vm` inside the VPC (over `vm`),
/// each with an IPv4 and an IPv6 address.
pub fn create(st: &State) -> Result<()> {
    let vpc = st.vpc();
    netns::add(&vpc)?;
    // The control plane's address, whatever node links come and go.
    link::addr(&vpc, "lo", &format!("{VPC_IP}/32"))?;
    for (ns, vpc_if, gw, ip, gw6, ip6) in [
        (st.client(), "cl", CLIENT_GW, CLIENT_IP, CLIENT_GW6, CLIENT_IP6),
        (
            st.client2(),
            "cl2",
            CLIENT2_GW,
            CLIENT2_IP,
            CLIENT2_GW6,
            CLIENT2_IP6,
        ),
    ] {
        netns::add(&ns)?;
        link::veth(&vpc, vpc_if, &ns, "eth0")?;
        link::addr(&vpc, vpc_if, &format!("{gw}/24"))?;
        link::addr(&ns, "eth0", &format!("{ip}/24"))?;
        link::route(&ns, "default", Some(gw), None)?;
        link::addr(&vpc, vpc_if, &format!("{gw6}/64"))?;
        link::addr(&ns, "eth0", &format!("{ip6}/64"))?;
        link::route(&ns, "default", Some(gw6), None)?;
    }
    create_vm(st)
}

/// A VM of the VPC that is no node (an internal LB's client): linked like a node (`/32` on `eth0`,
/// the router as gateway), so it reaches internal addresses the outside clients cannot.
fn create_vm(st: &State) -> Result<()> {
    let (vpc, vm) = (st.vpc(), st.vm());
    netns::add(&vm)?;
    netns::instance_link(&vpc, "vm", VPC_IP, &vm, VM_IP)?;
    netns::instance_link6(&vpc, "vm", VPC_IP6, &vm, VM_IP6)
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

fn tick(st: &State, last_fw: &mut String, health: &mut lb_health::Checker) -> Result<()> {
    let gce = get(&gce::url("/_fake/state"))?;
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
    let v6_of: BTreeMap<String, String> = st
        .nodes
        .iter()
        .filter(|n| !n.ip6.is_empty())
        .map(|n| (n.ip.clone(), n.ip6.clone()))
        .collect();
    let mut want = wanted_routes(&gce, &inst, health, &v6_of);
    // A node's IPv6 pods are reached as GCE reaches a VPC-native node's alias range: the network
    // knows the range is the node's (no GCE route object; the controller's routes are IPv4).
    for n in st
        .nodes
        .iter()
        .filter(|n| !n.pod_cidr6.is_empty() && !n.ip6.is_empty())
    {
        want.insert(
            n.pod_cidr6.clone(),
            vec![(n.ip6.clone(), format!("n{}", n.index), 1)],
        );
    }
    program_routes(&want)?;
    program_hash_policy(&gce, &inst)?;
    let links: Vec<lb_targets::Hop> = st
        .nodes
        .iter()
        .map(|n| (n.ip.clone(), format!("n{}", n.index)))
        .collect();
    apply_firewall(&gce, &links, last_fw)
}

/// Renders the GCE firewall for the router's links to the nodes, both families, and restores it when
/// it changed (`last_fw` holds both tables, so either change restores both).
pub(crate) fn apply_firewall(gce: &Value, links: &[lb_targets::Hop], last_fw: &mut String) -> Result<()> {
    let arr = |k: &str| gce[k].as_array().cloned().unwrap_or_default();
    let (fws, insts, internal) = (
        arr("firewalls"),
        arr("instances"),
        lb_targets::internal_rules(gce),
    );
    let fw4 = firewall::render(&fws, &insts, links, &internal);
    let fw6 = firewall::render6(&fws, &insts, links, &internal);
    let both = format!("{fw4}{fw6}");
    if both != *last_fw {
        netns::run_stdin(&["iptables-restore"], &fw4)?;
        netns::run_stdin(&["ip6tables-restore"], &fw6)?;
        *last_fw = both;
    }
    Ok(())
}

/// What GCE's network does with packets, as kernel routes: destination -> next hops (IP, dev,
/// weight). GCE routes go to their instance; a forwarding rule's IP to the healthy members of its
/// backends (probed here, over IPv4, with the checks' thresholds), weighted by their checks' answers
/// when the backend service is; an IPv6 rule's /96 goes to the same members by their IPv6 address
/// (`v6_of`: node IP -> IPv6; a member without one is left out). `inst` maps instance name -> (IP,
/// link to it).
pub(crate) fn wanted_routes(
    gce: &Value,
    inst: &BTreeMap<String, (String, String)>,
    health: &mut lb_health::Checker,
    v6_of: &BTreeMap<String, String>,
) -> BTreeMap<String, Vec<WeightedHop>> {
    let arr = |k: &str| gce[k].as_array().cloned().unwrap_or_default();
    let mut want: BTreeMap<String, Vec<WeightedHop>> = BTreeMap::new();
    for r in arr("routes") {
        let dest = r["destRange"].as_str().unwrap_or_default();
        let hop = r["nextHopInstance"]
            .as_str()
            .and_then(|u| inst.get(lb_targets::last(u)).cloned())
            .or_else(|| {
                let ip = r["nextHopIp"].as_str()?;
                inst.values().find(|(i, _)| i == ip).cloned()
            });
        if let Some((ip, dev)) = hop {
            want.entry(dest.to_owned()).or_default().push((ip, dev, 1));
        }
    }
    // One probe per member and check per tick, however many rules share the check.
    let mut decided: BTreeMap<(String, String), bool> = BTreeMap::new();
    let mut weights: BTreeMap<(String, String), u64> = BTreeMap::new();
    for t in lb_targets::targets(gce, inst) {
        let hops = lb_targets::hops(&t, |mip, h| {
            let key = (mip.to_owned(), h["name"].as_str().unwrap_or_default().to_owned());
            *decided.entry(key.clone()).or_insert_with(|| {
                let (passed, weight) = probe(mip, h);
                if let Some(w) = weight {
                    weights.insert(key, w);
                }
                health.observe(mip, h, passed, Instant::now())
            })
        });
        let mut hops = weigh(&t, hops, &weights);
        if lb_targets::is_ipv6(&t.ip) {
            hops = hops
                .into_iter()
                .filter_map(|(ip, dev, w)| Some((v6_of.get(&ip)?.clone(), dev, w)))
                .collect();
        }
        // Rules sharing an IP (TCP and UDP of one internal LB) reach the union of their members.
        let to = want.entry(lb_targets::dest(&t.ip)).or_default();
        for hop in hops {
            if !to.iter().any(|(ip, dev, _)| (ip, dev) == (&hop.0, &hop.1)) {
                to.push(hop);
            }
        }
    }
    want.retain(|_, hops| !hops.is_empty());
    health.retain(&decided.into_keys().collect::<Vec<_>>());
    want
}

/// Each hop's weight: 1, or for a weighted target the weight its (first) check answered with,
/// scaled into the kernel's 1..=256. Members answering 0 take no new connections (unless all do,
/// then all share equally), as GCE's weighted balancing treats a zero weight.
fn weigh(
    t: &lb_targets::Target,
    hops: Vec<(String, String)>,
    weights: &BTreeMap<(String, String), u64>,
) -> Vec<WeightedHop> {
    let check = t
        .checks
        .first()
        .and_then(|h| h["name"].as_str())
        .unwrap_or_default();
    let weight_of = |ip: &str| {
        if t.weighted {
            weights
                .get(&(ip.to_owned(), check.to_owned()))
                .copied()
                .unwrap_or(1)
        } else {
            1
        }
    };
    let raw: Vec<(String, String, u64)> = hops
        .into_iter()
        .map(|(ip, dev)| {
            let w = weight_of(&ip);
            (ip, dev, w)
        })
        .collect();
    let max = raw.iter().map(|h| h.2).max().unwrap_or(0);
    if max == 0 {
        return raw.into_iter().map(|(ip, dev, _)| (ip, dev, 1)).collect();
    }
    let scale = max.div_ceil(MAX_NEXTHOP_WEIGHT);
    raw.into_iter()
        .filter(|h| h.2 > 0)
        .map(|(ip, dev, w)| (ip, dev, (w / scale).max(1)))
        .collect()
}

/// HTTP health check of one member (GCE: 200 within the check's timeoutSec is a pass) and the
/// weight its answer carries, if any.
fn probe(ip: &str, hc: &Value) -> (bool, Option<u64>) {
    let port = hc["port"].as_u64().unwrap_or(80);
    let path = hc["requestPath"].as_str().unwrap_or("/");
    let timeout = Duration::from_secs(hc["timeoutSec"].as_u64().unwrap_or(1).clamp(1, 5));
    match http::get_head(&format!("http://{ip}:{port}{path}"), timeout) {
        Ok((code, head)) => (code == 200, header_weight(&head)),
        Err(_) => (false, None),
    }
}

/// The weight header's value in a response head.
pub(crate) fn header_weight(head: &str) -> Option<u64> {
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        if name.trim().eq_ignore_ascii_case(WEIGHT_HEADER) {
            value.trim().parse().ok()
        } else {
            None
        }
    })
}

/// The kernel's ECMP hash, which is one per namespace where GCE has one per load balancer: by
/// the 5-tuple while a weighted backend service exists (its split is measured over one client's
/// connections), else by the addresses only (the default, which keeps one client on one node as a
/// CLIENT_IP affinity needs).
pub(crate) fn program_hash_policy(gce: &Value, inst: &BTreeMap<String, (String, String)>) -> Result<()> {
    let weighted = lb_targets::targets(gce, inst).iter().any(|t| t.weighted);
    let want = if weighted { "1" } else { "0" };
    for path in [
        "/proc/sys/net/ipv4/fib_multipath_hash_policy",
        "/proc/sys/net/ipv6/fib_multipath_hash_policy",
    ] {
        if std::fs::read_to_string(path)
            .map(|v| v.trim() != want)
            .unwrap_or(true)
        {
            std::fs::write(path, want)?;
        }
    }
    Ok(())
}

/// Makes the namespace's routes of [`PROTO`] (both families) exactly `want`.
pub(crate) fn program_routes(want: &BTreeMap<String, Vec<WeightedHop>>) -> Result<()> {
    let mut have: BTreeSet<String> = BTreeSet::new();
    for family in ["-4", "-6"] {
        let listed = netns::run(&["ip", family, "-j", "route", "show", "proto", PROTO])?;
        let listed: Vec<Value> = serde_json::from_str(&listed).unwrap_or_default();
        have.extend(
            listed
                .iter()
                .filter_map(|r| r["dst"].as_str())
                .map(lb_targets::dest),
        );
    }
    for stale in have.iter().filter(|d| !want.contains_key(*d)) {
        let _ = netns::run(&["ip", "route", "del", stale, "proto", PROTO]);
    }
    for (dest, hops) in want {
        let mut args: Vec<String> = ["ip", "route", "replace", dest, "proto", PROTO]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let [(ip, dev, _)] = hops.as_slice() {
            args.extend(["via".into(), ip.clone(), "dev".into(), dev.clone()]);
        } else {
            for (ip, dev, weight) in hops {
                args.extend([
                    "nexthop".into(),
                    "via".into(),
                    ip.clone(),
                    "dev".into(),
                    dev.clone(),
                    "weight".into(),
                    weight.to_string(),
                ]);
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        netns::run(&refs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
