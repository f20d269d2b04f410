//! ClientIP affinity entries the packet path writes into the maps layout's dynamic maps
//! (`@affinity`, `@np-affinity`: client . key -> endpoint), kept as true to the table as upstream's
//! per-endpoint affinity sets, which go with their endpoint chains:
//! - after element steps that take an endpoint from a key (or a key's affinity away), the entries
//!   naming it are deleted. Otherwise the client would be sent to the gone endpoint, and every retry
//!   would refresh the entry, so it would never expire;
//! - a replacement of the table carries the entries still valid over, with the time they have left.
//!   Otherwise every replacement (the hourly full sync, a new endpoint count) would re-draw every
//!   client.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::model::{Family, Protocol};
use crate::nftables::netlink::read::{ReadElement, elements_of, get_elements};
use crate::nftables::netlink::{EncodeError, encode_elements};
use crate::nftables::render::maps::{
    AFFINITY, Group, Key, MapsCache, MapsChange, MapsElement, NP_AFFINITY, Part, SetName,
};
use crate::nftables::socket::{NetlinkError, NftSocket};

#[derive(Debug, thiserror::Error)]
pub(super) enum AffinityError {
    #[error("reading the affinity maps: {0}")]
    Read(NetlinkError),
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error("deleting stale affinity entries: {0}")]
    Delete(NetlinkError),
}

/// One entry of a dynamic affinity map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Entry {
    /// Node-port key (`@np-affinity`) rather than an address key (`@affinity`).
    pub(super) by_port: bool,
    pub(super) client: IpAddr,
    /// The destination key, as the slot maps' keys without the slot.
    pub(super) key: Key,
    pub(super) endpoint: (IpAddr, u16),
    pub(super) expires_ms: u64,
}

impl Entry {
    pub(super) fn map(&self) -> &'static str {
        map_name(self.by_port)
    }

    /// The map's key: client . destination key.
    pub(super) fn map_key(&self) -> Key {
        let mut parts = vec![Part::Addr(self.client)];
        parts.extend_from_slice(self.key.parts());
        Key::new(&parts)
    }
}

fn map_name(by_port: bool) -> &'static str {
    if by_port { NP_AFFINITY } else { AFFINITY }
}

fn groups(by_port: bool) -> [Group; 2] {
    if by_port {
        [Group::Port, Group::PortShort]
    } else {
        [Group::Addr, Group::AddrShort]
    }
}

fn sticky_group(by_port: bool) -> Group {
    if by_port {
        Group::PortAffinity
    } else {
        Group::Affinity
    }
}

fn protocol(n: u8) -> Option<Protocol> {
    match n {
        6 => Some(Protocol::Tcp),
        17 => Some(Protocol::Udp),
        132 => Some(Protocol::Sctp),
        _ => None,
    }
}

/// An address of `family` from the front of `b`, and the rest.
fn addr(b: &[u8], family: Family) -> Option<(IpAddr, &[u8])> {
    let ip = match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(b.get(..4)?).ok()?)),
        Family::V6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(b.get(..16)?).ok()?)),
    };
    let len = if ip.is_ipv4() { 4 } else { 16 };
    Some((ip, b.get(len..)?))
}

fn port(b: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(..2)?.try_into().ok()?))
}

/// An entry from its bytes: each part of a concatenation padded to 4 bytes (client, [daddr,]
/// protocol, port; data: address, port). `None` for anything else.
pub(super) fn decode(family: Family, by_port: bool, e: &ReadElement) -> Option<Entry> {
    let (client, rest) = addr(&e.key, family)?;
    let (daddr, rest) = match by_port {
        false => {
            let (a, rest) = addr(rest, family)?;
            (Some(a), rest)
        }
        true => (None, rest),
    };
    if rest.len() != 8 {
        return None;
    }
    let proto = Part::Proto(protocol(rest[0])?);
    let dport = Part::Port(port(rest.get(4..)?)?);
    let key = match daddr {
        Some(a) => Key::new(&[Part::Addr(a), proto, dport]),
        None => Key::new(&[proto, dport]),
    };
    let (ep, rest) = addr(e.data.as_deref()?, family)?;
    if rest.len() != 4 {
        return None;
    }
    Some(Entry {
        by_port,
        client,
        key,
        endpoint: (ep, port(rest)?),
        expires_ms: e.expires_ms.unwrap_or(0),
    })
}

