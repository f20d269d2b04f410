//! Reading back from the kernel what svcnet cannot know itself: the elements the packet path wrote
//! (the maps layout's dynamic affinity maps: GETSETELEM, key and data bytes, time left before
//! expiry), the handles the kernel gave a chain's rules (GETRULE: where a new rule goes), and the
//! chains and sets a table holds (GETCHAIN, GETSET: what a replacement that keeps the hooked chains
//! must clear).

use super::attr::{
    CHAIN_HANDLE, CHAIN_HOOK, CHAIN_NAME, CHAIN_TABLE, DATA_VALUE, ELEM_DATA, ELEM_EXPIRATION, ELEM_KEY,
    ELEM_LIST_ELEMENTS, ELEM_LIST_SET, ELEM_LIST_TABLE, LIST_ELEM, RULE_CHAIN, RULE_HANDLE, RULE_TABLE,
    SET_FLAGS, SET_NAME, SET_TABLE,
};
use super::msg::{NLA_F_NESTED, Writer};
use super::{EncodeError, kind, nfproto};
use crate::model::Family;
use crate::nftables::render::naming::TABLE;

const GETCHAIN: u16 = 4;
const GETRULE: u16 = 7;
const GETSET: u16 = 10;
/// `NFT_SET_ANONYMOUS`: a set that lives and dies with the rule it belongs to.
const SET_ANONYMOUS: u32 = 0x1;
const GETSETELEM: u16 = 13;
const F_DUMP: u16 = 0x300;
const NLMSG_HDRLEN: usize = 16;
const NFGENMSG_LEN: usize = 4;

/// One element as the kernel lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadElement {
    pub key: Vec<u8>,
    pub data: Option<Vec<u8>>,
    /// Milliseconds until it expires (elements of a set with timeouts).
    pub expires_ms: Option<u64>,
}

/// The dump request for the elements of `set` in svcnet's table, with sequence number `seq`.
pub fn get_elements(family: Family, set: &str, seq: u32) -> Result<Vec<u8>, EncodeError> {
    let mut w = Writer {
        seq: seq.wrapping_sub(1),
        ..Writer::default()
    };
    let m = w.begin(
        kind::msg(GETSETELEM),
        kind::F_REQUEST | F_DUMP,
        nfproto(family),
        0,
    );
    w.str(ELEM_LIST_TABLE, TABLE)?;
    w.str(ELEM_LIST_SET, set)?;
    w.end(m);
    Ok(w.buf)
}

/// The dump request for the rules of `chain` in svcnet's table, with sequence number `seq`.
pub fn get_rules(family: Family, chain: &str, seq: u32) -> Result<Vec<u8>, EncodeError> {
    let mut w = Writer {
        seq: seq.wrapping_sub(1),
        ..Writer::default()
    };
    let m = w.begin(kind::msg(GETRULE), kind::F_REQUEST | F_DUMP, nfproto(family), 0);
    w.str(RULE_TABLE, TABLE)?;
    w.str(RULE_CHAIN, chain)?;
    w.end(m);
    Ok(w.buf)
}

/// A chain of svcnet's table as the kernel lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelChain {
    pub name: String,
    pub handle: u64,
    /// A base chain, registered at a hook.
    pub hooked: bool,
}

/// What svcnet's table of one family holds besides rules and elements: its chains and its named
/// sets and maps (anonymous ones go with their rules).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableObjects {
    pub chains: Vec<KernelChain>,
    pub sets: Vec<String>,
}

/// The dump request for every chain of `family` (the kernel does not filter chains by table: see
/// [`chain_of`]), with sequence number `seq`.
pub fn get_chains(family: Family, seq: u32) -> Result<Vec<u8>, EncodeError> {
    let mut w = Writer {
        seq: seq.wrapping_sub(1),
        ..Writer::default()
    };
    let m = w.begin(kind::msg(GETCHAIN), kind::F_REQUEST | F_DUMP, nfproto(family), 0);
    w.end(m);
    Ok(w.buf)
}

/// The dump request for the sets of svcnet's table (refused with `ENOENT` when there is no table).
pub fn get_sets(family: Family, seq: u32) -> Result<Vec<u8>, EncodeError> {
    let mut w = Writer {
        seq: seq.wrapping_sub(1),
        ..Writer::default()
    };
    let m = w.begin(kind::msg(GETSET), kind::F_REQUEST | F_DUMP, nfproto(family), 0);
    w.str(SET_TABLE, TABLE)?;
    w.end(m);
    Ok(w.buf)
}

fn name(v: &[u8]) -> Option<String> {
    String::from_utf8(v.strip_suffix(&[0])?.to_vec()).ok()
}

