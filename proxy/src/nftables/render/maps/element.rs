//! The maps layout's elements as small fixed-size values: set names as an enum, key parts as
//! addresses, protocols, ports and slot numbers, no owned strings (a table holds hundreds of
//! thousands of elements). The text (`nft -f`, the tracer) and the netlink encoding are both made
//! from these values. Elements sort by value (set names as text, then addresses and ports
//! numerically), which is the order of the text's element lines.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use super::{Bucket, Group, Sticky};
use crate::model::Protocol;

/// The set or map an element is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetName {
    /// A set of the skeleton (`masq-cluster`, `hairpin`, `cluster-ips`, ...).
    Fixed(&'static str),
    /// A group's set of keys with this endpoint count, `svcs-N`.
    Count(Group, u32),
    /// A group's slot map of keys with this endpoint count (`eps-N`, `np-eps-N`, ...).
    Map(Group, u32),
    /// A group's set of keys whose count is in this bucket (`svcs-17-80`: [`Group::buckets`]).
    Bucket(Group, Bucket),
    /// An affinity port's keys in `@sticky-keys` (node ports: `@np-sticky-keys`), each to `jump`
    /// the port's lookup chain. The port is part of the name so that the element's verdict needs
    /// no value of its own: the cache holds these as it holds plain set elements.
    StickyKey { by_port: bool, port: Sticky },
    /// An affinity port's keys in `@sticky-records` (`@np-sticky-records`), each to `goto` its
    /// record chain.
    StickyRecord { by_port: bool, port: Sticky },
    /// An affinity port's dynamic map, `affinity-<id>-<T>` (client -> endpoint): the packet path
    /// writes it; the daemon reads, deletes and carries its entries.
    Affinity(Sticky),
}

impl SetName {
    /// The name of the set or map in the table.
    pub fn name(self) -> String {
        match self {
            SetName::Fixed(n) => n.to_string(),
            SetName::Count(g, n) => g.set(n as usize),
            SetName::Map(g, n) => g.map(n as usize),
            SetName::Bucket(g, b) => g.bucket_set(b),
            SetName::StickyKey { by_port, .. } => (if by_port {
                super::NP_STICKY_KEYS
            } else {
                super::STICKY_KEYS
            })
            .into(),
            SetName::StickyRecord { by_port, .. } => (if by_port {
                super::NP_STICKY_RECORDS
            } else {
                super::STICKY_RECORDS
            })
            .into(),
            SetName::Affinity(port) => port.map(),
        }
    }

    /// The verdict an element of this set maps to (verdict maps only).
    pub fn verdict(self) -> Option<(bool, String)> {
        match self {
            SetName::StickyKey { port, .. } => Some((true, port.lookup_chain())),
            SetName::StickyRecord { port, .. } => Some((false, port.record_chain())),
            _ => None,
        }
    }

    /// `jump CHAIN` / `goto CHAIN`: the verdict as nft writes it.
    pub fn verdict_text(self) -> Option<String> {
        self.verdict().map(|(jump, chain)| match jump {
            true => format!("jump {chain}"),
            false => format!("goto {chain}"),
        })
    }
}

impl fmt::Display for SetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetName::Fixed(n) => f.write_str(n),
            other => f.write_str(&other.name()),
        }
    }
}

impl PartialEq<str> for SetName {
    fn eq(&self, other: &str) -> bool {
        match self {
            SetName::Fixed(n) => *n == other,
            _ => self.name() == other,
        }
    }
}

/// One part of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    Addr(IpAddr),
    Proto(Protocol),
    Port(u16),
    /// An endpoint slot (the `numgen` part of a slot map's key).
    Slot(u32),
    /// A source prefix (the interval part of `@fw-allow`).
    Net(IpNet),
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Addr(a) => a.fmt(f),
            Part::Proto(p) => f.write_str(p.as_str()),
            Part::Port(p) => p.fmt(f),
            Part::Slot(s) => s.fmt(f),
            Part::Net(n) => n.fmt(f),
        }
    }
}

/// The most parts a key has (`@fw-allow`: address . protocol . port . source; slot maps: address .
/// protocol . port . slot).
pub(super) const MAX_PARTS: usize = 4;

/// A key of up to [`MAX_PARTS`] parts, held inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    len: u8,
    parts: [Part; MAX_PARTS],
}

impl Key {
    /// The key of `parts`; parts past [`MAX_PARTS`] would be a bug of the layout, and are cut.
    pub fn new(parts: &[Part]) -> Key {
        debug_assert!(parts.len() <= MAX_PARTS, "{parts:?}");
        let mut k = Key {
            len: 0,
            parts: [Part::Slot(0); MAX_PARTS],
        };
        for p in parts.iter().take(MAX_PARTS) {
            k.parts[k.len as usize] = *p;
            k.len += 1;
        }
        k
    }

    /// This key with one more part (a slot map's key from a set's key).
    pub fn with(mut self, part: Part) -> Key {
        debug_assert!((self.len as usize) < MAX_PARTS);
        if let Some(p) = self.parts.get_mut(self.len as usize) {
            *p = part;
            self.len += 1;
        }
        self
    }

    pub fn parts(&self) -> &[Part] {
        &self.parts[..self.len as usize]
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts().iter().enumerate() {
            if i > 0 {
                f.write_str(" . ")?;
            }
            p.fmt(f)?;
        }
        Ok(())
    }
}

/// One element: a key, and for a slot map the endpoint (address . port) it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MapsElement {
    pub set: SetName,
    pub key: Key,
    pub value: Option<(IpAddr, u16)>,
}

impl MapsElement {
    /// `key` or `key : value`, as nft prints an element.
    pub fn text(&self) -> String {
        match (self.value, self.set.verdict_text()) {
            (Some((ip, port)), _) => format!("{} : {ip} . {port}", self.key),
            (None, Some(v)) => format!("{} : {v}", self.key),
            (None, None) => self.key.to_string(),
        }
    }
}
