//! A transaction ([`Op`]s) as one nf_tables netlink batch: the messages `nft -f` would send for the
//! same text, without nft's cache (svcnet knows what the kernel holds, so nothing is listed first).
//! Pure: ops in, bytes out; [`crate::nft_socket`] sends them.
//!
//! `nft list` prints a table written this way exactly as one written by `nft -f` (the proxy's
//! `nft_netlink` test compares both, rule by rule and expression by expression).

mod encode_expr;
mod expr;
mod msg;
mod objects;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use super::{Op, Set};
use crate::model::Family;
use msg::Writer;

pub use objects::SetType;

#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("nftables rule {0:?}: {1}")]
    Rule(String, String),
    #[error("nftables set {0:?}: unsupported type {1:?}")]
    SetType(String, String),
    #[error("nftables element of {0:?}: {1}")]
    Element(String, String),
    #[error("nftables chain {0:?}: {1}")]
    Chain(String, String),
    #[error("netlink attribute of {0} bytes is too large")]
    TooLarge(usize),
}

/// nf_tables message types and netlink flags.
pub(super) mod kind {
    pub const SUBSYS_NFTABLES: u16 = 10;
    pub const BATCH_BEGIN: u16 = 0x10;
    pub const BATCH_END: u16 = 0x11;
    pub const NEWTABLE: u16 = 0;
    pub const DELTABLE: u16 = 2;
    pub const NEWCHAIN: u16 = 3;
    pub const DELCHAIN: u16 = 5;
    pub const NEWRULE: u16 = 6;
    pub const DELRULE: u16 = 8;
    pub const NEWSET: u16 = 9;
    pub const DELSET: u16 = 11;
    pub const NEWSETELEM: u16 = 12;
    pub const DELSETELEM: u16 = 14;
    pub const F_REQUEST: u16 = 0x1;
    pub const F_ACK: u16 = 0x4;
    pub const F_CREATE: u16 = 0x400;
    pub const F_APPEND: u16 = 0x800;

    pub fn msg(cmd: u16) -> u16 {
        (SUBSYS_NFTABLES << 8) | cmd
    }
}

/// NFPROTO_IPV4 / NFPROTO_IPV6.
pub(super) fn nfproto(family: Family) -> u8 {
    match family {
        Family::V4 => 2,
        Family::V6 => 10,
    }
}

/// One batch, ready to send: the kernel applies all of it or none of it.
#[derive(Debug)]
pub struct Batch {
    pub bytes: Vec<u8>,
    /// The sequence number of the batch begin message.
    pub first_seq: u32,
    /// The sequence number of the last message: the one that asks for an acknowledgement.
    pub last_seq: u32,
    /// Messages in the batch (without begin and end).
    pub messages: usize,
    /// For each message after the batch begin, the index of the op it came from.
    op_of: Vec<usize>,
}

impl Batch {
    /// The op that message `index` of the batch came from (0 is the batch begin: none).
    pub fn op_of_message(&self, index: usize) -> Option<usize> {
        index.checked_sub(1).and_then(|i| self.op_of.get(i).copied())
    }
}

/// Encodes a transaction. `sets` gives the type of every set or map an element may name (the table's
/// sets; a set added in the same transaction is found in `ops` too).
pub fn encode<'a>(
    family: Family,
    ops: &'a [Op],
    sets: impl IntoIterator<Item = &'a Set>,
    seq_start: u32,
) -> Result<Batch, EncodeError> {
    let mut types: BTreeMap<String, SetType> = BTreeMap::new();
    for s in sets.into_iter().chain(ops.iter().filter_map(|op| match op {
        Op::AddSet(s) => Some(s),
        _ => None,
    })) {
        types.insert(s.name.clone(), SetType::parse(s)?);
    }
    let mut w = Writer {
        seq: seq_start,
        ..Writer::default()
    };
    let begin = w.begin(kind::BATCH_BEGIN, kind::F_REQUEST, 0, kind::SUBSYS_NFTABLES);
    w.end(begin);
    let first_seq = w.seq;
    let mut enc = objects::Encoder {
        w: &mut w,
        family,
        types: &types,
        next_set_id: 0,
        messages: 0,
        op_of: Vec::new(),
        op_index: 0,
    };
    let mut i = 0;
    while i < ops.len() {
        enc.op_index = i;
        i += enc.ops(&ops[i..])?;
    }
    let messages = enc.messages;
    let op_of = std::mem::take(&mut enc.op_of);
    let last_seq = w.seq;
    // Errors always come back; success only where asked: once, for the whole batch.
    w.ack_last();
    let end = w.begin(kind::BATCH_END, kind::F_REQUEST, 0, kind::SUBSYS_NFTABLES);
    w.end(end);
    Ok(Batch {
        bytes: w.buf,
        first_seq,
        last_seq,
        messages,
        op_of,
    })
}