/// The chain an answer message describes, `Some(None)` when it is another table's; `None` when it
/// is malformed.
pub fn chain_of(message: &[u8]) -> Option<Option<KernelChain>> {
    let body = message.get(NLMSG_HDRLEN + NFGENMSG_LEN..)?;
    let (mut table, mut chain, mut handle, mut hooked) = (None, None, None, false);
    for (ty, v) in attrs(body)? {
        match ty {
            CHAIN_TABLE => table = Some(name(v)?),
            CHAIN_NAME => chain = Some(name(v)?),
            CHAIN_HANDLE => handle = Some(u64::from_be_bytes(v.try_into().ok()?)),
            CHAIN_HOOK => hooked = true,
            _ => {}
        }
    }
    if table? != TABLE {
        return Some(None);
    }
    Some(Some(KernelChain {
        name: chain?,
        handle: handle?,
        hooked,
    }))
}

/// The name of the named set an answer message describes, `Some(None)` for an anonymous one; `None`
/// when it is malformed.
pub fn set_of(message: &[u8]) -> Option<Option<String>> {
    let body = message.get(NLMSG_HDRLEN + NFGENMSG_LEN..)?;
    let (mut set, mut flags) = (None, 0);
    for (ty, v) in attrs(body)? {
        match ty {
            SET_NAME => set = Some(name(v)?),
            SET_FLAGS => flags = u32::from_be_bytes(v.try_into().ok()?),
            _ => {}
        }
    }
    Some((flags & SET_ANONYMOUS == 0).then_some(set?))
}

/// The handle of the rule an answer message describes; `None` when it is malformed.
pub fn rule_handle(message: &[u8]) -> Option<u64> {
    let body = message.get(NLMSG_HDRLEN + NFGENMSG_LEN..)?;
    let (_, v) = attrs(body)?.into_iter().find(|(t, _)| *t == RULE_HANDLE)?;
    Some(u64::from_be_bytes(v.try_into().ok()?))
}

/// Attributes of `data` as (type without flags, payload); `None` when one overruns the buffer.
fn attrs(mut data: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let mut out = Vec::new();
    while data.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([data[0], data[1]]));
        let ty = u16::from_ne_bytes([data[2], data[3]]) & !NLA_F_NESTED & 0x3fff;
        if len < 4 || len > data.len() {
            return None;
        }
        out.push((ty, &data[4..len]));
        data = data.get(len.div_ceil(4) * 4..).unwrap_or(&[]);
    }
    Some(out)
}

fn value_of(nested: &[u8]) -> Option<Vec<u8>> {
    attrs(nested)?
        .into_iter()
        .find(|(t, _)| *t == DATA_VALUE)
        .map(|(_, v)| v.to_vec())
}

