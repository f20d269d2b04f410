//! IP allocation from the external and internal pools, skipping every address already in use.
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::errors::ApiError;
use crate::kind::Kind;
use crate::store::Resources;

/// Every IP held by an address, a forwarding rule or an instance interface.
pub fn used(res: &Resources) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, a) in res.iter(Kind::Address) {
        if let Some(ip) = a["address"].as_str() {
            out.insert(ip.to_string());
        }
    }
    for (_, fr) in res.iter(Kind::ForwardingRule) {
        if let Some(ip) = fr["IPAddress"].as_str() {
            out.insert(ip.to_string());
        }
    }
    for (_, inst) in res.iter(Kind::Instance) {
        for nic in inst["networkInterfaces"].as_array().into_iter().flatten() {
            if let Some(ip) = nic["networkIP"].as_str() {
                out.insert(ip.to_string());
            }
            for ac in nic["accessConfigs"].as_array().into_iter().flatten() {
                if let Some(ip) = ac["natIP"].as_str() {
                    out.insert(ip.to_string());
                }
            }
        }
    }
    out
}

/// First free host address of `net` (network, broadcast and the gateway .1 are skipped).
pub fn allocate(net: Ipv4Net, res: &Resources, what: &str) -> Result<Ipv4Addr, ApiError> {
    let taken = used(res);
    net.hosts()
        .filter(|ip| net.prefix_len() >= 31 || u32::from(*ip) != u32::from(net.network()) + 1)
        .find(|ip| !taken.contains(&ip.to_string()))
        .ok_or_else(|| {
            ApiError::new(
                403,
                "quotaExceeded",
                format!("No free {what} address left in {net} (svcnet-fake-gce pool exhausted)."),
            )
        })
}