/// Every entry of both maps in the kernel's table; none when the table or the maps do not exist
/// (a first sync, or the other layout's table).
pub(super) fn read(socket: &mut NftSocket, family: Family) -> Result<Vec<Entry>, AffinityError> {
    let mut out = Vec::new();
    for by_port in [false, true] {
        let request = get_elements(family, map_name(by_port), socket.next_dump_seq())?;
        let messages = match socket.dump(&request) {
            Ok(m) => m,
            Err(NetlinkError::Refused { errno, .. }) if errno == enoent() => continue,
            Err(e) => return Err(AffinityError::Read(e)),
        };
        for m in messages {
            let elements = elements_of(&m).ok_or(AffinityError::Read(NetlinkError::Malformed))?;
            out.extend(elements.iter().filter_map(|e| decode(family, by_port, e)));
        }
    }
    Ok(out)
}

pub(super) fn enoent() -> i32 {
    rustix::io::Errno::NOENT.raw_os_error()
}

/// What element steps took away from affinity: (node-port key?, key, endpoint), where no endpoint
/// means the key lost its affinity (every entry of it is stale).
pub(super) type Stale = BTreeSet<(bool, Key, Option<(IpAddr, u16)>)>;

/// The stale pairs of `change`, judged against `cache` as it holds the table after the change.
pub(super) fn stale(change: &MapsChange, cache: &MapsCache) -> Stale {
    let mut out = Stale::new();
    let MapsChange::Elements { delete, .. } = change else {
        return out;
    };
    for e in delete {
        match (e.set, e.value) {
            (SetName::Map(g, _), Some(ep)) if Group::ALL.contains(&g) => {
                let parts = e.key.parts();
                let key = Key::new(&parts[..parts.len().saturating_sub(1)]);
                let by_port = g.by_port();
                if cache.in_count_set(sticky_group(by_port), key)
                    && !cache.endpoints_of(&groups(by_port), key).contains(&ep)
                {
                    out.insert((by_port, key, Some(ep)));
                }
            }
            (SetName::Count(g @ (Group::Affinity | Group::PortAffinity), _), _)
                if !cache.in_count_set(g, e.key) =>
            {
                out.insert((g.by_port(), e.key, None));
            }
            _ => {}
        }
    }
    out
}

/// Whether `entry` is made stale by `stale`.
pub(super) fn is_stale(stale: &Stale, entry: &Entry) -> bool {
    stale.contains(&(entry.by_port, entry.key, Some(entry.endpoint)))
        || stale.contains(&(entry.by_port, entry.key, None))
}

/// Whether `entry` still holds in the table `cache` describes (a replacement carries it over):
/// its key has affinity and its endpoint is still one of the key's.
pub(super) fn still_valid(cache: &MapsCache, entry: &Entry) -> bool {
    cache.in_count_set(sticky_group(entry.by_port), entry.key)
        && cache
            .endpoints_of(&groups(entry.by_port), entry.key)
            .contains(&entry.endpoint)
}

/// The entries of `entries` that still hold in `cache`'s table, as elements to carry into its
/// replacement with the time each has left.
pub(super) fn carried(cache: &MapsCache, entries: &[Entry]) -> Vec<(MapsElement, u64)> {
    let mut out: Vec<(MapsElement, u64)> = entries
        .iter()
        .filter(|e| still_valid(cache, e))
        .map(|e| (element(e), e.expires_ms))
        .collect();
    out.sort();
    out
}

fn element(e: &Entry) -> MapsElement {
    MapsElement {
        set: SetName::Fixed(e.map()),
        key: e.map_key(),
        value: Some(e.endpoint),
    }
}

/// How often [`purge`] reads and deletes again when an entry expired between the two.
const PURGE_TRIES: usize = 3;

/// Deletes the entries `stale` names from the kernel's maps: reads them, then one batch of
/// deletions. Returns how many were deleted.
pub(super) fn purge(socket: &mut NftSocket, family: Family, stale: &Stale) -> Result<usize, AffinityError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let delete: Vec<MapsElement> = read(socket, family)?
            .iter()
            .filter(|e| is_stale(stale, e))
            .map(|e| MapsElement {
                value: None,
                ..element(e)
            })
            .collect();
        if delete.is_empty() {
            return Ok(0);
        }
        let batch = encode_elements(family, &delete, &[], socket.next_start())?;
        match socket.apply(&batch) {
            // The packet path's garbage collection may have removed one in between.
            Err(NetlinkError::Refused { errno, .. }) if errno == enoent() && tries < PURGE_TRIES => {}
            Err(e) => return Err(AffinityError::Delete(e)),
            Ok(()) => return Ok(delete.len()),
        }
    }
}

#[cfg(test)]
mod tests;
