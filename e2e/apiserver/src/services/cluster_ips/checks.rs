//! The checks upstream's `pkg/apis/core/validation` makes on the four linked fields: alone
//! (`ValidateServiceClusterIPsRelatedFields`) and on update (`validateUpgradeDowngrade*`).

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::json;

use super::super::Causes;
use super::super::ranges::IpFamily;
use super::{IpFields, NONE, PREFER, REQUIRE, SINGLE};

pub(super) fn family_of(ip: &str) -> Option<IpFamily> {
    ip.parse::<IpAddr>().ok().map(|a| IpFamily::of(&a))
}

pub(super) fn list(v: &[String]) -> String {
    json!(v).to_string()
}

/// Update validation: the primary IP and family never change; releasing the secondary one needs
/// `SingleStack`.
pub(super) fn check_update(f: &IpFields, o: &IpFields) -> Causes {
    let mut c: Causes = Vec::new();
    let changed = "may not change once set";
    if !(o.headless() && f.headless()) {
        let (old, new) = (&o.cluster_ips, &f.cluster_ips);
        if old.len() == new.len() {
            for (i, ip) in old.iter().enumerate() {
                if new[i] != *ip {
                    c.push((format!("spec.clusterIPs[{i}]"), changed.into()));
                }
            }
        } else {
            if new.is_empty() {
                c.push((
                    "spec.clusterIPs[0]".into(),
                    "primary clusterIP can not be unset".into(),
                ));
            } else if !old.is_empty() && new[0] != old[0] {
                c.push(("spec.clusterIPs[0]".into(), changed.into()));
            }
            if old.len() > new.len() && new.len() == 1 && f.policy() != SINGLE {
                c.push((
                    "spec.ipFamilyPolicy".into(),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP".into(),
                ));
            }
        }
    }
    if o.headless() == f.headless() && !f.headless() && !f.families.is_empty() {
        let (old, new) = (&o.families, &f.families);
        if (old.len() == new.len() && old != new) || (!old.is_empty() && new[0] != old[0]) {
            c.push((
                "spec.ipFamilies[0]".into(),
                format!("Invalid value: {}: {changed}", list(new)),
            ));
        }
        if old.len() > new.len() && new.len() == 1 && f.policy() != SINGLE {
            c.push((
                "spec.ipFamilyPolicy".into(),
                "must be set to 'SingleStack' when releasing the secondary ipFamily".into(),
            ));
        }
    }
    c
}

/// Stand-alone checks of the four fields (upstream's `ValidateServiceClusterIPsRelatedFields`).
pub(super) fn check_fields(f: &IpFields) -> Causes {
    let mut c: Causes = Vec::new();
    if !f.cluster_ip.is_empty() {
        match f.cluster_ips.first() {
            None => c.push(("spec.clusterIPs".into(), "Required value".into())),
            Some(first) if *first != f.cluster_ip => c.push((
                "spec.clusterIPs".into(),
                format!(
                    "Invalid value: {}: first value must match `clusterIP`",
                    list(&f.cluster_ips)
                ),
            )),
            Some(_) => {}
        }
    } else if !f.cluster_ips.is_empty() {
        c.push((
            "spec.clusterIPs".into(),
            format!(
                "Invalid value: {}: must be empty when `clusterIP` is not specified",
                list(&f.cluster_ips)
            ),
        ));
    }
    let mut seen = HashSet::new();
    for (i, fam) in f.families.iter().enumerate() {
        if IpFamily::parse(fam).is_none() {
            c.push((
                format!("spec.ipFamilies[{i}]"),
                format!("Unsupported value: \"{fam}\": supported values: \"IPv4\", \"IPv6\""),
            ));
        }
        if !seen.insert(fam) {
            c.push((
                format!("spec.ipFamilies[{i}]"),
                format!("Duplicate value: \"{fam}\""),
            ));
        }
    }
    if let Some(p) = &f.policy
        && ![PREFER, REQUIRE, SINGLE].contains(&p.as_str())
    {
        c.push((
            "spec.ipFamilyPolicy".into(),
            format!(
                "Unsupported value: \"{p}\": supported values: \"{PREFER}\", \"{REQUIRE}\", \"{SINGLE}\""
            ),
        ));
    }
    let mut bad_ip = false;
    for (i, ip) in f.cluster_ips.iter().enumerate() {
        if i == 0 && ip == NONE {
            if f.cluster_ips.len() > 1 {
                bad_ip = true;
                c.push((
                    "spec.clusterIPs".into(),
                    format!(
                        "Invalid value: {}: 'None' must be the first and only value",
                        list(&f.cluster_ips)
                    ),
                ));
            }
            continue;
        }
        if family_of(ip).is_none() {
            bad_ip = true;
            c.push((
                format!("spec.clusterIPs[{i}]"),
                format!("Invalid value: \"{ip}\": must be a valid IP address"),
            ));
        }
    }
    if f.cluster_ips.len() > 2 {
        c.push((
            "spec.clusterIPs".into(),
            format!(
                "Invalid value: {}: may only hold up to 2 values",
                list(&f.cluster_ips)
            ),
        ));
    }
    if bad_ip {
        return c;
    }
    if let [a, b] = f.cluster_ips.as_slice()
        && family_of(a) == family_of(b)
    {
        c.push((
            "spec.clusterIPs".into(),
            format!(
                "Invalid value: {}: may specify no more than one IP for each IP family",
                list(&f.cluster_ips)
            ),
        ));
    }
    if !f.headless() {
        for (i, (ip, fam)) in f.cluster_ips.iter().zip(&f.families).enumerate() {
            let want = IpFamily::parse(fam);
            if want.is_some() && family_of(ip) != want {
                c.push((
                    format!("spec.clusterIPs[{i}]"),
                    format!(
                        "Invalid value: \"{ip}\": expected an {fam} value as indicated by `ipFamilies[{i}]`"
                    ),
                ));
            }
        }
    }
    c
}
