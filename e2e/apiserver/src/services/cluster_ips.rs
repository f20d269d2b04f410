//! `clusterIP`, `clusterIPs`, `ipFamilies` and `ipFamilyPolicy`: what the real apiserver does with them
//! (service strategy `patchAllocatedValues`/`normalizeClusterIPs`, the update checks of
//! `pkg/apis/core/validation`, `initIPFamilyFields` and the per-family allocation of the service
//! registry), for one or two configured ranges. Allocated addresses are derived from the stored
//! Services (see [`super::Allocations`]), so releasing a secondary IP is just storing the Service without it.

mod checks;

use std::net::IpAddr;

use serde_json::{Map, Value, json};

use super::ranges::{IpFamily, ServiceCidrs};
use super::{Allocations, Causes};
use checks::{check_fields, check_update, family_of, list};

const NONE: &str = "None";
const SINGLE: &str = "SingleStack";
const PREFER: &str = "PreferDualStack";
const REQUIRE: &str = "RequireDualStack";

/// The four linked fields of one Service spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct IpFields {
    cluster_ip: String,
    cluster_ips: Vec<String>,
    families: Vec<String>,
    policy: Option<String>,
}

impl IpFields {
    fn read(spec: &Map<String, Value>) -> Self {
        let strings = |k: &str| -> Vec<String> {
            spec.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect())
                .unwrap_or_default()
        };
        IpFields {
            cluster_ip: spec
                .get("clusterIP")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            cluster_ips: strings("clusterIPs"),
            families: strings("ipFamilies"),
            policy: spec
                .get("ipFamilyPolicy")
                .and_then(Value::as_str)
                .map(String::from),
        }
    }

    fn write(&self, spec: &mut Map<String, Value>) {
        spec.insert("clusterIP".into(), json!(self.cluster_ip));
        spec.insert("clusterIPs".into(), json!(self.cluster_ips));
        spec.insert("ipFamilies".into(), json!(self.families));
        spec.insert("ipFamilyPolicy".into(), json!(self.policy));
    }

    fn headless(&self) -> bool {
        self.cluster_ips.len() == 1 && self.cluster_ips[0] == NONE
    }

    fn policy(&self) -> &str {
        self.policy.as_deref().unwrap_or("")
    }
}

/// The stored Service being updated, when it had cluster IP fields (an ExternalName had none: changing
/// its type is treated as a create, as upstream does).
pub struct Old<'a> {
    pub spec: &'a Map<String, Value>,
    pub ty: &'a str,
}

/// Defaults, checks and allocates the four fields of `spec` (a ClusterIP, NodePort or LoadBalancer
/// Service) in place.
pub fn admit(
    cidrs: &ServiceCidrs,
    alloc: &Allocations,
    spec: &mut Map<String, Value>,
    ty: &str,
    old: Option<Old<'_>>,
) -> Result<(), Causes> {
    let has_selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    let old_fields = old.as_ref().map(|o| IpFields::read(o.spec));
    let mut f = IpFields::read(spec);
    if let Some(o) = &old_fields {
        prepare_update(&mut f, o);
        let causes = check_update(&f, o);
        if !causes.is_empty() {
            return Err(causes);
        }
    } else if !f.cluster_ip.is_empty() && f.cluster_ips.is_empty() {
        // An old client sets only the singular field.
        f.cluster_ips = vec![f.cluster_ip.clone()];
    }
    let same_type = old.as_ref().is_some_and(|o| o.ty == ty);
    let unchanged_prefer = same_type
        && old_fields
            .as_ref()
            .is_some_and(|o| matching_prefer_dual_stack(&f, o));
    if !unchanged_prefer {
        init_families(cidrs, &mut f, old_fields.as_ref(), has_selector)?;
        allocate(cidrs, alloc, &mut f, old_fields.as_ref())?;
    }
    f.write(spec);
    Ok(())
}

