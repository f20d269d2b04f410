//! GCE firewall rules -> the VPC router's filter table (the lab's `vpc` namespace, the kind e2e's engine
//! namespace). Traffic entering from outside (the client links `cl`, `cl2`) and from the VPC's `vm` is
//! filtered, as GCE's implied deny-ingress does for every source a rule does not allow; traffic between
//! nodes is allowed (the cluster's allow-internal). A rule applies to the nodes whose instance tags meet
//! its `targetTags` (all nodes without target tags), matched by the router's link toward each node: where
//! several nodes share one link (kind's bridge), a rule that targets one of them opens that link.
//!
//! Internal forwarding rules' addresses (`LAB-ILB`, before the rules): dropped from outside (the
//! internet has no route to a VPC's internal address) and, from inside, on any protocol or port the
//! rule does not forward (GCE delivers only those); what passes still needs a firewall rule (the
//! Service's `k8s-fw-`, with its source ranges).
//!
//! Each family gets its own table ([`render`] for `iptables-restore`, [`render6`] for
//! `ip6tables-restore`) from the ranges of that family: GCE keeps IPv4 and IPv6 ranges apart (the
//! `-ipv6` firewalls ingress-gce makes), and a rule without `sourceRanges` allows IPv4 from anywhere
//! only (GCE's default source is `0.0.0.0/0`). Pure: JSON in, text out.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::lb_targets::{self, Hop, InternalRule};

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// The whole IPv4 filter table for `iptables-restore`. `nodes`: each node's IP and the router's link
/// to it.
pub fn render(firewalls: &[Value], instances: &[Value], nodes: &[Hop], internal: &[InternalRule]) -> String {
    render_family(false, firewalls, instances, nodes, internal)
}

/// The IPv6 filter table for `ip6tables-restore`, from the rules' IPv6 ranges and the IPv6
/// internal forwarding rules.
pub fn render6(firewalls: &[Value], instances: &[Value], nodes: &[Hop], internal: &[InternalRule]) -> String {
    render_family(true, firewalls, instances, nodes, internal)
}

/// A rule's ranges of one family: `field`'s entries of that family, `default` when the field is
/// empty (None: the rule does not apply to the family), None when it lists only the other family.
fn ranges(fw: &Value, field: &str, v6: bool, default: Option<&str>) -> Option<Vec<String>> {
    let all = strs(&fw[field]);
    if all.is_empty() {
        return default.map(|d| vec![d.to_owned()]);
    }
    let mine: Vec<String> = all.into_iter().filter(|r| lb_targets::is_ipv6(r) == v6).collect();
    (!mine.is_empty()).then_some(mine)
}

