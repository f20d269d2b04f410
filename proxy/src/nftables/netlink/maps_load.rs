//! The maps layout's table loaded in pieces where no packet reaches it yet (no table, or a dormant
//! one: a load in pieces that stopped half way): the table declared dormant with its chains, sets
//! and rules, then the elements in batches of bounded size, then the table woken. A dormant table
//! registers none of its base chains' hooks, so no packet sees it half written; the kernel holds
//! what one batch of the whole table leaves; and the proxy never holds more than one piece's bytes
//! beside its cache, where one batch of the whole table is 6.6 MiB at 10k services
//! (docs/nftables-maps.md, "Loading in pieces").

use std::collections::BTreeMap;
use std::iter::Peekable;

use super::decl::Decl;
use super::maps_table::{element_messages, interval_sets, set_message, timed_messages};
use super::objects::Encoder;
use super::read::TABLE_DORMANT;
use super::{Batch, EncodeError, Start};
use crate::nftables::render::maps::{MapsElement, MapsTable};
use crate::nftables::render::{Chain, Op};

/// The bytes the daemon's element batches stop at: the proxy's peak beside its cache
/// (docs/nftables-maps.md, "Loading in pieces").
pub const PIECE_BYTES: usize = 512 << 10;

/// Where a load in pieces stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Skeleton,
    Elements,
    Wake,
    Done,
}

/// The batches of one load in pieces, in order (see [`Pieces::next_batch`]); their steps read as
/// a replacement's ([`super::replacement_step`]).
pub struct Pieces<'a, I: Iterator<Item = MapsElement>> {
    skeleton: &'a MapsTable,
    elements: Peekable<I>,
    timed: &'a [(MapsElement, u64)],
    budget: usize,
    stage: Stage,
}

impl<'a, I: Iterator<Item = MapsElement>> Pieces<'a, I> {
    /// The load of `skeleton` holding `elements` (grouped by set) and the `timed` entries of its
    /// dynamic maps, with element batches of about `budget` bytes (one message more at most).
    pub fn new(
        skeleton: &'a MapsTable,
        elements: I,
        timed: &'a [(MapsElement, u64)],
        budget: usize,
    ) -> Pieces<'a, I> {
        Pieces {
            skeleton,
            elements: elements.peekable(),
            timed,
            budget,
            stage: Stage::Skeleton,
        }
    }

    /// The next batch, to be applied before the one after it is asked for; `None` once the last
    /// was given.
    /// 1. The table deleted if there and declared again, dormant, with its chains, sets and maps
    ///    and rules (as one batch of the whole table orders them).
    /// 2. Elements, each batch until it holds `budget` bytes.
    /// 3. The timed entries, and the table woken: its hooks are registered as it commits.
    pub fn next_batch(&mut self, start: Start) -> Result<Option<Batch>, EncodeError> {
        let (mut w, first_seq) = super::batch_begin(start.seq);
        w.buf.reserve(self.budget.min(1 << 24) + (128 << 10));
        let types = BTreeMap::new();
        let intervals = interval_sets(self.skeleton);
        let mut enc = Encoder::new(&mut w, self.skeleton.family, &types, start.anon, intervals);
        match self.stage {
            Stage::Skeleton => {
                skeleton(&mut enc, self.skeleton)?;
                self.stage = Stage::Elements;
            }
            Stage::Elements => {
                enc.op_index = 4;
                element_messages(&mut enc, &mut self.elements, self.budget)?;
                if self.elements.peek().is_none() {
                    self.stage = Stage::Wake;
                }
                if enc.messages == 0 {
                    return self.next_batch(start);
                }
            }
            Stage::Wake => {
                enc.op_index = 4;
                timed_messages(&mut enc, self.timed)?;
                enc.op_index = 0;
                enc.table_flags(0)?;
                self.stage = Stage::Done;
            }
            Stage::Done => return Ok(None),
        }
        let (messages, op_of) = (enc.messages, std::mem::take(&mut enc.op_of));
        let next_anon = start.anon.wrapping_add(u64::from(enc.next_set_id));
        Ok(Some(super::batch_end(w, first_seq, messages, op_of, next_anon)))
    }
}

/// The first batch's messages: the table reset and declared dormant, its chains, sets, rules.
fn skeleton(enc: &mut Encoder<'_>, skeleton: &MapsTable) -> Result<(), EncodeError> {
    let family = skeleton.family;
    // Declared dormant before the delete too: an `add table` without the flag would wake a
    // dormant table left half loaded, registering its hooks until the delete commits.
    enc.table_flags(TABLE_DORMANT)?;
    enc.ops(&[Op::DeleteTable])?;
    enc.table_flags(TABLE_DORMANT)?;
    enc.op_index = 1;
    for c in &skeleton.chains {
        let op = Op::AddChain(Chain {
            rules: Vec::new(),
            ..c.clone()
        });
        enc.ops(std::slice::from_ref(&op))?;
    }
    enc.op_index = 2;
    for s in &skeleton.sets {
        set_message(enc, &s.name, &Decl::parse(s, family)?)?;
    }
    enc.op_index = 3;
    for c in &skeleton.chains {
        for r in &c.rules {
            enc.rule(&c.name, r)?;
        }
    }
    Ok(())
}
