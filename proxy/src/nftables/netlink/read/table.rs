//! The objects of svcnet's table as the kernel lists them besides rules and elements: whether the
//! table is dormant (GETTABLE), its chains (GETCHAIN) and its named sets and maps with their
//! declarations (GETSET): what a replacement that keeps the hooked chains must clear, and which
//! sets a refresh may keep.

use super::super::attr::{
    CHAIN_HANDLE, CHAIN_HOOK, CHAIN_NAME, CHAIN_TABLE, SET_DATA_LEN, SET_DATA_TYPE, SET_FLAGS, SET_KEY_LEN,
    SET_KEY_TYPE, SET_NAME, SET_TABLE, SET_USERDATA, TABLE_FLAGS, TABLE_NAME,
};
use super::super::msg::Writer;
use super::super::{EncodeError, kind, nfproto};
use super::{F_DUMP, NFGENMSG_LEN, NLMSG_HDRLEN, attrs};
use crate::model::Family;
use crate::nftables::render::naming::TABLE;

const GETTABLE: u16 = 1;
const GETCHAIN: u16 = 4;
const GETSET: u16 = 10;
/// `NFT_SET_ANONYMOUS`: a set that lives and dies with the rule it belongs to.
const SET_ANONYMOUS: u32 = 0x1;

/// A chain of svcnet's table as the kernel lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelChain {
    pub name: String,
    pub handle: u64,
    /// A base chain: registered at its hook unless the table is dormant.
    pub hooked: bool,
}

/// `NFT_TABLE_F_DORMANT`: none of the table's base chains is registered at its hook.
pub const TABLE_DORMANT: u32 = 0x1;

/// The dump request for every table of `family` (filtered by [`table_dormant`]).
pub fn get_tables(family: Family, seq: u32) -> Result<Vec<u8>, EncodeError> {
    let mut w = Writer {
        seq: seq.wrapping_sub(1),
        ..Writer::default()
    };
    let m = w.begin(kind::msg(GETTABLE), kind::F_REQUEST | F_DUMP, nfproto(family), 0);
    w.end(m);
    Ok(w.buf)
}

/// Whether the table an answer message describes is dormant, `Some(None)` when it is another
/// table; `None` when it is malformed.
pub fn table_dormant(message: &[u8]) -> Option<Option<bool>> {
    let body = message.get(NLMSG_HDRLEN + NFGENMSG_LEN..)?;
    let (mut table, mut flags) = (None, 0);
    for (ty, v) in attrs(body)? {
        match ty {
            TABLE_NAME => table = Some(name(v)?),
            TABLE_FLAGS => flags = u32::from_be_bytes(v.try_into().ok()?),
            _ => {}
        }
    }
    Some((table? == TABLE).then_some(flags & TABLE_DORMANT != 0))
}

/// What svcnet's table of one family holds besides rules and elements: its chains and its named
/// sets and maps (anonymous ones go with their rules).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableObjects {
    pub chains: Vec<KernelChain>,
    pub sets: Vec<KernelSet>,
    /// Set while a load in pieces has not woken the table ([`TABLE_DORMANT`]).
    pub dormant: bool,
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

/// A named set or map of svcnet's table as the kernel lists it: what its NEWSET declared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSet {
    pub name: String,
    pub flags: u32,
    pub key_type: u32,
    pub key_len: u32,
    /// A map's data type and length.
    pub data: Option<(u32, u32)>,
    pub udata: Vec<u8>,
}

/// The named set an answer message describes, `Some(None)` for an anonymous one; `None` when it is
/// malformed.
pub fn set_of(message: &[u8]) -> Option<Option<KernelSet>> {
    let body = message.get(NLMSG_HDRLEN + NFGENMSG_LEN..)?;
    let mut set = KernelSet::default();
    let (mut named, mut data_type, mut data_len) = (false, None, None);
    let be = |v: &[u8]| v.try_into().ok().map(u32::from_be_bytes);
    for (ty, v) in attrs(body)? {
        match ty {
            SET_NAME => (set.name, named) = (name(v)?, true),
            SET_FLAGS => set.flags = be(v)?,
            SET_KEY_TYPE => set.key_type = be(v)?,
            SET_KEY_LEN => set.key_len = be(v)?,
            SET_DATA_TYPE => data_type = Some(be(v)?),
            SET_DATA_LEN => data_len = Some(be(v)?),
            SET_USERDATA => set.udata = v.to_vec(),
            _ => {}
        }
    }
    if !named {
        return None;
    }
    set.data = data_type.zip(data_len);
    Some((set.flags & SET_ANONYMOUS == 0).then_some(set))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain as the kernel lists it: table, name, handle, and a hook when `hooked`.
    fn chain_answer(table: &str, name: &str, handle: u64, hooked: bool) -> Vec<u8> {
        let mut w = Writer::default();
        let m = w.begin(kind::msg(kind::NEWCHAIN), 2, 2, 0);
        w.str(CHAIN_TABLE, table).unwrap();
        w.attr(CHAIN_HANDLE, &handle.to_be_bytes()).unwrap();
        w.str(CHAIN_NAME, name).unwrap();
        if hooked {
            let h = w.nest(CHAIN_HOOK);
            w.u32_be(super::super::super::attr::HOOK_NUM, 3).unwrap();
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
        let eps = set_of(&answer("eps", 0x8)).flatten().expect("a named set");
        assert_eq!((eps.name.as_str(), eps.flags, eps.data), ("eps", 0x8, None));
        assert_eq!(set_of(&answer("__map%d", 0x8 | SET_ANONYMOUS)), Some(None));
    }
}
