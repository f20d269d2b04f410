//! The cache's elements held compactly: per set, each key packed into a few bytes that sort as the
//! key does ([`Key`]'s order: its length, then each part's kind and value), so iterating gives the
//! same order as the typed elements would, and its count and value packed beside it. An IPv4
//! table's keys fit 16 bytes and their entries 11; a key or value that does not (IPv6, or
//! `@fw-allow`'s four parts) moves its set to 73 and 23 bytes. A map keyed by the typed (set,
//! key) pair holds 84-byte keys and 24-byte entries (docs/nftables-maps.md has the figures).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::element::MAX_PARTS;
use super::{Key, Part, SetName};
use crate::model::Protocol;
use layer::Layer;

pub(super) type Value = Option<(IpAddr, u16)>;
/// An element's value and how many ports hold it.
pub(super) type Entry = (Value, u32);

const SMALL: usize = 16;
/// Four parts of at most 18 bytes each (a prefix part: kind, 16 address bytes, length) and the
/// length byte.
const LARGE: usize = 1 + 4 * 18;

/// Part kinds in [`Part`]'s order, an address's family folded in (IPv4 sorts before IPv6).
const ADDR4: u8 = 0;
const ADDR6: u8 = 1;
const PROTO: u8 = 2;
const PORT: u8 = 3;
const SLOT: u8 = 4;
const NET4: u8 = 5;
const NET6: u8 = 6;

/// A key packed: its length, then each part's kind and big-endian value, zero-padded.
struct Packed {
    bytes: [u8; LARGE],
    len: usize,
}

fn proto_index(p: Protocol) -> u8 {
    match p {
        Protocol::Tcp => 0,
        Protocol::Udp => 1,
        Protocol::Sctp => 2,
    }
}

fn pack(key: &Key) -> Packed {
    let mut out = Packed {
        bytes: [0; LARGE],
        len: 0,
    };
    let mut push = |kind: u8, b: &[u8]| {
        out.bytes[out.len] = kind;
        out.bytes[out.len + 1..out.len + 1 + b.len()].copy_from_slice(b);
        out.len += 1 + b.len();
    };
    push(key.parts().len() as u8, &[]);
    for p in key.parts() {
        match *p {
            Part::Addr(IpAddr::V4(a)) => push(ADDR4, &a.octets()),
            Part::Addr(IpAddr::V6(a)) => push(ADDR6, &a.octets()),
            Part::Proto(proto) => push(PROTO, &[proto_index(proto)]),
            Part::Port(port) => push(PORT, &port.to_be_bytes()),
            Part::Slot(slot) => push(SLOT, &slot.to_be_bytes()),
            Part::Net(IpNet::V4(n)) => {
                push(NET4, &n.addr().octets());
                push(n.prefix_len(), &[]);
            }
            Part::Net(IpNet::V6(n)) => {
                push(NET6, &n.addr().octets());
                push(n.prefix_len(), &[]);
            }
        }
    }
    out
}

/// The key of packed bytes; `None` only for bytes [`pack`] never writes.
fn unpack(bytes: &[u8]) -> Option<Key> {
    let (&n, mut rest) = bytes.split_first()?;
    if n as usize > MAX_PARTS {
        return None;
    }
    let mut take = |len: usize| {
        let (head, tail) = rest.split_at_checked(len)?;
        rest = tail;
        Some(head)
    };
    let mut key = Key::new(&[]);
    for _ in 0..n {
        let part = match take(1)?[0] {
            ADDR4 => Part::Addr(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(take(4)?).ok()?))),
            ADDR6 => Part::Addr(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(take(16)?).ok()?))),
            PROTO => Part::Proto(
                [Protocol::Tcp, Protocol::Udp, Protocol::Sctp]
                    .get(take(1)?[0] as usize)
                    .copied()?,
            ),
            PORT => Part::Port(u16::from_be_bytes(take(2)?.try_into().ok()?)),
            SLOT => Part::Slot(u32::from_be_bytes(take(4)?.try_into().ok()?)),
            NET4 => {
                let a = Ipv4Addr::from(<[u8; 4]>::try_from(take(4)?).ok()?);
                Part::Net(IpNet::V4(Ipv4Net::new(a, take(1)?[0]).ok()?))
            }
            NET6 => {
                let a = Ipv6Addr::from(<[u8; 16]>::try_from(take(16)?).ok()?);
                Part::Net(IpNet::V6(Ipv6Net::new(a, take(1)?[0]).ok()?))
            }
            _ => return None,
        };
        key = key.with(part);
    }
    Some(key)
}

