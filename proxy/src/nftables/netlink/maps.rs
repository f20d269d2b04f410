//! The maps layout's element steps as one nf_tables batch, encoded from the typed elements
//! ([`MapsElement`]) without text: deletions first, then additions, each set's elements in
//! messages of up to [`ELEMENTS_PER_MESSAGE`], laid out as nft 1.0.6 sends `delete element` /
//! `add element` for the same sets (keys in network order and padded to 4 bytes inside a
//! concatenation, the `numgen` slot in host order as nft's `typeof numgen` key, the
//! `@fw-allow` interval as key and key end).

use std::net::IpAddr;

use super::expr::Verdict;
use super::msg::Writer;
use super::{Batch, EncodeError, Start, kind, nfproto};

use super::attr::{
    DATA_VALUE, ELEM_DATA, ELEM_FLAGS, ELEM_KEY, ELEM_KEY_END, ELEM_LIST_ELEMENTS, ELEM_LIST_SET,
    ELEM_LIST_TABLE, ELEM_TIMEOUT, LIST_ELEM,
};
use crate::model::{Family, Protocol};
use crate::nftables::render::maps::{FW_ALLOW, MapsElement, Part, SERVICE_CIDRS, SetName};
use crate::nftables::render::naming::TABLE;

const ELEM_INTERVAL_END: u32 = 1;

/// Element lists are split so each message's nested attribute stays under netlink's 64 KiB.
const ELEMENTS_PER_MESSAGE: usize = 256;

fn proto_number(p: Protocol) -> u8 {
    match p {
        Protocol::Tcp => 6,
        Protocol::Udp => 17,
        Protocol::Sctp => 132,
    }
}

fn addr_bytes(out: &mut Vec<u8>, ip: IpAddr) {
    match ip {
        IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
        IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
    }
}

/// The last address of a prefix (an interval's end, inclusive, as nft sends a concatenation's
/// range end).
fn last_addr(net: &ipnet::IpNet) -> IpAddr {
    net.broadcast()
}

/// A key's bytes; `end`: the interval's last key (a prefix part becomes its last address).
pub(super) fn key_bytes(e: &MapsElement, end: bool) -> Vec<u8> {
    let parts = e.key.parts();
    let concat = parts.len() > 1;
    let mut out = Vec::with_capacity(parts.len() * 16);
    for p in parts {
        match *p {
            Part::Addr(ip) => addr_bytes(&mut out, ip),
            Part::Net(net) => addr_bytes(&mut out, if end { last_addr(&net) } else { net.network() }),
            Part::Proto(proto) => out.push(proto_number(proto)),
            Part::Port(port) => out.extend_from_slice(&port.to_be_bytes()),
            Part::Slot(slot) => out.extend_from_slice(&slot.to_ne_bytes()),
        }
        if concat {
            out.resize(out.len().div_ceil(4) * 4, 0);
        }
    }
    out
}

/// A prefix of a plain interval set as nft sends it: its first address, then the address after its
/// last, flagged as the interval's end (a prefix reaching the top of the address space would need
/// nft's open-interval user data: refused, so the table goes through `nft -f`). Before the first
/// (`first`), an interval end at address zero unless the prefix starts there, as nft sends.
fn plain_range(w: &mut Writer, net: &ipnet::IpNet, first: bool) -> Result<(), EncodeError> {
    let after = match net.broadcast() {
        IpAddr::V4(a) => u32::from(a)
            .checked_add(1)
            .map(|n| IpAddr::from(std::net::Ipv4Addr::from(n))),
        IpAddr::V6(a) => u128::from(a)
            .checked_add(1)
            .map(|n| IpAddr::from(std::net::Ipv6Addr::from(n))),
    };
    let Some(after) = after else {
        return Err(EncodeError::Element(
            SERVICE_CIDRS.into(),
            format!("{net}: reaches the last address"),
        ));
    };
    let zero = match net {
        ipnet::IpNet::V4(_) => IpAddr::from([0u8; 4]),
        ipnet::IpNet::V6(_) => IpAddr::from([0u8; 16]),
    };
    let lead = (first && net.network() != zero).then_some((zero, true));
    for (ip, end) in lead.into_iter().chain([(net.network(), false), (after, true)]) {
        let el = w.nest(LIST_ELEM);
        if end {
            w.u32_be(ELEM_FLAGS, ELEM_INTERVAL_END)?;
        }
        let k = w.nest(ELEM_KEY);
        let mut key = Vec::with_capacity(16);
        addr_bytes(&mut key, ip);
        w.attr(DATA_VALUE, &key)?;
        w.nest_end(k)?;
        w.nest_end(el)?;
    }
    Ok(())
}

