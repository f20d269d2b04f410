//! Service semantics the real apiserver implements itself: defaulting, validation, ClusterIP allocation from
//! the service CIDRs (one per family, see [`cluster_ips`]), NodePort and healthCheckNodePort allocation from
//! the node-port range, and release of those values on delete or type change (allocations are derived from
//! the stored Services, so release is implicit).

mod cluster_ips;
mod ranges;

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::{Map, Value, json};

pub use ranges::ServiceCidrs;

#[derive(Debug, Clone)]
pub struct ServiceConfig {
    pub cidrs: ServiceCidrs,
    pub node_ports: (u16, u16),
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            cidrs: ServiceCidrs::default(),
            node_ports: (30000, 32767),
        }
    }
}

/// Values held by stored Services, maintained on every commit.
#[derive(Debug, Default)]
pub struct Allocations {
    ips: HashSet<IpAddr>,
    ports: HashSet<u16>,
}

fn held(svc: &Value) -> (Vec<IpAddr>, Vec<u16>) {
    let spec = svc.get("spec");
    let ips = spec
        .and_then(|s| s.get("clusterIPs"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default();
    let mut ports: Vec<u16> = spec
        .and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p.get("nodePort")?.as_u64())
                .map(|p| p as u16)
                .collect()
        })
        .unwrap_or_default();
    if let Some(h) = spec
        .and_then(|s| s.get("healthCheckNodePort"))
        .and_then(Value::as_u64)
    {
        ports.push(h as u16);
    }
    (ips, ports)
}

impl Allocations {
    pub fn track(&mut self, old: Option<&Value>, new: Option<&Value>) {
        if let Some(o) = old {
            let (ips, ports) = held(o);
            ips.iter().for_each(|i| {
                self.ips.remove(i);
            });
            ports.iter().for_each(|p| {
                self.ports.remove(p);
            });
        }
        if let Some(n) = new {
            let (ips, ports) = held(n);
            self.ips.extend(ips);
            self.ports.extend(ports);
        }
    }
}

type Causes = Vec<(String, String)>;