/// Strategy work on update: keep what was allocated when the client left it out, and keep the singular
/// and plural fields in step when an old client changed only `clusterIP`.
fn prepare_update(f: &mut IpFields, o: &IpFields) {
    if f.cluster_ip.is_empty() {
        f.cluster_ip = o.cluster_ip.clone();
    }
    if f.cluster_ips.is_empty() {
        f.cluster_ips = o.cluster_ips.clone();
    }
    if f.cluster_ip != o.cluster_ip && f.cluster_ips == o.cluster_ips {
        f.cluster_ips = vec![f.cluster_ip.clone()];
    }
}

/// A PreferDualStack Service that stays so with the same IPs and families is left alone, so it is
/// neither upgraded nor downgraded when the cluster's ranges change.
fn matching_prefer_dual_stack(f: &IpFields, o: &IpFields) -> bool {
    f.policy() == PREFER
        && (o.policy.is_none() || o.policy() == PREFER)
        && f.cluster_ips == o.cluster_ips
        && f.families == o.families
}

/// Defaults `ipFamilyPolicy` and `ipFamilies` from the request, the stored Service and the cluster's
/// ranges, and refuses what the cluster cannot give (upstream's `initIPFamilyFields`).
fn init_families(
    cidrs: &ServiceCidrs,
    f: &mut IpFields,
    old: Option<&IpFields>,
    has_selector: bool,
) -> Result<(), Causes> {
    if f.policy.is_none() {
        f.policy = Some(match old.and_then(|o| o.policy.clone()) {
            Some(p) => p,
            // Headless without selector: the endpoints are whatever the user writes, of any family.
            None if f.cluster_ip == NONE && !has_selector => REQUIRE.into(),
            None => SINGLE.into(),
        });
    }
    let c = check_fields(f);
    if !c.is_empty() {
        return Err(c);
    }
    let mut c: Causes = Vec::new();
    let policy = f.policy().to_string();
    if let Some(o) = old {
        if policy == SINGLE {
            // Same IPs and families with SingleStack: the intent is to drop the secondary.
            if f.cluster_ips == o.cluster_ips && f.cluster_ips.len() > 1 {
                f.cluster_ips.truncate(1);
            }
            if f.families == o.families && f.families.len() > 1 {
                f.families.truncate(1);
            }
        } else {
            if !f.cluster_ips.is_empty() && f.cluster_ips.len() < o.cluster_ips.len() {
                c.push((
                    "spec.ipFamilyPolicy".into(),
                    format!("Invalid value: \"{policy}\": must be 'SingleStack' to release the secondary cluster IP"),
                ));
            }
            if !f.families.is_empty() && f.families.len() < o.families.len() {
                c.push((
                    "spec.ipFamilyPolicy".into(),
                    format!("Invalid value: \"{policy}\": must be 'SingleStack' to release the secondary IP family"),
                ));
            }
        }
    }
    if policy == SINGLE {
        if f.cluster_ips.len() == 2 {
            c.push((
                "spec.ipFamilyPolicy".into(),
                format!("Invalid value: \"{policy}\": must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"),
            ));
        }
        if f.families.len() == 2 {
            c.push((
                "spec.ipFamilyPolicy".into(),
                format!("Invalid value: \"{policy}\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"),
            ));
        }
    }
    // Families not given follow the requested IPs.
    for (i, ip) in f.cluster_ips.clone().iter().enumerate() {
        if ip == NONE {
            break;
        }
        let Some(fam) = family_of(ip) else { continue };
        if i >= f.families.len() {
            if cidrs.range(fam).is_some() {
                f.families.push(fam.as_str().into());
            } else {
                c.push((
                    format!("spec.clusterIPs[{i}]"),
                    format!(
                        "Invalid value: {}: {} is not configured on this cluster",
                        list(&f.cluster_ips),
                        fam.as_str()
                    ),
                ));
            }
        }
    }
    if !c.is_empty() {
        return Err(c);
    }
    let default = cidrs.default_family();
    if f.cluster_ip == NONE && !has_selector {
        // Headless without selector may name families the cluster has no range for.
        if f.families.is_empty() {
            f.families.push(default.as_str().into());
        }
        if f.families.len() < 2 && policy != SINGLE {
            let first = IpFamily::parse(&f.families[0]).unwrap_or(default);
            f.families.push(first.other().as_str().into());
        }
        return Ok(());
    }
    if policy == REQUIRE && !cidrs.dual_stack() {
        c.push((
            "spec.ipFamilyPolicy".into(),
            format!("Invalid value: \"{policy}\": this cluster is not configured for dual-stack services"),
        ));
    }
    for (i, fam) in f.families.iter().enumerate() {
        if IpFamily::parse(fam).and_then(|x| cidrs.range(x)).is_none() {
            c.push((
                format!("spec.ipFamilies[{i}]"),
                format!("Invalid value: \"{fam}\": not configured on this cluster"),
            ));
        }
    }
    if !c.is_empty() {
        return Err(c);
    }
    if f.families.is_empty() {
        f.families.push(default.as_str().into());
    }
    if policy != SINGLE && f.families.len() == 1 && cidrs.dual_stack() {
        let first = IpFamily::parse(&f.families[0]).unwrap_or(default);
        f.families.push(first.other().as_str().into());
    }
    Ok(())
}

