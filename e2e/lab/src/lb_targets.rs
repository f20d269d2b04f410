//! Which nodes a forwarding rule's IP is delivered to, read from the fake GCE's state. Two kinds, as
//! GCE has them:
//! - external: forwarding rule -> `target` pool -> its `instances`, checked by the pool's legacy
//!   `httpHealthChecks` (`port`, `requestPath` at the top level);
//! - backend service (internal, `loadBalancingScheme: INTERNAL`, or external, the backend-service
//!   network LB GKE builds): forwarding rule -> `backendService` (regional) -> its backends'
//!   instance groups -> their members (`_members` in the fake's state, which GCE only shows
//!   through `listInstances`), checked by the backend service's `healthChecks`, global or regional
//!   (`httpHealthCheck.port`, `.requestPath`).
//!
//! IPv6 rules (`ipVersion: IPV6`) deliver the same way; their `IPAddress` is the /96 GCE gives
//! them (`ADDR/96`), and that range is what the network delivers ([`dest`]).
//!
//! Both are pass-through: the packet keeps the forwarding rule's IP as destination, so a node takes
//! it with its Service's LB-ingress rules. Checks come out in one shape (the legacy one, named by
//! collection so a legacy and a new check of the same name stay apart) for [`crate::lb_health`].
//! Pure: JSON in, plain data out.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// A member node: (node IP, the VPC router's link to it).
pub type Hop = (String, String);

/// One forwarding rule's delivery: its IP, the member nodes and the health checks that judge them.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The rule's `IPAddress`: an IPv4 address, or an IPv6 rule's `ADDR/96`.
    pub ip: String,
    pub members: Vec<Hop>,
    /// Normalized checks: `name` (`<collection>/<name>`), `port`, `requestPath`, `timeoutSec`,
    /// `checkIntervalSec`, `healthyThreshold`, `unhealthyThreshold`.
    pub checks: Vec<Value>,
    /// The backend service's `localityLbPolicy` is `WEIGHTED_MAGLEV`: new connections split by the
    /// weight each member's check answers with (`X-Load-Balancing-Endpoint-Weight`).
    pub weighted: bool,
}

/// The part of an INTERNAL forwarding rule the VPC's filter needs: where and what it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InternalRule {
    pub name: String,
    /// The rule's `IPAddress` (an IPv6 rule's is `ADDR/96`).
    pub ip: String,
    /// Lower case (`tcp`, `udp`, ...); None for `L3_DEFAULT` (every protocol).
    pub protocol: Option<String>,
    /// The rule's `ports` (single ports or `lo-hi`); empty with `allPorts` (every port).
    pub ports: Vec<String>,
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The last path segment of a GCE URL (a resource name).
pub fn last(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// A GCE link without its scheme and host (`projects/...`), so links from different hosts compare.
fn link_key(url: &str) -> &str {
    url.find("projects/").map_or(url, |i| &url[i..])
}

fn is_internal(fr: &Value) -> bool {
    fr["loadBalancingScheme"] == "INTERNAL"
}

/// Objects of one collection of the state dump by link key (selfLink) and by name.
fn by_link(gce: &Value, collection: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for o in arr(&gce[collection]) {
        out.insert(link_key(s(&o["selfLink"])).to_owned(), o.clone());
        out.insert(s(&o["name"]).to_owned(), o.clone());
    }
    out
}

fn find<'a>(objs: &'a BTreeMap<String, Value>, url: &str) -> Option<&'a Value> {
    objs.get(link_key(url)).or_else(|| objs.get(last(url)))
}

/// A legacy `httpHealthCheck` or a `healthCheck` (HTTP, global or regional) in the legacy shape.
fn normalize(collection: &str, hc: &Value) -> Value {
    let http = if collection != "httpHealthChecks" {
        &hc["httpHealthCheck"]
    } else {
        hc
    };
    json!({
        "name": format!("{collection}/{}", s(&hc["name"])),
        "port": http["port"].as_u64().unwrap_or(80),
        "requestPath": http["requestPath"].as_str().unwrap_or("/"),
        "timeoutSec": hc["timeoutSec"],
        "checkIntervalSec": hc["checkIntervalSec"],
        "healthyThreshold": hc["healthyThreshold"],
        "unhealthyThreshold": hc["unhealthyThreshold"],
    })
}

fn members(urls: &[Value], inst: &BTreeMap<String, Hop>) -> Vec<Hop> {
    urls.iter()
        .filter_map(|u| inst.get(last(s(u))).cloned())
        .collect()
}

fn checks(urls: &[Value], objs: &BTreeMap<String, Value>, collection: &str) -> Vec<Value> {
    urls.iter()
        .filter_map(|u| find(objs, s(u)))
        .map(|hc| normalize(collection, hc))
        .collect()
}

