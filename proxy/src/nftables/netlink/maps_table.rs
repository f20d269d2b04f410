//! The maps layout's whole table as one nf_tables batch: `add table; delete table;` then the table,
//! its chains, sets and maps (declared as [`super::decl`] reads them), the skeleton's rules (its
//! few rule texts compiled as for the upstream layout) and every element encoded from its typed
//! value. One batch is one transaction: no packet sees the table missing or half written.

use std::collections::BTreeMap;

use super::attr;
use super::decl::Decl;
use super::maps::{check, elements_message, timed_elements_message};
use super::maps_refresh::RefreshPlan;
use super::objects::Encoder;
use super::read::{KernelChain, TableObjects};
use super::{Batch, EncodeError, Start, kind};
use crate::nftables::render::Op;
use crate::nftables::render::maps::{MapsElement, MapsTable};
use crate::nftables::render::naming::TABLE;

/// Element lists are split so each message's nested attribute stays under netlink's 64 KiB.
const ELEMENTS_PER_MESSAGE: usize = 256;

/// The steps of a replacement, as [`Batch::op_of_message`] gives them.
const STEPS: [&str; 5] = ["the table", "a chain", "a set or map", "a rule", "an element"];

/// The step of a replacement that message `index` of its batch belongs to.
pub fn replacement_step(batch: &Batch, index: usize) -> &'static str {
    batch
        .op_of_message(index)
        .and_then(|i| STEPS.get(i).copied())
        .unwrap_or("the batch as a whole")
}

/// The replacement of the table by `skeleton` (its chains, rules and sets) holding `elements`
/// (grouped by set, as [`crate::nftables::render::maps::MapsCache::elements`] yields them) and
/// `timed`: entries of dynamic maps with the milliseconds each has left. `kernel`: what the
/// kernel's table holds, cleared around the hooked chains both tables have ([`clear`]); without
/// it the table is deleted and declared again.
pub fn encode_replacement(
    skeleton: &MapsTable,
    elements: impl IntoIterator<Item = MapsElement>,
    timed: &[(MapsElement, u64)],
    kernel: Option<&TableObjects>,
    start: Start,
) -> Result<Batch, EncodeError> {
    encode(skeleton, elements, timed, kernel, &RefreshPlan::default(), start)
}

/// The replacement over the kernel's live table `kernel` as `plan` says (see
/// [`super::plan_refresh`]): the sets it keeps are neither deleted nor written, those it flushes
/// keep their declaration and are filled again, so the batch holds only the elements of the sets
/// not kept. One transaction as a replacement is.
pub fn encode_refresh(
    skeleton: &MapsTable,
    elements: impl IntoIterator<Item = MapsElement>,
    timed: &[(MapsElement, u64)],
    kernel: &TableObjects,
    plan: &RefreshPlan,
    start: Start,
) -> Result<Batch, EncodeError> {
    encode(skeleton, elements, timed, Some(kernel), plan, start)
}

fn encode(
    skeleton: &MapsTable,
    elements: impl IntoIterator<Item = MapsElement>,
    timed: &[(MapsElement, u64)],
    kernel: Option<&TableObjects>,
    plan: &RefreshPlan,
    start: Start,
) -> Result<Batch, EncodeError> {
    let family = skeleton.family;
    let keep = &plan.keep;
    let decls = skeleton
        .sets
        .iter()
        .filter(|s| !keep.contains(&s.name) && !plan.flush.contains(&s.name))
        .map(|s| Decl::parse(s, family).map(|d| (s.name.as_str(), d)))
        .collect::<Result<Vec<_>, _>>()?;
    let intervals = interval_sets(skeleton);
    let (mut w, first_seq) = super::batch_begin(start.seq);
    let types = BTreeMap::new();
    let mut enc = Encoder::new(&mut w, family, &types, start.anon, intervals);
    let first = match kernel {
        Some(k) => clear(k, skeleton, plan),
        None => vec![Op::AddTable, Op::DeleteTable, Op::AddTable],
    };
    for op in &first {
        enc.ops(std::slice::from_ref(op))?;
    }
    enc.op_index = 1;
    for c in &skeleton.chains {
        let op = Op::AddChain(crate::nftables::render::Chain {
            rules: Vec::new(),
            ..c.clone()
        });
        enc.ops(std::slice::from_ref(&op))?;
    }
    enc.op_index = 2;
    for (name, d) in &decls {
        set_message(&mut enc, name, d)?;
    }
    enc.op_index = 3;
    for c in &skeleton.chains {
        for r in &c.rules {
            enc.rule(&c.name, r)?;
        }
    }
    enc.op_index = 4;
    let mut written = elements
        .into_iter()
        .filter(|e| keep.is_empty() || !keep.contains(&e.set.name()))
        .peekable();
    element_messages(&mut enc, &mut written, usize::MAX)?;
    timed_messages(&mut enc, timed)?;
    let (messages, op_of) = (enc.messages, std::mem::take(&mut enc.op_of));
    let next_anon = start.anon.wrapping_add(u64::from(enc.next_set_id));
    Ok(super::batch_end(w, first_seq, messages, op_of, next_anon))
}

