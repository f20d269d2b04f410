//! Tables, chains, sets, elements and rules as nf_tables messages (attribute numbers from
//! `linux/netfilter/nf_tables.h`), laid out as nft 1.0.x sends them.

use std::collections::BTreeMap;

use super::attr;
use super::compile;
use super::expr::{self, AnonSet, Compiled, Expr, Verdict};
use super::msg::{Udata, Writer};
use super::set_type::SetType;
use super::{EncodeError, kind, nfproto};
use crate::model::Family;
use crate::nftables::render::naming::TABLE;
use crate::nftables::render::{Chain, Element, Op, Rule, Set};

const TABLE_COMMENT: &str = "rules for kube-proxy";
/// The data type of verdict maps (NFT_DATA_VERDICT).
pub(super) const DATA_VERDICT: u32 = 0xffff_ff00;
const SET_TIMEOUT: u32 = 0x10;
const SET_EVAL: u32 = 0x20;
const ELEM_INTERVAL_END: u32 = 0x1;
/// Element user data: flags, and the flag of an interval open to the end of the key space.
const ELEM_UDATA_FLAGS: u8 = 1;
const ELEM_INTERVAL_OPEN: u32 = 0x1;

pub(super) struct Encoder<'a> {
    pub w: &'a mut Writer,
    pub family: Family,
    pub types: &'a BTreeMap<String, SetType>,
    pub next_set_id: u32,
    /// Anonymous set `id` of this batch is named after `anon_base + id`.
    pub anon_base: u64,
    pub messages: usize,
    /// The op of each message written, in order.
    pub op_of: Vec<usize>,
    pub op_index: usize,
    /// The table's interval sets that rules look concatenated keys up in.
    pub intervals: Vec<String>,
}

/// Element lists are split so each message's nested attribute stays under netlink's 64 KiB.
const ELEMENTS_PER_MESSAGE: usize = 256;