fn render_family(
    v6: bool,
    firewalls: &[Value],
    instances: &[Value],
    nodes: &[Hop],
    internal: &[InternalRule],
) -> String {
    // Node IP -> tags of its instance.
    let tags: BTreeMap<String, Vec<String>> = instances
        .iter()
        .map(|i| {
            (
                i["networkInterfaces"][0]["networkIP"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                strs(&i["tags"]["items"]),
            )
        })
        .collect();
    let mut out = String::from(
        "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:LAB-FW - [0:0]\n\
         :LAB-ILB - [0:0]\n-A FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n\
         -A FORWARD -j LAB-ILB\n-A FORWARD -i cl+ -j LAB-FW\n-A FORWARD -i vm -j LAB-FW\n",
    );
    let internal: Vec<InternalRule> = internal
        .iter()
        .filter(|r| lb_targets::is_ipv6(&r.ip) == v6)
        .cloned()
        .collect();
    out.push_str(&internal_addresses(&internal));
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut sorted: Vec<&Value> = firewalls.iter().collect();
    sorted.sort_by_key(|f| f["name"].as_str().unwrap_or_default().to_owned());
    for fw in sorted {
        if fw["disabled"].as_bool() == Some(true)
            || fw["direction"].as_str().is_some_and(|d| d != "INGRESS")
            || fw["allowed"].as_array().is_none_or(Vec::is_empty)
        {
            continue;
        }
        let name = fw["name"].as_str().unwrap_or_default();
        let target_tags = strs(&fw["targetTags"]);
        let any_src = (!v6).then_some("0.0.0.0/0");
        let any_dst = if v6 { "::/0" } else { "0.0.0.0/0" };
        let (Some(srcs), Some(dsts)) = (
            ranges(fw, "sourceRanges", v6, any_src),
            ranges(fw, "destinationRanges", v6, Some(any_dst)),
        ) else {
            continue;
        };
        for (node_ip, link) in nodes {
            let node_tags = tags.get(node_ip).cloned().unwrap_or_default();
            if !target_tags.is_empty() && !target_tags.iter().any(|t| node_tags.contains(t)) {
                continue;
            }
            for allowed in fw["allowed"].as_array().into_iter().flatten() {
                for line in allowed_lines(v6, link, name, &srcs, &dsts, allowed) {
                    // Nodes sharing a link would repeat the same line.
                    if seen.insert(line.clone()) {
                        out.push_str(&line);
                    }
                }
            }
        }
    }
    out.push_str("-A LAB-FW -j DROP\nCOMMIT\n");
    out
}

/// The `LAB-FW` lines of one `allowed` entry of rule `name` toward `link`: every source, destination
/// and port.
fn allowed_lines(
    v6: bool,
    link: &str,
    name: &str,
    srcs: &[String],
    dsts: &[String],
    allowed: &Value,
) -> Vec<String> {
    let proto = allowed["IPProtocol"]
        .as_str()
        .unwrap_or("all")
        .to_ascii_lowercase();
    // ICMP is IPv4's; IPv6 rules name ipv6-icmp (58).
    if v6 && proto == "icmp" {
        return Vec::new();
    }
    let mut ports = strs(&allowed["ports"]);
    if ports.is_empty() {
        ports.push(String::new());
    }
    let mut out = Vec::new();
    for src in srcs {
        for dst in dsts {
            for port in &ports {
                let mut line = format!("-A LAB-FW -o {link} -s {src} -d {dst}");
                if proto != "all" {
                    line.push_str(&format!(" -p {proto}"));
                    if !port.is_empty() && (proto == "tcp" || proto == "udp") {
                        line.push_str(&format!(" --dport {}", port.replace('-', ":")));
                    }
                }
                line.push_str(&format!(" -m comment --comment \"{name}\" -j ACCEPT\n"));
                out.push(line);
            }
        }
    }
    out
}

/// `LAB-ILB`: outside sources dropped, then what the rules forward returns to the firewall, then the
/// rest to their addresses dropped (one address may carry a TCP and a UDP rule: all returns first).
fn internal_addresses(internal: &[InternalRule]) -> String {
    let ips: BTreeSet<String> = internal.iter().map(|r| lb_targets::dest(&r.ip)).collect();
    let mut out = String::new();
    for ip in &ips {
        out.push_str(&format!(
            "-A LAB-ILB -i cl+ -d {ip} -m comment --comment \"internal address\" -j DROP\n"
        ));
    }
    for r in internal {
        let mut ports: Vec<String> = r.ports.iter().map(|p| p.replace('-', ":")).collect();
        let with_ports = r
            .protocol
            .as_deref()
            .is_some_and(|p| ["tcp", "udp", "sctp"].contains(&p));
        if ports.is_empty() || !with_ports {
            ports = vec![String::new()];
        }
        for port in &ports {
            out.push_str(&format!("-A LAB-ILB -d {}", lb_targets::dest(&r.ip)));
            if let Some(proto) = &r.protocol {
                out.push_str(&format!(" -p {proto}"));
                if !port.is_empty() {
                    out.push_str(&format!(" --dport {port}"));
                }
            }
            out.push_str(&format!(" -m comment --comment \"{}\" -j RETURN\n", r.name));
        }
    }
    for ip in &ips {
        out.push_str(&format!(
            "-A LAB-ILB -d {ip} -m comment --comment \"not forwarded\" -j DROP\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests;