/// The destination a rule's `IPAddress` stands for, as a CIDR: `ADDR/32` for an IPv4 address, an
/// IPv6 rule's `ADDR/96` as it is (a bare IPv6 address as `/128`).
pub fn dest(ip: &str) -> String {
    if ip.contains('/') {
        ip.to_owned()
    } else if is_ipv6(ip) {
        format!("{ip}/128")
    } else {
        format!("{ip}/32")
    }
}

/// Whether a rule's `IPAddress` (`ADDR` or `ADDR/LEN`) is IPv6.
pub fn is_ipv6(ip: &str) -> bool {
    ip.contains(':')
}

/// Every forwarding rule whose backends exist, with its members (instances the lab runs, by name in
/// `inst`) and checks: through its `backendService` when it has one (whatever its scheme), else its
/// `target` pool. Rules of unknown pools or backend services are left out (nothing to deliver to),
/// and so are rules without an address.
pub fn targets(gce: &Value, inst: &BTreeMap<String, Hop>) -> Vec<Target> {
    let pools = by_link(gce, "targetPools");
    let legacy = by_link(gce, "httpHealthChecks");
    let services = by_link(gce, "backendServices");
    let groups = by_link(gce, "instanceGroups");
    let hcs = by_link(gce, "healthChecks");
    let region_hcs = by_link(gce, "regionHealthChecks");
    let mut out = Vec::new();
    for fr in arr(&gce["forwardingRules"]) {
        let ip = s(&fr["IPAddress"]).to_owned();
        if ip.is_empty() {
            continue;
        }
        let target = if !s(&fr["backendService"]).is_empty() {
            let Some(bs) = find(&services, s(&fr["backendService"])) else {
                continue;
            };
            // A regional check's link names its region; a global one's does not.
            let (global, regional): (Vec<Value>, Vec<Value>) = arr(&bs["healthChecks"])
                .iter()
                .cloned()
                .partition(|u| !s(u).contains("/regions/"));
            let mut c = checks(&global, &hcs, "healthChecks");
            c.extend(checks(&regional, &region_hcs, "regionHealthChecks"));
            Target {
                ip,
                members: group_members(bs, &groups, inst),
                checks: c,
                weighted: bs["localityLbPolicy"] == "WEIGHTED_MAGLEV",
            }
        } else {
            let Some(pool) = find(&pools, s(&fr["target"])) else {
                continue;
            };
            Target {
                ip,
                members: members(arr(&pool["instances"]), inst),
                checks: checks(arr(&pool["healthChecks"]), &legacy, "httpHealthChecks"),
                weighted: false,
            }
        };
        out.push(target);
    }
    out
}

/// The members of a backend service's instance groups, each once.
fn group_members(bs: &Value, groups: &BTreeMap<String, Value>, inst: &BTreeMap<String, Hop>) -> Vec<Hop> {
    let mut m: Vec<Hop> = Vec::new();
    for b in arr(&bs["backends"]) {
        let Some(group) = find(groups, s(&b["group"])) else {
            continue;
        };
        for hop in members(arr(&group["_members"]), inst) {
            if !m.contains(&hop) {
                m.push(hop);
            }
        }
    }
    m
}

/// Where the target's IP goes: the members every check finds healthy (`healthy(member IP, check)`,
/// asked for every member and check, so each check's consecutive count stays true); all members when
/// none is healthy, as GCE does.
pub fn hops(t: &Target, mut healthy: impl FnMut(&str, &Value) -> bool) -> Vec<Hop> {
    let up: Vec<Hop> = t
        .members
        .iter()
        .filter(|(ip, _)| {
            // Every check probed (no short cut), so each one's consecutive count stays true.
            let passed: Vec<bool> = t.checks.iter().map(|hc| healthy(ip, hc)).collect();
            passed.iter().all(|p| *p)
        })
        .cloned()
        .collect();
    if up.is_empty() { t.members.clone() } else { up }
}

/// The INTERNAL forwarding rules of both families, sorted by name.
pub fn internal_rules(gce: &Value) -> Vec<InternalRule> {
    let mut out: Vec<InternalRule> = arr(&gce["forwardingRules"])
        .iter()
        .filter(|fr| is_internal(fr) && !s(&fr["IPAddress"]).is_empty())
        .map(|fr| {
            let proto = s(&fr["IPProtocol"]).to_ascii_lowercase();
            InternalRule {
                name: s(&fr["name"]).to_owned(),
                ip: s(&fr["IPAddress"]).to_owned(),
                protocol: (!proto.is_empty() && proto != "l3_default").then_some(proto),
                ports: if fr["allPorts"].as_bool() == Some(true) {
                    Vec::new()
                } else {
                    arr(&fr["ports"]).iter().map(|p| s(p).to_owned()).collect()
                },
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests;