impl<'a> Encoder<'a> {
    /// An encoder writing into `w`; `types`: the sets elements may name (see [`super::encode`]).
    pub(super) fn new(
        w: &'a mut Writer,
        family: Family,
        types: &'a BTreeMap<String, SetType>,
        anon_base: u64,
        intervals: Vec<String>,
    ) -> Encoder<'a> {
        Encoder {
            w,
            family,
            types,
            next_set_id: 0,
            anon_base,
            messages: 0,
            op_of: Vec::new(),
            op_index: 0,
            intervals,
        }
    }

    pub(super) fn begin(&mut self, cmd: u16, flags: u16) -> usize {
        self.messages += 1;
        self.op_of.push(self.op_index);
        self.w
            .begin(kind::msg(cmd), kind::F_REQUEST | flags, nfproto(self.family), 0)
    }

    /// Counts a message the caller writes itself (its header included) as one of the current op.
    pub(super) fn begin_counted(&mut self) {
        self.messages += 1;
        self.op_of.push(self.op_index);
    }

    /// Encodes the first op (and the element ops of the same kind and set right after it, in one
    /// message); returns how many ops it took.
    pub(super) fn ops(&mut self, ops: &[Op]) -> Result<usize, EncodeError> {
        let Some(first) = ops.first() else {
            return Ok(0);
        };
        match first {
            Op::AddTable => self.table(kind::NEWTABLE, kind::F_CREATE, true)?,
            Op::DeleteTable => self.table(kind::DELTABLE, 0, false)?,
            Op::AddChain(c) => self.chain(c)?,
            Op::FlushChain(c) => self.named(kind::DELRULE, attr::RULE_TABLE, attr::RULE_CHAIN, c)?,
            Op::DeleteChain(c) => self.named(kind::DELCHAIN, attr::CHAIN_TABLE, attr::CHAIN_NAME, c)?,
            Op::AddSet(s) => self.set(s)?,
            Op::FlushSet { name, .. } => {
                self.named(kind::DELSETELEM, attr::ELEM_LIST_TABLE, attr::ELEM_LIST_SET, name)?
            }
            Op::DeleteSet { name, .. } => self.named(kind::DELSET, attr::SET_TABLE, attr::SET_NAME, name)?,
            Op::AddRule { chain, rule } => self.rule(chain, rule)?,
            Op::AddElement(e) | Op::DeleteElement(e) => {
                let add = matches!(first, Op::AddElement(_));
                let run: Vec<&Element> = ops
                    .iter()
                    .take(ELEMENTS_PER_MESSAGE)
                    .map_while(|op| match op {
                        Op::AddElement(x) if add && x.container == e.container => Some(x),
                        Op::DeleteElement(x) if !add && x.container == e.container => Some(x),
                        _ => None,
                    })
                    .collect();
                self.elements(add, &run)?;
                return Ok(run.len());
            }
        }
        Ok(1)
    }

    fn table(&mut self, cmd: u16, flags: u16, add: bool) -> Result<(), EncodeError> {
        self.table_flagged(cmd, flags, add.then_some(0))
    }

    /// The table declared (or, when it exists, updated) with `table_flags` (`NFT_TABLE_F_*`): a
    /// dormant table registers none of its base chains' hooks, and is woken by clearing the flag.
    pub(super) fn table_flags(&mut self, table_flags: u32) -> Result<(), EncodeError> {
        self.table_flagged(kind::NEWTABLE, kind::F_CREATE, Some(table_flags))
    }

    fn table_flagged(&mut self, cmd: u16, flags: u16, add: Option<u32>) -> Result<(), EncodeError> {
        let m = self.begin(cmd, flags);
        self.w.str(attr::TABLE_NAME, TABLE)?;
        if let Some(table_flags) = add {
            self.w.u32_be(attr::TABLE_FLAGS, table_flags)?;
            self.w
                .attr(attr::TABLE_USERDATA, &Udata::comment(TABLE_COMMENT)?.0)?;
        }
        self.w.end(m);
        Ok(())
    }

    /// A message naming one object of the table (delete chain/set, flush chain/set).
    fn named(&mut self, cmd: u16, table_attr: u16, name_attr: u16, name: &str) -> Result<(), EncodeError> {
        let m = self.begin(cmd, 0);
        self.w.str(table_attr, TABLE)?;
        self.w.str(name_attr, name)?;
        self.w.end(m);
        Ok(())
    }

    fn chain(&mut self, c: &Chain) -> Result<(), EncodeError> {
        let m = self.begin(kind::NEWCHAIN, kind::F_CREATE);
        self.w.str(attr::CHAIN_TABLE, TABLE)?;
        self.w.str(attr::CHAIN_NAME, &c.name)?;
        if let Some(h) = &c.hook {
            let num: u32 = match h.hook {
                "prerouting" => 0,
                "input" => 1,
                "forward" => 2,
                "output" => 3,
                "postrouting" => 4,
                other => return Err(EncodeError::Chain(c.name.clone(), format!("hook {other:?}"))),
            };
            self.w.str(attr::CHAIN_TYPE, h.kind)?;
            let n = self.w.nest(attr::CHAIN_HOOK);
            self.w.u32_be(attr::HOOK_NUM, num)?;
            self.w.attr(attr::HOOK_PRIORITY, &h.priority.to_be_bytes())?;
            self.w.nest_end(n)?;
        }
        if let Some(comment) = &c.comment {
            let u = Udata::comment(&crate::nftables::render::comment_text(comment))?;
            self.w.attr(attr::CHAIN_USERDATA, &u.0)?;
        }
        self.w.end(m);
        Ok(())
    }

    fn set(&mut self, s: &Set) -> Result<(), EncodeError> {
        let ty = self
            .types
            .get(&s.name)
            .cloned()
            .map_or_else(|| SetType::parse(s), Ok)?;
        let mut flags = if ty.verdict_map { expr::SET_MAP } else { 0 };
        for f in &s.flags {
            flags |= match *f {
                "dynamic" => SET_EVAL,
                "timeout" => SET_TIMEOUT,
                "interval" => expr::SET_INTERVAL,
                "constant" => expr::SET_CONSTANT,
                other => return Err(EncodeError::SetType(s.name.clone(), format!("flag {other}"))),
            };
        }
        if s.timeout.is_some() {
            flags |= SET_TIMEOUT;
        }
        self.next_set_id += 1;
        let m = self.begin(kind::NEWSET, kind::F_CREATE);
        self.w.str(attr::SET_TABLE, TABLE)?;
        self.w.str(attr::SET_NAME, &s.name)?;
        self.w.u32_be(attr::SET_FLAGS, flags)?;
        self.w.u32_be(attr::SET_KEY_TYPE, ty.type_id())?;
        self.w.u32_be(attr::SET_KEY_LEN, ty.key_len())?;
        if ty.verdict_map {
            self.w.u32_be(attr::SET_DATA_TYPE, DATA_VERDICT)?;
            self.w.u32_be(attr::SET_DATA_LEN, 0)?;
        }
        self.w.u32_be(attr::SET_ID, self.next_set_id)?;
        if let Some(t) = s.timeout {
            self.w
                .attr(attr::SET_TIMEOUT, &(u64::from(t) * 1000).to_be_bytes())?;
        }
        self.w
            .attr(attr::SET_USERDATA, &ty.udata(s.comment.as_deref())?)?;
        self.w.end(m);
        Ok(())
    }

    fn elements(&mut self, add: bool, elements: &[&Element]) -> Result<(), EncodeError> {
        let Some(first) = elements.first() else {
            return Ok(());
        };
        let set = first.container;
        let ty = self
            .types
            .get(set)
            .ok_or_else(|| EncodeError::Element(set.to_string(), "no such set in the table".into()))?;
        let (cmd, flags) = if add {
            (kind::NEWSETELEM, kind::F_CREATE)
        } else {
            (kind::DELSETELEM, 0)
        };
        let m = self.begin(cmd, flags);
        self.w.str(attr::ELEM_LIST_TABLE, TABLE)?;
        self.w.str(attr::ELEM_LIST_SET, set)?;
        let list = self.w.nest(attr::ELEM_LIST_ELEMENTS);
        for e in elements {
            let key = ty.key(e)?;
            let verdict = match (&e.value, add) {
                (Some(v), true) => Some(
                    Verdict::parse(v)
                        .ok_or_else(|| EncodeError::Element(set.to_string(), format!("bad verdict {v:?}")))?,
                ),
                _ => None,
            };
            let comment = e.comment.as_deref().filter(|_| add);
            let udata = comment
                .map(|c| Udata::comment(&crate::nftables::render::comment_text(c)))
                .transpose()?;
            self.element(&key, false, verdict.as_ref(), udata)?;
        }
        self.w.nest_end(list)?;
        self.w.end(m);
        Ok(())
    }

    fn element(
        &mut self,
        key: &[u8],
        interval_end: bool,
        verdict: Option<&Verdict>,
        udata: Option<Udata>,
    ) -> Result<(), EncodeError> {
        let el = self.w.nest(attr::LIST_ELEM);
        if interval_end {
            self.w.u32_be(attr::ELEM_FLAGS, ELEM_INTERVAL_END)?;
        }
        let k = self.w.nest(attr::ELEM_KEY);
        self.w.attr(attr::DATA_VALUE, key)?;
        self.w.nest_end(k)?;
        if let Some(v) = verdict {
            let d = self.w.nest(attr::ELEM_DATA);
            self.verdict(v)?;
            self.w.nest_end(d)?;
        }
        if let Some(u) = udata {
            self.w.attr(attr::ELEM_USERDATA, &u.0)?;
        }
        self.w.nest_end(el)
    }

    fn verdict(&mut self, v: &Verdict) -> Result<(), EncodeError> {
        let n = self.w.nest(attr::DATA_VERDICT);
        self.w.attr(attr::VERDICT_CODE, &v.code().to_be_bytes())?;
        if let Some(chain) = v.chain() {
            self.w.str(attr::VERDICT_CHAIN, chain)?;
        }
        self.w.nest_end(n)
    }

    pub(super) fn rule(&mut self, chain: &str, rule: &Rule) -> Result<(), EncodeError> {
        self.rule_at(chain, rule, None)
    }

    /// A rule at the end of `chain`, or (`before`) in front of the rule with that handle.
    pub(super) fn rule_at(
        &mut self,
        chain: &str,
        rule: &Rule,
        before: Option<u64>,
    ) -> Result<(), EncodeError> {
        let Compiled { sets, mut exprs } =
            compile::compile(&rule.text, self.family, &mut self.next_set_id, &self.intervals)?;
        for s in &sets {
            self.anon_set(s)?;
        }
        for e in &mut exprs {
            if let Expr::Lookup {
                set, anon: Some(id), ..
            } = e
            {
                *set = self.anon_name(set, *id);
            }
        }
        let flags = match before {
            None => kind::F_CREATE | kind::F_APPEND,
            Some(_) => kind::F_CREATE,
        };
        let m = self.begin(kind::NEWRULE, flags);
        self.w.str(attr::RULE_TABLE, TABLE)?;
        self.w.str(attr::RULE_CHAIN, chain)?;
        if let Some(handle) = before {
            self.w.attr(attr::RULE_POSITION, &handle.to_be_bytes())?;
        }
        let list = self.w.nest(attr::RULE_EXPRESSIONS);
        for e in &exprs {
            self.expr(e)?;
        }
        self.w.nest_end(list)?;
        if let Some(comment) = &rule.comment {
            let u = Udata::comment(&crate::nftables::render::comment_text(comment))?;
            self.w.attr(attr::RULE_USERDATA, &u.0)?;
        }
        self.w.end(m);
        Ok(())
    }

    /// The name of anonymous set `id`: nft's template (`__map%d`) with 16 hex digits of its own, so
    /// the kernel neither scans the table's sets to pick a number nor meets a name nft would pick.
    fn anon_name(&self, template: &str, id: u32) -> String {
        let n = self.anon_base.wrapping_add(u64::from(id));
        template.replace("%d", &format!("{n:016x}"))
    }

    fn anon_set(&mut self, s: &AnonSet) -> Result<(), EncodeError> {
        let template = if s.flags & expr::SET_MAP != 0 {
            "__map%d"
        } else {
            "__set%d"
        };
        let name = self.anon_name(template, s.id);
        let m = self.begin(kind::NEWSET, kind::F_CREATE);
        self.w.str(attr::SET_TABLE, TABLE)?;
        self.w.str(attr::SET_NAME, &name)?;
        self.w.u32_be(attr::SET_FLAGS, s.flags)?;
        self.w.u32_be(attr::SET_KEY_TYPE, s.key_type)?;
        self.w.u32_be(attr::SET_KEY_LEN, s.key_len)?;
        if s.flags & expr::SET_MAP != 0 {
            self.w.u32_be(attr::SET_DATA_TYPE, DATA_VERDICT)?;
            self.w.u32_be(attr::SET_DATA_LEN, 0)?;
        }
        self.w.u32_be(attr::SET_ID, s.id)?;
        let d = self.w.nest(attr::SET_DESC);
        self.w.u32_be(attr::SET_DESC_SIZE, s.elements.len() as u32)?;
        self.w.nest_end(d)?;
        self.w.attr(attr::SET_USERDATA, &s.udata)?;
        self.w.end(m);

        // By batch id alone: with a name the kernel would first walk the table's sets for it.
        let m = self.begin(kind::NEWSETELEM, kind::F_CREATE);
        self.w.str(attr::ELEM_LIST_TABLE, TABLE)?;
        self.w.u32_be(attr::ELEM_LIST_SET_ID, s.id)?;
        let list = self.w.nest(attr::ELEM_LIST_ELEMENTS);
        for e in &s.elements {
            let udata = if e.open {
                let mut u = Udata::default();
                u.put_u32(ELEM_UDATA_FLAGS, ELEM_INTERVAL_OPEN)?;
                Some(u)
            } else {
                None
            };
            self.element(&e.key, e.interval_end, e.verdict.as_ref(), udata)?;
        }
        self.w.nest_end(list)?;
        self.w.end(m);
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<(), EncodeError> {
        super::encode_expr::write(self.w, e)
    }
}
