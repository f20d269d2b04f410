//! A transaction ([`Op`]s) as one nf_tables netlink batch: the messages `nft -f` would send for the
//! same text, without nft's cache (svcnet knows what the kernel holds, so nothing is listed first).
//! Pure: ops in, bytes out; [`crate::nftables::socket`] sends them.
//!
//! `nft list` prints a table written this way exactly as one written by `nft -f` (the proxy's
//! `nft_netlink` test compares both, rule by rule and expression by expression). One difference
//! is on purpose: each anonymous set gets a name of its own (`__map` + 16 hex digits) instead of
//! nft's `__map%d`, for which the kernel scans every set of the table with `sscanf`, and its
//! elements name it by batch id only, sparing a walk over the table's sets: the first load of
//! 44k services was quadratic in both (docs/BENCHMARKS.md).

mod attr;
mod compile;
mod decl;
mod encode_expr;
mod error;
mod expr;
mod kind;
mod maps;
mod maps_grow;
mod maps_load;
mod maps_refresh;
mod maps_table;
mod msg;
mod objects;
pub mod read;
mod set_type;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::model::Family;
use crate::nftables::render::{Op, Set};
use msg::Writer;

pub use error::EncodeError;
pub use maps::encode_elements;
pub use maps_grow::{Placement, encode_growth, grown_chains, growth_step, placements};
pub use maps_load::{PIECE_BYTES, Pieces};
pub use maps_refresh::{RefreshPlan, SetDigest, plan_refresh};
pub use maps_table::{encode_refresh, encode_replacement, replacement_step};
pub use set_type::SetType;

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
    /// Where the next batch's anonymous set names start.
    pub next_anon: u64,
}

/// Where a batch starts: the sequence number its messages follow, and the number naming its first
/// anonymous set. The socket advances both past every batch it sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Start {
    pub seq: u32,
    pub anon: u64,
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
    start: Start,
) -> Result<Batch, EncodeError> {
    let mut types: BTreeMap<String, SetType> = BTreeMap::new();
    for s in sets.into_iter().chain(ops.iter().filter_map(|op| match op {
        Op::AddSet(s) => Some(s),
        _ => None,
    })) {
        types.insert(s.name.clone(), SetType::parse(s)?);
    }
    let (mut w, first_seq) = batch_begin(start.seq);
    let mut enc = objects::Encoder::new(&mut w, family, &types, start.anon, Vec::new());
    let mut i = 0;
    while i < ops.len() {
        enc.op_index = i;
        i += enc.ops(&ops[i..])?;
    }
    let messages = enc.messages;
    let next_anon = start.anon.wrapping_add(u64::from(enc.next_set_id));
    let op_of = std::mem::take(&mut enc.op_of);
    Ok(batch_end(w, first_seq, messages, op_of, next_anon))
}

/// A writer holding a batch's begin message, and the sequence number the messages follow.
fn batch_begin(seq: u32) -> (Writer, u32) {
    let mut w = Writer {
        seq,
        ..Writer::default()
    };
    let begin = w.begin(kind::BATCH_BEGIN, kind::F_REQUEST, 0, kind::SUBSYS_NFTABLES);
    w.end(begin);
    let first_seq = w.seq;
    (w, first_seq)
}

/// The batch end after the messages of `w`, and the batch.
fn batch_end(mut w: Writer, first_seq: u32, messages: usize, op_of: Vec<usize>, next_anon: u64) -> Batch {
    let last_seq = w.seq;
    // Errors always come back; success only where asked: once, for the whole batch.
    w.ack_last();
    let end = w.begin(kind::BATCH_END, kind::F_REQUEST, 0, kind::SUBSYS_NFTABLES);
    w.end(end);
    Batch {
        bytes: w.buf,
        first_seq,
        last_seq,
        messages,
        op_of,
        next_anon,
    }
}