/// An entry packed: the count (native order), then the value's family (0: none) and bytes.
fn pack_entry((value, n): Entry) -> ([u8; LARGE_ENTRY], usize) {
    let mut b = [0; LARGE_ENTRY];
    b[..4].copy_from_slice(&n.to_ne_bytes());
    let len = match value {
        None => 5,
        Some((IpAddr::V4(a), port)) => {
            b[4] = 1;
            b[5..9].copy_from_slice(&a.octets());
            b[9..11].copy_from_slice(&port.to_be_bytes());
            11
        }
        Some((IpAddr::V6(a), port)) => {
            b[4] = 2;
            b[5..21].copy_from_slice(&a.octets());
            b[21..23].copy_from_slice(&port.to_be_bytes());
            23
        }
    };
    (b, len)
}

/// The entry of packed bytes (bytes [`pack_entry`] never writes read as a count of zero).
fn unpack_entry(b: &[u8]) -> Entry {
    let word = |r: std::ops::Range<usize>| b.get(r).unwrap_or_default();
    let n = word(0..4).try_into().map_or(0, u32::from_ne_bytes);
    let port = |r| word(r).try_into().map_or(0, u16::from_be_bytes);
    let value = match b.get(4) {
        Some(1) => <[u8; 4]>::try_from(word(5..9))
            .ok()
            .map(|a| (IpAddr::from(a), port(9..11))),
        Some(2) => <[u8; 16]>::try_from(word(5..21))
            .ok()
            .map(|a| (IpAddr::from(a), port(21..23))),
        _ => None,
    };
    (value, n)
}

/// An IPv4 element's entry: count, family, address and port.
const SMALL_ENTRY: usize = 11;
const LARGE_ENTRY: usize = 23;

/// One set's elements, by packed key.
#[derive(Clone, Debug)]
enum Keys {
    Small(Layer<SMALL, SMALL_ENTRY>),
    Large(Layer<LARGE, LARGE_ENTRY>),
}

fn head<const N: usize>(b: &[u8], len: usize) -> Option<[u8; N]> {
    (len <= N).then(|| {
        let mut out = [0; N];
        out.copy_from_slice(&b[..N]);
        out
    })
}

impl Keys {
    fn get(&self, p: &Packed) -> Option<Entry> {
        let entry = match self {
            Keys::Small(m) => m.get(&head(&p.bytes, p.len)?).map(|e| &e[..]),
            Keys::Large(m) => m.get(&p.bytes).map(|e| &e[..]),
        };
        entry.map(unpack_entry)
    }

    /// Inserts or replaces, moving the set to large keys when the key or entry does not fit;
    /// true when the key is new.
    fn put(&mut self, p: &Packed, entry: Entry) -> bool {
        let (e, elen) = pack_entry(entry);
        let small = head::<SMALL>(&p.bytes, p.len).zip(head::<SMALL_ENTRY>(&e, elen));
        if let (Keys::Small(m), None) = (&mut *self, small) {
            *self = Keys::Large(std::mem::take(m).widen());
        }
        match (self, small) {
            (Keys::Small(m), Some((k, v))) => m.insert(k, v),
            (Keys::Small(_), None) => false,
            (Keys::Large(m), _) => m.insert(p.bytes, e),
        }
    }

    fn remove(&mut self, p: &Packed) -> bool {
        match self {
            Keys::Small(m) => head(&p.bytes, p.len).is_some_and(|k| m.remove(&k)),
            Keys::Large(m) => m.remove(&p.bytes),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Keys::Small(m) => m.is_empty(),
            Keys::Large(m) => m.is_empty(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Keys::Small(m) => Box::new(m.iter()),
            Keys::Large(m) => Box::new(m.iter()),
        }
    }
}

/// Every element of the cache, by set then key, in the typed elements' order.
#[derive(Clone, Debug, Default)]
pub(super) struct Store {
    sets: BTreeMap<SetName, Keys>,
    len: usize,
}

impl Store {
    pub(super) fn get(&self, set: SetName, key: &Key) -> Option<Entry> {
        self.sets.get(&set)?.get(&pack(key))
    }

    /// Inserts an element, or replaces its entry.
    pub(super) fn put(&mut self, set: SetName, key: &Key, entry: Entry) {
        let keys = self.sets.entry(set).or_insert(Keys::Small(Layer::default()));
        if keys.put(&pack(key), entry) {
            self.len += 1;
        }
    }

    pub(super) fn remove(&mut self, set: SetName, key: &Key) {
        let Some(keys) = self.sets.get_mut(&set) else {
            return;
        };
        if keys.remove(&pack(key)) {
            self.len -= 1;
        }
        if keys.is_empty() {
            self.sets.remove(&set);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Every element in order (a key that does not unpack cannot be: [`pack`] wrote it).
    pub(super) fn iter(&self) -> impl Iterator<Item = (SetName, Key, Entry)> + '_ {
        self.sets.iter().flat_map(|(set, keys)| {
            keys.iter()
                .filter_map(move |(k, e)| unpack(k).map(|key| (*set, key, unpack_entry(e))))
        })
    }
}

mod layer;
#[cfg(test)]
mod tests;