/// Defaults, validates and allocates `svc` in place. `old` is the stored object on update.
pub fn admit(
    cfg: &ServiceConfig,
    alloc: &Allocations,
    svc: &mut Value,
    old: Option<&Value>,
) -> Result<(), Causes> {
    let (_, old_ports) = old.map(held).unwrap_or_default();
    let mut causes: Causes = Vec::new();
    let mut bad = |f: &str, m: String| causes.push((f.to_string(), m));
    if !svc.get("spec").is_some_and(Value::is_object) {
        svc["spec"] = json!({});
    }
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
        return Err(vec![]);
    };
    let old_spec = old.and_then(|o| o.get("spec"));
    let s = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();

    let ty = match s(spec, "type").as_str() {
        "" => "ClusterIP".to_string(),
        t @ ("ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName") => t.to_string(),
        other => {
            bad(
                "spec.type",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
                ),
            );
            other.to_string()
        }
    };
    spec.insert("type".into(), json!(ty));
    let external = ty == "NodePort" || ty == "LoadBalancer";
    let wants_node_ports = ty == "NodePort"
        || (ty == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts").and_then(Value::as_bool) != Some(false));
    if ty == "LoadBalancer" && !spec.contains_key("allocateLoadBalancerNodePorts") {
        spec.insert("allocateLoadBalancerNodePorts".into(), json!(true));
    }

    match s(spec, "sessionAffinity").as_str() {
        "" | "None" => {
            spec.insert("sessionAffinity".into(), json!("None"));
            spec.remove("sessionAffinityConfig");
        }
        "ClientIP" => {
            if spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .is_none()
            {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        other => bad("spec.sessionAffinity", format!("Unsupported value: \"{other}\"")),
    }

    if ty == "ExternalName" {
        if s(spec, "externalName").is_empty() {
            bad("spec.externalName", "Required value".into());
        }
        for k in [
            "clusterIP",
            "clusterIPs",
            "ipFamilies",
            "ipFamilyPolicy",
            "internalTrafficPolicy",
            "externalTrafficPolicy",
            "healthCheckNodePort",
        ] {
            spec.remove(k);
        }
    } else {
        // Old Services of type ExternalName held no IPs: becoming another type allocates as a create does.
        let old_ips = old_spec
            .and_then(Value::as_object)
            .map(|o| (o, o.get("type").and_then(Value::as_str).unwrap_or("ClusterIP")))
            .filter(|(_, t)| *t != "ExternalName")
            .map(|(spec, ty)| cluster_ips::Old { spec, ty });
        if let Err(c) = cluster_ips::admit(&cfg.cidrs, alloc, spec, &ty, old_ips) {
            c.into_iter().for_each(|(f, m)| bad(&f, m));
        }
        match s(spec, "internalTrafficPolicy").as_str() {
            "" => {
                spec.insert("internalTrafficPolicy".into(), json!("Cluster"));
            }
            "Cluster" | "Local" => {}
            other => bad(
                "spec.internalTrafficPolicy",
                format!("Unsupported value: \"{other}\""),
            ),
        }
        match (s(spec, "externalTrafficPolicy").as_str(), external) {
            ("", true) => {
                spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
            }
            ("", false) => {}
            ("Cluster" | "Local", true) => {}
            (_, false) => bad(
                "spec.externalTrafficPolicy",
                "may only be set for externally-accessible services".into(),
            ),
            (other, true) => bad(
                "spec.externalTrafficPolicy",
                format!("Unsupported value: \"{other}\""),
            ),
        }
    }

    let mut taken: HashSet<u16> = HashSet::new();
    let old_ports_list = old_spec
        .and_then(|o| o.get("ports"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let headless = s(spec, "clusterIP") == "None";
    let ports_missing = spec
        .get("ports")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if ports_missing && ty != "ExternalName" && !headless {
        bad("spec.ports", "Required value".into());
    }
    let list = spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    let n = list.len();
    let mut seen_names = HashSet::new();
    let mut seen_ports = HashSet::new();
    let mut out_ports = Vec::new();
    for (i, mut p) in list.into_iter().enumerate() {
        let f = |x: &str| format!("spec.ports[{i}].{x}");
        let Some(pm) = p.as_object_mut() else {
            bad(&format!("spec.ports[{i}]"), "must be an object".into());
            continue;
        };
        let port = pm.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            bad(
                &f("port"),
                format!("Invalid value: {port}: must be between 1 and 65535, inclusive"),
            );
        }
        let proto = match s(pm, "protocol").as_str() {
            "" => "TCP".to_string(),
            p @ ("TCP" | "UDP" | "SCTP") => p.to_string(),
            other => {
                bad(
                    &f("protocol"),
                    format!("Unsupported value: \"{other}\": supported values: \"SCTP\", \"TCP\", \"UDP\""),
                );
                other.to_string()
            }
        };
        pm.insert("protocol".into(), json!(proto));
        let name = s(pm, "name");
        if n > 1 && name.is_empty() {
            bad(&f("name"), "Required value".into());
        }
        if !name.is_empty() && !seen_names.insert(name.clone()) {
            bad(&f("name"), format!("Duplicate value: \"{name}\""));
        }
        if !seen_ports.insert((port, proto.clone())) {
            bad(&f("port"), format!("Duplicate value: {port}/{proto}"));
        }
        match pm.get("targetPort") {
            None | Some(Value::Null) => {
                pm.insert("targetPort".into(), json!(port));
            }
            Some(Value::Number(t)) if !(1..=65535).contains(&t.as_i64().unwrap_or(0)) => {
                bad(
                    &f("targetPort"),
                    format!("Invalid value: {t}: must be between 1 and 65535, inclusive"),
                );
            }
            _ => {}
        }
        let requested = pm.get("nodePort").and_then(Value::as_u64).unwrap_or(0) as u16;
        if !wants_node_ports {
            pm.remove("nodePort");
        } else {
            let kept = old_ports_list
                .iter()
                .find(|o| {
                    o.get("port").and_then(Value::as_i64) == Some(port)
                        && o.get("protocol").and_then(Value::as_str).unwrap_or("TCP") == proto
                })
                .and_then(|o| o.get("nodePort")?.as_u64())
                .map(|x| x as u16);
            let np = match (requested, kept) {
                (0, Some(k)) => Ok(k),
                (0, None) => allocate_port(cfg, alloc, &taken).ok_or("range is full".to_string()),
                (r, _) => check_port(cfg, alloc, &old_ports, &taken, r),
            };
            match np {
                Ok(np) => {
                    taken.insert(np);
                    pm.insert("nodePort".into(), json!(np));
                }
                Err(m) => bad(&f("nodePort"), m),
            }
        }
        out_ports.push(p);
    }
    if !out_ports.is_empty() || !ports_missing {
        spec.insert("ports".into(), Value::Array(out_ports));
    }

    // healthCheckNodePort: only for LoadBalancer with externalTrafficPolicy Local.
    let needs_hc = ty == "LoadBalancer" && s(spec, "externalTrafficPolicy") == "Local";
    if needs_hc {
        let requested = spec
            .get("healthCheckNodePort")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u16;
        let kept = old_spec
            .and_then(|o| o.get("healthCheckNodePort"))
            .and_then(Value::as_u64)
            .map(|x| x as u16);
        let hc = match (requested, kept) {
            (0, Some(k)) => Ok(k),
            (0, None) => allocate_port(cfg, alloc, &taken).ok_or("range is full".to_string()),
            (r, Some(k)) if r == k => Ok(k),
            (r, _) => check_port(cfg, alloc, &old_ports, &taken, r),
        };
        match hc {
            Ok(p) => {
                spec.insert("healthCheckNodePort".into(), json!(p));
            }
            Err(m) => bad("spec.healthCheckNodePort", m),
        }
    } else {
        spec.remove("healthCheckNodePort");
    }
    if causes.is_empty() { Ok(()) } else { Err(causes) }
}

fn allocate_port(cfg: &ServiceConfig, alloc: &Allocations, taken: &HashSet<u16>) -> Option<u16> {
    (cfg.node_ports.0..=cfg.node_ports.1).find(|p| !alloc.ports.contains(p) && !taken.contains(p))
}

fn check_port(
    cfg: &ServiceConfig,
    alloc: &Allocations,
    own: &[u16],
    taken: &HashSet<u16>,
    r: u16,
) -> Result<u16, String> {
    if r < cfg.node_ports.0 || r > cfg.node_ports.1 {
        return Err(format!(
            "Invalid value: {r}: provided port is not in the valid range. The range of valid ports is {}-{}",
            cfg.node_ports.0, cfg.node_ports.1
        ));
    }
    if (alloc.ports.contains(&r) && !own.contains(&r)) || taken.contains(&r) {
        return Err(format!("Invalid value: {r}: provided port is already allocated"));
    }
    Ok(r)
}

#[cfg(test)]
mod tests;
