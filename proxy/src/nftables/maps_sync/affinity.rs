//! ClientIP affinity entries the packet path writes into the maps layout's dynamic maps (one per
//! affinity Service port, `affinity-<id>-<T>`: client -> endpoint), kept as true to the table as
//! upstream's per-endpoint affinity sets, which go with their endpoint chains:
//! - after element steps that take an endpoint from a port (or the port's affinity away), the
//!   entries naming it are deleted. Otherwise the client would be sent to the gone endpoint, and
//!   every retry would refresh the entry, so it would never expire;
//! - a replacement of the table carries the entries still valid over, with the time they have left.
//!   Otherwise every replacement (the hourly full sync, a refused growth) would re-draw every
//!   client.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::model::Family;
use crate::nftables::netlink::read::{ReadElement, elements_of, get_elements};
use crate::nftables::netlink::{EncodeError, encode_elements};
use crate::nftables::render::maps::{Key, MapsCache, MapsChange, MapsElement, Part, SetName, Sticky};
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

/// One entry of a port's dynamic affinity map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Entry {
    pub(super) port: Sticky,
    pub(super) client: IpAddr,
    pub(super) endpoint: (IpAddr, u16),
    pub(super) expires_ms: u64,
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

/// An entry from its bytes: the client's address (the key), then the endpoint's address and port
/// padded to 4 bytes. `None` for anything else.
pub(super) fn decode(family: Family, port: Sticky, e: &ReadElement) -> Option<Entry> {
    let (client, rest) = addr(&e.key, family)?;
    if !rest.is_empty() {
        return None;
    }
    let (ep, rest) = addr(e.data.as_deref()?, family)?;
    if rest.len() != 4 {
        return None;
    }
    Some(Entry {
        port,
        client,
        endpoint: (ep, self::port(rest)?),
        expires_ms: e.expires_ms.unwrap_or(0),
    })
}

/// Every entry of the maps of `ports` in the kernel's table; none for a map that does not exist
/// (a first sync, a port new to the table, or the other layout's table).
pub(super) fn read(
    socket: &mut NftSocket,
    family: Family,
    ports: impl IntoIterator<Item = Sticky>,
) -> Result<Vec<Entry>, AffinityError> {
    let mut out = Vec::new();
    for port in ports {
        let request = get_elements(family, &port.map(), socket.next_dump_seq())?;
        let messages = match socket.dump(&request) {
            Ok(m) => m,
            Err(NetlinkError::Refused { errno, .. }) if errno == enoent() => continue,
            Err(e) => return Err(AffinityError::Read(e)),
        };
        for m in messages {
            let elements = elements_of(&m).ok_or(AffinityError::Read(NetlinkError::Malformed))?;
            out.extend(elements.iter().filter_map(|e| decode(family, port, e)));
        }
    }
    Ok(out)
}

pub(super) fn enoent() -> i32 {
    rustix::io::Errno::NOENT.raw_os_error()
}

/// What a sync took away from affinity: a port's map with an endpoint (the entries naming it) or
/// without (every entry: the port lost its affinity). [`MapsCache::stale_affinity`] gathers them.
pub(super) type Stale = BTreeSet<(Sticky, Option<(IpAddr, u16)>)>;

/// What the sync that wrote `change` made stale (nothing after a replacement: it carried only the
/// entries still valid).
pub(super) fn stale(change: &MapsChange, cache: &MapsCache) -> Stale {
    match change {
        MapsChange::Replace => Stale::new(),
        MapsChange::Elements { .. } => cache.stale_affinity().clone(),
    }
}

/// Whether `entry` is made stale by `stale`.
pub(super) fn is_stale(stale: &Stale, entry: &Entry) -> bool {
    stale.contains(&(entry.port, Some(entry.endpoint))) || stale.contains(&(entry.port, None))
}

/// The entries of `entries` that still hold in `cache`'s table (their port has affinity with the
/// same timeout and their endpoint is still one of the port's), as elements to carry into its
/// replacement with the time each has left.
pub(super) fn carried(cache: &MapsCache, entries: &[Entry]) -> Vec<(MapsElement, u64)> {
    let mut endpoints: BTreeMap<Sticky, Option<BTreeSet<(IpAddr, u16)>>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in entries {
        let eps = endpoints
            .entry(e.port)
            .or_insert_with(|| cache.sticky_endpoints(e.port));
        if eps.as_ref().is_some_and(|eps| eps.contains(&e.endpoint)) {
            out.push((element(e), e.expires_ms));
        }
    }
    out.sort();
    out
}

fn element(e: &Entry) -> MapsElement {
    MapsElement {
        set: SetName::Affinity(e.port),
        key: Key::new(&[Part::Addr(e.client)]),
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
        let ports: BTreeSet<Sticky> = stale.iter().map(|(p, _)| *p).collect();
        let delete: Vec<MapsElement> = read(socket, family, ports)?
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