/// The steps that empty the kernel's table `k` but keep each hooked chain `skeleton` hooks too: its
/// hook stays registered, so a packet sees the old generation's rules or the new one's, never
/// neither (deleting and re-adding a hooked chain registers the new one beside the old, and a
/// packet crossing the commit between the two would meet no rule in either), each set `plan`
/// keeps with its elements and each it flushes without them. Rules first, so no set or chain is
/// still referenced when it goes.
fn clear(k: &TableObjects, skeleton: &MapsTable, plan: &RefreshPlan) -> Vec<Op> {
    let kept = |c: &KernelChain| c.hooked && skeleton.chain(&c.name).is_some_and(|n| n.hook.is_some());
    let mut ops = vec![Op::AddTable];
    ops.extend(k.chains.iter().map(|c| Op::FlushChain(c.name.clone())));
    for s in k.sets.iter().filter(|s| !plan.keep.contains(&s.name)) {
        let (name, is_map) = (s.name.clone(), false);
        ops.push(match plan.flush.contains(&s.name) {
            true => Op::FlushSet { name, is_map },
            false => Op::DeleteSet { name, is_map },
        });
    }
    ops.extend(
        k.chains
            .iter()
            .filter(|c| !kept(c))
            .map(|c| Op::DeleteChain(c.name.clone())),
    );
    ops
}

/// NEWSETELEM messages of the next `elements` (grouped by set), each one set's and at most
/// [`ELEMENTS_PER_MESSAGE`], until the batch holds `budget` bytes or no element is left. A message
/// is never split across batches, so a plain interval set (one message: a node's few CIDRs) keeps
/// its leading interval end.
pub(super) fn element_messages<I: Iterator<Item = MapsElement>>(
    enc: &mut Encoder<'_>,
    elements: &mut std::iter::Peekable<I>,
    budget: usize,
) -> Result<(), EncodeError> {
    let family = enc.family;
    let mut chunk: Vec<MapsElement> = Vec::with_capacity(ELEMENTS_PER_MESSAGE);
    while enc.w.buf.len() < budget {
        chunk.clear();
        while chunk.len() < ELEMENTS_PER_MESSAGE {
            let Some(e) = elements.next_if(|e| chunk.first().is_none_or(|f| f.set == e.set)) else {
                break;
            };
            check(family, &e, true)?;
            chunk.push(e);
        }
        if chunk.is_empty() {
            break;
        }
        enc.begin_counted();
        elements_message(enc.w, family, true, &chunk)?;
    }
    Ok(())
}

/// The timed entries, each set's in messages of up to [`ELEMENTS_PER_MESSAGE`].
pub(super) fn timed_messages(enc: &mut Encoder<'_>, timed: &[(MapsElement, u64)]) -> Result<(), EncodeError> {
    let mut rest = timed;
    while let Some((first, _)) = rest.first() {
        let same = rest
            .iter()
            .take(ELEMENTS_PER_MESSAGE)
            .take_while(|(e, _)| e.set == first.set)
            .count();
        let (chunk, tail) = rest.split_at(same);
        enc.begin_counted();
        timed_elements_message(enc.w, enc.family, chunk)?;
        rest = tail;
    }
    Ok(())
}

/// The table's interval sets (rules that look a concatenated key up in one compile differently).
pub(super) fn interval_sets(t: &MapsTable) -> Vec<String> {
    t.sets
        .iter()
        .filter(|s| s.flags.contains(&"interval"))
        .map(|s| s.name.clone())
        .collect()
}

/// One NEWSET message.
pub(super) fn set_message(enc: &mut Encoder<'_>, name: &str, d: &Decl) -> Result<(), EncodeError> {
    enc.next_set_id += 1;
    let m = enc.begin(kind::NEWSET, kind::F_CREATE);
    let w = &mut *enc.w;
    w.str(attr::SET_TABLE, TABLE)?;
    w.str(attr::SET_NAME, name)?;
    w.u32_be(attr::SET_FLAGS, d.flags)?;
    w.u32_be(attr::SET_KEY_TYPE, d.key_type)?;
    w.u32_be(attr::SET_KEY_LEN, d.key_len)?;
    if let Some((ty, len)) = d.data {
        w.u32_be(attr::SET_DATA_TYPE, ty)?;
        w.u32_be(attr::SET_DATA_LEN, len)?;
    }
    w.u32_be(attr::SET_ID, enc.next_set_id)?;
    if !d.concat_fields.is_empty() {
        let desc = w.nest(attr::SET_DESC);
        let list = w.nest(attr::SET_DESC_CONCAT);
        for len in &d.concat_fields {
            let f = w.nest(attr::LIST_ELEM);
            w.u32_be(attr::SET_FIELD_LEN, *len)?;
            w.nest_end(f)?;
        }
        w.nest_end(list)?;
        w.nest_end(desc)?;
    }
    w.attr(attr::SET_USERDATA, &d.udata)?;
    w.end(m);
    Ok(())
}
