//! Reading back from the kernel what svcnet cannot know itself: the elements of a set (GETSETELEM:
//! key and data bytes, time left before expiry; the packet path writes the maps layout's dynamic
//! affinity maps, and a refresh compares the others), the handles the kernel gave a chain's rules
//! (GETRULE: where a new rule goes), and the table's own objects ([`table`]).

use super::attr::{
    DATA_VALUE, ELEM_DATA, ELEM_EXPIRATION, ELEM_KEY, ELEM_LIST_ELEMENTS, ELEM_LIST_SET, ELEM_LIST_TABLE,
    LIST_ELEM, RULE_CHAIN, RULE_HANDLE, RULE_TABLE,
};
use super::msg::{NLA_F_NESTED, Writer};
use super::{EncodeError, kind, nfproto};
use crate::model::Family;
use crate::nftables::render::naming::TABLE;

mod table;
pub use table::{
    KernelChain, KernelSet, TABLE_DORMANT, TableObjects, chain_of, get_chains, get_sets, get_tables, set_of,
    table_dormant,
};

const GETRULE: u16 = 7;
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