/// Gives every family without an IP one (requested or the next free), and keeps `clusterIP` equal
/// to `clusterIPs[0]`. On update only a newly added secondary family is allocated; everything else
/// was allocated before (or is refused by [`check_update`]).
fn allocate(
    cidrs: &ServiceCidrs,
    alloc: &Allocations,
    f: &mut IpFields,
    old: Option<&IpFields>,
) -> Result<(), Causes> {
    if f.cluster_ips.first().is_some_and(|ip| ip == NONE) {
        f.cluster_ip = NONE.into();
        return Ok(());
    }
    let own: Vec<IpAddr> = old
        .map(|o| o.cluster_ips.iter().filter_map(|ip| ip.parse().ok()).collect())
        .unwrap_or_default();
    let first = match old {
        None => 0,
        Some(o) if o.headless() => return Ok(()),
        Some(o) if o.families.len() == 1 && f.families.len() == 2 => 1,
        Some(_) => return Ok(()),
    };
    let mut c: Causes = Vec::new();
    for i in first..f.families.len() {
        let fam = IpFamily::parse(&f.families[i]).unwrap_or(cidrs.default_family());
        let Some(range) = cidrs.range(fam) else { continue };
        if f.cluster_ips.len() <= i {
            f.cluster_ips.push(String::new());
        }
        let requested = f.cluster_ips[i].clone();
        let field = format!("spec.clusterIPs[{i}]");
        if requested.is_empty() {
            match range.allocate(&alloc.ips) {
                Some(ip) => f.cluster_ips[i] = ip.to_string(),
                None => c.push((
                    "spec.clusterIPs".into(),
                    format!("failed to allocate IP: {} range is full", fam.as_str()),
                )),
            }
            continue;
        }
        let Ok(ip) = requested.parse::<IpAddr>() else {
            continue;
        };
        if !range.contains(&ip) {
            c.push((
                field,
                format!(
                    "Invalid value: \"{requested}\": provided IP is not in the valid range. The range of valid IPs is {}",
                    range.cidr()
                ),
            ));
        } else if alloc.ips.contains(&ip) && !own.contains(&ip) {
            c.push((
                field,
                format!("Invalid value: \"{requested}\": provided IP is already allocated"),
            ));
        } else {
            f.cluster_ips[i] = ip.to_string();
        }
    }
    if let Some(primary) = f.cluster_ips.first() {
        f.cluster_ip = primary.clone();
    }
    if c.is_empty() { Ok(()) } else { Err(c) }
}

#[cfg(test)]
mod tests;