/// Endpoint address . port: a concatenation, each part padded to 4 bytes.
pub(super) fn value_bytes(ip: IpAddr, port: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    addr_bytes(&mut out, ip);
    out.extend_from_slice(&port.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// Whether the set holds intervals (a key and a key end per element).
fn interval(set: SetName) -> bool {
    set == SetName::Fixed(FW_ALLOW)
}

/// Whether the set holds plain address intervals (a start and an end-flagged element per prefix).
fn plain_interval(set: SetName) -> bool {
    set == SetName::Fixed(SERVICE_CIDRS)
}

/// Refuses what the layout never writes through element steps (the node's own interval sets,
/// allowed in a whole table: `full`): those change only with a replacement.
pub(super) fn check(family: Family, e: &MapsElement, full: bool) -> Result<(), EncodeError> {
    let bad = |why: &str| Err(EncodeError::Element(e.set.name(), format!("{}: {why}", e.text())));
    for p in e.key.parts() {
        match p {
            Part::Addr(ip) if !family.matches(ip) => return bad("address of the other family"),
            Part::Net(n) if !family.matches(&n.addr()) => return bad("prefix of the other family"),
            Part::Net(_) if full && plain_interval(e.set) && e.key.parts().len() == 1 => {}
            Part::Net(_) if !interval(e.set) => return bad("a prefix outside an interval set"),
            _ => {}
        }
    }
    match e.value {
        Some((ip, _)) if !family.matches(&ip) => bad("endpoint of the other family"),
        _ => Ok(()),
    }
}

/// Element deletions, then additions, as one batch.
pub fn encode_elements(
    family: Family,
    delete: &[MapsElement],
    add: &[MapsElement],
    start: Start,
) -> Result<Batch, EncodeError> {
    let (mut w, first_seq) = super::batch_begin(start.seq);
    let op_of = element_steps(&mut w, family, delete, add)?;
    Ok(super::batch_end(w, first_seq, op_of.len(), op_of, start.anon))
}

/// The messages of element deletions, then additions, into `w`; returns each message's step (0:
/// a deletion, 1: an addition).
pub(super) fn element_steps(
    w: &mut Writer,
    family: Family,
    delete: &[MapsElement],
    add: &[MapsElement],
) -> Result<Vec<usize>, EncodeError> {
    for e in delete.iter().chain(add) {
        check(family, e, false)?;
    }
    let mut op_of = Vec::new();
    for (step, list, is_add) in [(0, delete, false), (1, add, true)] {
        let mut rest = list;
        while let Some(first) = rest.first() {
            let same = rest
                .iter()
                .take(ELEMENTS_PER_MESSAGE)
                .take_while(|e| e.set == first.set)
                .count();
            let (chunk, tail) = rest.split_at(same);
            elements_message(w, family, is_add, chunk)?;
            op_of.push(step);
            rest = tail;
        }
    }
    Ok(op_of)
}

/// One NEWSETELEM / DELSETELEM message for elements of one set.
pub(super) fn elements_message(
    w: &mut Writer,
    family: Family,
    add: bool,
    chunk: &[MapsElement],
) -> Result<(), EncodeError> {
    let Some(first) = chunk.first() else {
        return Ok(());
    };
    let (cmd, flags) = match add {
        true => (kind::NEWSETELEM, kind::F_CREATE),
        false => (kind::DELSETELEM, 0),
    };
    let m = w.begin(kind::msg(cmd), kind::F_REQUEST | flags, nfproto(family), 0);
    w.str(ELEM_LIST_TABLE, TABLE)?;
    w.str(ELEM_LIST_SET, &first.set.name())?;
    let list = w.nest(ELEM_LIST_ELEMENTS);
    for (i, e) in chunk.iter().enumerate() {
        if let (true, [Part::Net(net)]) = (plain_interval(e.set), e.key.parts()) {
            plain_range(w, net, i == 0)?;
            continue;
        }
        let el = w.nest(LIST_ELEM);
        let k = w.nest(ELEM_KEY);
        w.attr(DATA_VALUE, &key_bytes(e, false))?;
        w.nest_end(k)?;
        if interval(e.set) {
            let k = w.nest(ELEM_KEY_END);
            w.attr(DATA_VALUE, &key_bytes(e, true))?;
            w.nest_end(k)?;
        }
        if let (true, Some((ip, port))) = (add, e.value) {
            let d = w.nest(ELEM_DATA);
            w.attr(DATA_VALUE, &value_bytes(ip, port))?;
            w.nest_end(d)?;
        }
        if let (true, Some((jump, chain))) = (add, e.set.verdict()) {
            let d = w.nest(ELEM_DATA);
            let v = if jump {
                Verdict::Jump(chain)
            } else {
                Verdict::Goto(chain)
            };
            super::encode_expr::verdict(w, &v)?;
            w.nest_end(d)?;
        }
        w.nest_end(el)?;
    }
    w.nest_end(list)?;
    w.end(m);
    Ok(())
}

/// One NEWSETELEM message for entries of one dynamic map, each with the milliseconds it has left
/// (affinity entries carried into a replacement of the table).
pub(super) fn timed_elements_message(
    w: &mut Writer,
    family: Family,
    chunk: &[(MapsElement, u64)],
) -> Result<(), EncodeError> {
    let Some((first, _)) = chunk.first() else {
        return Ok(());
    };
    let m = w.begin(
        kind::msg(kind::NEWSETELEM),
        kind::F_REQUEST | kind::F_CREATE,
        nfproto(family),
        0,
    );
    w.str(ELEM_LIST_TABLE, TABLE)?;
    w.str(ELEM_LIST_SET, &first.set.name())?;
    let list = w.nest(ELEM_LIST_ELEMENTS);
    for (e, ms) in chunk {
        check(family, e, false)?;
        let el = w.nest(LIST_ELEM);
        let k = w.nest(ELEM_KEY);
        w.attr(DATA_VALUE, &key_bytes(e, false))?;
        w.nest_end(k)?;
        if let Some((ip, port)) = e.value {
            let d = w.nest(ELEM_DATA);
            w.attr(DATA_VALUE, &value_bytes(ip, port))?;
            w.nest_end(d)?;
        }
        // A zero timeout would mean the map's default (none: never expires).
        w.attr(ELEM_TIMEOUT, &(*ms).max(1).to_be_bytes())?;
        w.nest_end(el)?;
    }
    w.nest_end(list)?;
    w.end(m);
    Ok(())
}
