//! Service IP ranges (`--service-cidr`, kube-apiserver's `--service-cluster-ip-range`): one CIDR, or two of
//! different families for a dual-stack cluster, the first being the cluster's default family. Each range
//! allocates as upstream's bitmap allocator does: the network address (and the IPv4 broadcast) is never
//! handed out, an IPv6 range holds at most 65536 addresses, and dynamic allocations start above a low
//! static band so well-known requested addresses (.10 for DNS) stay free.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::IpNet;

/// kube-apiserver refuses service ranges with more host bits than this (it keeps a bitmap per range).
const MAX_HOST_BITS: u8 = 20;
/// Upstream's cap on an IPv6 range's bitmap.
const MAX_V6_ADDRESSES: u128 = 65536;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpFamily {
    V4,
    V6,
}

impl IpFamily {
    pub fn of(ip: &IpAddr) -> Self {
        if ip.is_ipv4() { IpFamily::V4 } else { IpFamily::V6 }
    }

    /// The API spelling (`spec.ipFamilies`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "IPv4" => Some(IpFamily::V4),
            "IPv6" => Some(IpFamily::V6),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    pub fn other(self) -> Self {
        match self {
            IpFamily::V4 => IpFamily::V6,
            IpFamily::V6 => IpFamily::V4,
        }
    }
}

/// One service CIDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRange {
    cidr: IpNet,
}

impl ServiceRange {
    pub fn cidr(&self) -> IpNet {
        self.cidr
    }

    pub fn family(&self) -> IpFamily {
        IpFamily::of(&self.cidr.network())
    }

    fn host_bits(&self) -> u8 {
        self.cidr.max_prefix_len() - self.cidr.prefix_len()
    }

    /// Addresses in the CIDR (bounded by MAX_HOST_BITS at parse time).
    fn size(&self) -> u128 {
        1u128 << self.host_bits()
    }

    /// The first allocatable address (network + 1), as a number.
    fn base(&self) -> u128 {
        to_number(self.cidr.network()) + 1
    }

    /// How many addresses from `base` can be allocated.
    fn usable(&self) -> u128 {
        match self.family() {
            IpFamily::V4 => self.size().saturating_sub(2),
            IpFamily::V6 => self.size().min(MAX_V6_ADDRESSES).saturating_sub(1),
        }
    }

    /// Upstream's static band: min(max(16, size/16), 256), none for ranges of 16 addresses or fewer.
    fn band(&self) -> u128 {
        let size = self.size();
        if size <= 16 { 0 } else { (size / 16).clamp(16, 256) }
    }

    /// Whether `ip` is one this range can allocate.
    pub fn contains(&self, ip: &IpAddr) -> bool {
        IpFamily::of(ip) == self.family()
            && self.cidr.contains(ip)
            && to_number(*ip)
                .checked_sub(self.base())
                .is_some_and(|off| off < self.usable())
    }

    /// The first free address above the static band, then below it.
    pub fn allocate(&self, taken: &HashSet<IpAddr>) -> Option<IpAddr> {
        let usable = self.usable();
        let band = self.band();
        (0..usable)
            .map(|i| from_number(self.family(), self.base() + (band + i) % usable))
            .find(|ip| !taken.contains(ip))
    }
}

fn to_number(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn from_number(family: IpFamily, n: u128) -> IpAddr {
    match family {
        // Numbers come from an IPv4 range, so they fit in 32 bits.
        IpFamily::V4 => IpAddr::V4(Ipv4Addr::from(u32::try_from(n).unwrap_or(u32::MAX))),
        IpFamily::V6 => IpAddr::V6(Ipv6Addr::from(n)),
    }
}

/// The configured ranges, primary first: one, or two of different families.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceCidrs {
    ranges: Vec<ServiceRange>,
}

impl ServiceCidrs {
    /// The family of the first range: what a Service gets when it asks for nothing.
    pub fn default_family(&self) -> IpFamily {
        self.ranges.first().map_or(IpFamily::V4, ServiceRange::family)
    }

    pub fn dual_stack(&self) -> bool {
        self.ranges.len() == 2
    }

    pub fn range(&self, family: IpFamily) -> Option<&ServiceRange> {
        self.ranges.iter().find(|r| r.family() == family)
    }
}

impl Default for ServiceCidrs {
    fn default() -> Self {
        let cidr = IpNet::new(IpAddr::V4(Ipv4Addr::new(10, 96, 0, 0)), 16).unwrap_or_default();
        ServiceCidrs {
            ranges: vec![ServiceRange { cidr }],
        }
    }
}

impl fmt::Display for ServiceCidrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.ranges.iter().map(|r| r.cidr.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

/// The flag's value, checked as kube-apiserver checks `--service-cluster-ip-range`.
impl FromStr for ServiceCidrs {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() > 2 {
            return Err("must not contain more than two entries".into());
        }
        let mut ranges = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let cidr: IpNet = p.parse().map_err(|e| format!("{p:?}: {e}"))?;
            let range = ServiceRange { cidr: cidr.trunc() };
            let bits = cidr.max_prefix_len();
            if range.host_bits() > MAX_HOST_BITS {
                return Err(format!(
                    "entry {i} ({p}) is too large; for {bits}-bit addresses, the mask must be >= {}",
                    bits - MAX_HOST_BITS
                ));
            }
            if range.usable() == 0 {
                return Err(format!("entry {i} ({p}) holds no allocatable address"));
            }
            ranges.push(range);
        }
        if let [a, b] = ranges.as_slice()
            && a.family() == b.family()
        {
            return Err("the two entries must be of different IP families".into());
        }
        Ok(ServiceCidrs { ranges })
    }
}

#[cfg(test)]
mod tests;