/// The elements of one answer message (a whole netlink message, header included); `None` when it
/// is malformed.
pub fn elements_of(message: &[u8]) -> Option<Vec<ReadElement>> {
    let body = message.get(NLMSG_HDRLEN + NFGENMSG_LEN..)?;
    let mut out = Vec::new();
    for (ty, list) in attrs(body)? {
        if ty != ELEM_LIST_ELEMENTS {
            continue;
        }
        for (ty, elem) in attrs(list)? {
            if ty != LIST_ELEM {
                continue;
            }
            let mut e = ReadElement {
                key: Vec::new(),
                data: None,
                expires_ms: None,
            };
            for (ty, v) in attrs(elem)? {
                match ty {
                    ELEM_KEY => e.key = value_of(v)?,
                    ELEM_DATA => e.data = Some(value_of(v)?),
                    ELEM_EXPIRATION => {
                        e.expires_ms = Some(u64::from_be_bytes(v.try_into().ok()?));
                    }
                    _ => {}
                }
            }
            out.push(e);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Key, data, expiration.
    type Elem<'a> = (&'a [u8], Option<&'a [u8]>, Option<u64>);

    /// An answer as the kernel sends it: header, nfgenmsg, table, set, one list with `elems`.
    fn answer(elems: &[Elem<'_>]) -> Vec<u8> {
        let mut w = Writer::default();
        let m = w.begin(kind::msg(kind::NEWSETELEM), 2, 2, 0);
        w.str(ELEM_LIST_TABLE, TABLE).unwrap();
        w.str(ELEM_LIST_SET, "affinity").unwrap();
        let list = w.nest(ELEM_LIST_ELEMENTS);
        for (key, data, exp) in elems {
            let el = w.nest(LIST_ELEM);
            let k = w.nest(ELEM_KEY);
            w.attr(DATA_VALUE, key).unwrap();
            w.nest_end(k).unwrap();
            if let Some(d) = data {
                let n = w.nest(ELEM_DATA);
                w.attr(DATA_VALUE, d).unwrap();
                w.nest_end(n).unwrap();
            }
            if let Some(ms) = exp {
                w.attr(ELEM_EXPIRATION, &ms.to_be_bytes()).unwrap();
            }
            w.nest_end(el).unwrap();
        }
        w.nest_end(list).unwrap();
        w.end(m);
        w.buf
    }

    #[test]
    fn answers_give_each_elements_key_data_and_time_left() {
        let key = [10, 0, 0, 1, 10, 96, 0, 1, 6, 0, 0, 0, 0, 80, 0, 0];
        let data = [10, 244, 1, 10, 0x1f, 0x90, 0, 0];
        let msg = answer(&[(&key, Some(&data), Some(10_799_000)), (&key[..12], None, None)]);
        let got = elements_of(&msg).expect("well formed");
        assert_eq!(
            got,
            vec![
                ReadElement {
                    key: key.to_vec(),
                    data: Some(data.to_vec()),
                    expires_ms: Some(10_799_000)
                },
                ReadElement {
                    key: key[..12].to_vec(),
                    data: None,
                    expires_ms: None
                },
            ]
        );
        assert_eq!(
            elements_of(&msg[..msg.len() - 8]),
            None,
            "a cut answer is malformed"
        );
    }

    /// A chain as the kernel lists it: table, name, handle, and a hook when `hooked`.
    fn chain_answer(table: &str, name: &str, handle: u64, hooked: bool) -> Vec<u8> {
        let mut w = Writer::default();
        let m = w.begin(kind::msg(kind::NEWCHAIN), 2, 2, 0);
        w.str(CHAIN_TABLE, table).unwrap();
        w.attr(CHAIN_HANDLE, &handle.to_be_bytes()).unwrap();
        w.str(CHAIN_NAME, name).unwrap();
        if hooked {
            let h = w.nest(CHAIN_HOOK);
            w.u32_be(super::super::attr::HOOK_NUM, 3).unwrap();
            w.nest_end(h).unwrap();
        }
        w.end(m);
        w.buf
    }

    #[test]
    fn chain_answers_give_name_handle_and_hook_of_svcnets_table_only() {
        let hooked = chain_answer(TABLE, "nat-output", 7, true);
        assert_eq!(
            chain_of(&hooked),
            Some(Some(KernelChain {
                name: "nat-output".into(),
                handle: 7,
                hooked: true
            }))
        );
        let plain = chain_of(&chain_answer(TABLE, "services", 9, false));
        assert_eq!(plain.flatten().map(|c| c.hooked), Some(false));
        assert_eq!(
            chain_of(&chain_answer("filter", "input", 1, true)),
            Some(None),
            "another table's"
        );
        assert_eq!(
            chain_of(&hooked[..hooked.len() - 4]),
            None,
            "a cut answer is malformed"
        );
    }

    #[test]
    fn set_answers_give_named_sets_and_skip_anonymous_ones() {
        let answer = |name: &str, flags: u32| {
            let mut w = Writer::default();
            let m = w.begin(kind::msg(kind::NEWSET), 2, 2, 0);
            w.str(SET_TABLE, TABLE).unwrap();
            w.str(SET_NAME, name).unwrap();
            w.u32_be(SET_FLAGS, flags).unwrap();
            w.end(m);
            w.buf
        };
        assert_eq!(set_of(&answer("eps", 0x8)), Some(Some("eps".into())));
        assert_eq!(set_of(&answer("__map%d", 0x8 | SET_ANONYMOUS)), Some(None));
    }

    #[test]
    fn the_request_names_the_table_and_set_and_asks_for_a_dump() {
        let req = get_elements(Family::V4, "np-affinity", 41).expect("encodes");
        assert_eq!(
            u32::from_ne_bytes(req[0..4].try_into().unwrap()) as usize,
            req.len()
        );
        assert_eq!(u16::from_ne_bytes([req[4], req[5]]), kind::msg(GETSETELEM));
        assert_eq!(u16::from_ne_bytes([req[6], req[7]]), kind::F_REQUEST | F_DUMP);
        assert_eq!(u32::from_ne_bytes(req[8..12].try_into().unwrap()), 41);
        let names: Vec<&[u8]> = attrs(&req[NLMSG_HDRLEN + NFGENMSG_LEN..])
            .unwrap()
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(names, vec![&b"kube-proxy\0"[..], &b"np-affinity\0"[..]]);
    }
}
