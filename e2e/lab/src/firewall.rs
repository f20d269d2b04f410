//! GCE firewall rules -> the `vpc` namespace's filter table. Only traffic entering from outside (the
//! client links `cl`, `cl2`) is filtered, as GCE's implied deny-ingress does for traffic from the internet;
//! traffic between nodes is allowed (the default network's allow-internal). A rule applies to the nodes
//! whose instance tags meet its `targetTags` (all nodes without target tags). Pure: JSON in, text out.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::state::Node;

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// The whole filter table for `iptables-restore`.
pub fn render(firewalls: &[Value], instances: &[Value], nodes: &[Node]) -> String {
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
         -A FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n-A FORWARD -i cl+ -j LAB-FW\n",
    );
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
        let mut srcs: Vec<String> = strs(&fw["sourceRanges"]);
        if srcs.is_empty() {
            srcs.push("0.0.0.0/0".into());
        }
        let mut dsts: Vec<String> = strs(&fw["destinationRanges"]);
        if dsts.is_empty() {
            dsts.push("0.0.0.0/0".into());
        }
        for node in nodes {
            let node_tags = tags.get(&node.ip).cloned().unwrap_or_default();
            if !target_tags.is_empty() && !target_tags.iter().any(|t| node_tags.contains(t)) {
                continue;
            }
            for allowed in fw["allowed"].as_array().into_iter().flatten() {
                let proto = allowed["IPProtocol"]
                    .as_str()
                    .unwrap_or("all")
                    .to_ascii_lowercase();
                let mut ports = strs(&allowed["ports"]);
                if ports.is_empty() {
                    ports.push(String::new());
                }
                for src in &srcs {
                    for dst in &dsts {
                        for port in &ports {
                            out.push_str(&format!("-A LAB-FW -o n{} -s {src} -d {dst}", node.index));
                            if proto != "all" {
                                out.push_str(&format!(" -p {proto}"));
                                if !port.is_empty() && (proto == "tcp" || proto == "udp") {
                                    out.push_str(&format!(" --dport {}", port.replace('-', ":")));
                                }
                            }
                            out.push_str(&format!(" -m comment --comment \"{name}\" -j ACCEPT\n"));
                        }
                    }
                }
            }
        }
    }
    out.push_str("-A LAB-FW -j DROP\nCOMMIT\n");
    out
}

#[cfg(test)]
mod tests;
