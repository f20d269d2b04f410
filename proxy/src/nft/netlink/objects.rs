//! Tables, chains, sets, elements and rules as nf_tables messages (attribute numbers from
//! `linux/netfilter/nf_tables.h`), laid out as nft 1.0.x sends them.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::expr::{self, AnonSet, Compiled, Expr, Verdict};
use super::msg::{Udata, Writer};
use super::{EncodeError, kind, nfproto};
use crate::model::Family;
use crate::nft::naming::TABLE;
use crate::nft::{Chain, Element, Op, Rule, Set};

const TABLE_COMMENT: &str = "rules for kube-proxy";
/// The data type of verdict maps (NFT_DATA_VERDICT).
const DATA_VERDICT: u32 = 0xffff_ff00;
const SET_TIMEOUT: u32 = 0x10;
const SET_EVAL: u32 = 0x20;
const ELEM_INTERVAL_END: u32 = 0x1;
/// Element user data: flags, and the flag of an interval open to the end of the key space.
const ELEM_UDATA_FLAGS: u8 = 1;
const ELEM_INTERVAL_OPEN: u32 = 0x1;
/// Bits per type in a concatenation's type id.
const TYPE_BITS: u32 = 6;

/// A set's key (and whether it maps to verdicts), parsed from its nft type text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetType {
    /// (nft datatype id, length in bytes) of each key part.
    parts: Vec<(u32, u32)>,
    verdict_map: bool,
}

impl SetType {
    pub fn parse(set: &Set) -> Result<SetType, EncodeError> {
        let bad = || EncodeError::SetType(set.name.clone(), set.type_.clone());
        let (key, data) = match set.type_.split_once(':') {
            Some((k, d)) => (k, Some(d.trim())),
            None => (set.type_.as_str(), None),
        };
        let verdict_map = match data {
            None => false,
            Some("verdict") => true,
            Some(_) => return Err(bad()),
        };
        let parts = key
            .split('.')
            .map(|p| match p.trim() {
                "ipv4_addr" => Some((expr::TYPE_IPV4, 4)),
                "ipv6_addr" => Some((expr::TYPE_IPV6, 16)),
                "inet_proto" => Some((expr::TYPE_PROTO, 1)),
                "inet_service" => Some((expr::TYPE_SERVICE, 2)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad)?;
        if verdict_map != set.is_map {
            return Err(bad());
        }
        Ok(SetType { parts, verdict_map })
    }

    fn concat(&self) -> bool {
        self.parts.len() > 1
    }

    fn type_id(&self) -> u32 {
        self.parts.iter().fold(0, |acc, (t, _)| (acc << TYPE_BITS) | t)
    }

    fn key_len(&self) -> u32 {
        if self.concat() {
            self.parts.iter().map(|(_, l)| l.div_ceil(4) * 4).sum()
        } else {
            self.parts.iter().map(|(_, l)| l).sum()
        }
    }

    /// nft's user data for the set (how it prints the key), then the comment.
    fn udata(&self, comment: Option<&str>) -> Result<Vec<u8>, EncodeError> {
        let mut u = Udata::default();
        if self.concat() {
            // Mixed byte order; the data's typeof as nft records it for verdict maps.
            u.put_u32(0, 0)?;
            u.put_u32(1, 0)?;
            u.put(3, &[0, 4, 13, 0, 0, 0, 1, 0])?;
            u.put_u32(6, 0)?;
        } else {
            u.put_u32(0, 2)?; // big-endian key
        }
        if let Some(c) = comment {
            u.put_str(7, &crate::nft::comment_text(c))?;
        }
        Ok(u.0)
    }

    /// An element's key: each part parsed and, in a concatenation, padded to 4 bytes.
    fn key(&self, e: &Element) -> Result<Vec<u8>, EncodeError> {
        let bad = |why: String| EncodeError::Element(e.container.to_string(), why);
        if e.key.len() != self.parts.len() {
            return Err(bad(format!("key {:?} does not match the set's type", e.key)));
        }
        let mut out = Vec::new();
        for ((ty, len), text) in self.parts.iter().zip(&e.key) {
            let bytes = match *ty {
                expr::TYPE_IPV4 | expr::TYPE_IPV6 => match text.parse::<IpAddr>() {
                    Ok(IpAddr::V4(a)) if *ty == expr::TYPE_IPV4 => a.octets().to_vec(),
                    Ok(IpAddr::V6(a)) if *ty == expr::TYPE_IPV6 => a.octets().to_vec(),
                    _ => return Err(bad(format!("bad address {text:?}"))),
                },
                expr::TYPE_PROTO => {
                    vec![expr::proto_number(text).ok_or_else(|| bad(format!("bad protocol {text:?}")))?]
                }
                _ => text
                    .parse::<u16>()
                    .map_err(|_| bad(format!("bad port {text:?}")))?
                    .to_be_bytes()
                    .to_vec(),
            };
            debug_assert_eq!(bytes.len() as u32, *len);
            out.extend_from_slice(&bytes);
            if self.concat() {
                out.resize(out.len().div_ceil(4) * 4, 0);
            }
        }
        Ok(out)
    }
}

pub(super) struct Encoder<'a> {
    pub w: &'a mut Writer,
    pub family: Family,
    pub types: &'a BTreeMap<String, SetType>,
    pub next_set_id: u32,
    pub messages: usize,
    /// The op of each message written, in order.
    pub op_of: Vec<usize>,
    pub op_index: usize,
}

/// Attribute numbers.
mod attr {
    pub const TABLE_NAME: u16 = 1;
    pub const TABLE_FLAGS: u16 = 2;
    pub const TABLE_USERDATA: u16 = 6;
    pub const CHAIN_TABLE: u16 = 1;
    pub const CHAIN_HOOK: u16 = 4;
    pub const CHAIN_NAME: u16 = 3;
    pub const CHAIN_TYPE: u16 = 7;
    pub const CHAIN_USERDATA: u16 = 12;
    pub const HOOK_NUM: u16 = 1;
    pub const HOOK_PRIORITY: u16 = 2;
    pub const RULE_TABLE: u16 = 1;
    pub const RULE_CHAIN: u16 = 2;
    pub const RULE_EXPRESSIONS: u16 = 4;
    pub const RULE_USERDATA: u16 = 7;
    pub const SET_TABLE: u16 = 1;
    pub const SET_NAME: u16 = 2;
    pub const SET_FLAGS: u16 = 3;
    pub const SET_KEY_TYPE: u16 = 4;
    pub const SET_KEY_LEN: u16 = 5;
    pub const SET_DATA_TYPE: u16 = 6;
    pub const SET_DATA_LEN: u16 = 7;
    pub const SET_DESC: u16 = 9;
    pub const SET_DESC_SIZE: u16 = 1;
    pub const SET_ID: u16 = 10;
    pub const SET_TIMEOUT: u16 = 11;
    pub const SET_USERDATA: u16 = 13;
    pub const ELEM_LIST_TABLE: u16 = 1;
    pub const ELEM_LIST_SET: u16 = 2;
    pub const ELEM_LIST_ELEMENTS: u16 = 3;
    pub const ELEM_LIST_SET_ID: u16 = 4;
    pub const LIST_ELEM: u16 = 1;
    pub const ELEM_KEY: u16 = 1;
    pub const ELEM_DATA: u16 = 2;
    pub const ELEM_FLAGS: u16 = 3;
    pub const ELEM_USERDATA: u16 = 6;
    pub const DATA_VALUE: u16 = 1;
    pub const DATA_VERDICT: u16 = 2;
    pub const VERDICT_CODE: u16 = 1;
    pub const VERDICT_CHAIN: u16 = 2;
}

/// Element lists are split so each message's nested attribute stays under netlink's 64 KiB.
const ELEMENTS_PER_MESSAGE: usize = 256;

impl Encoder<'_> {
    fn begin(&mut self, cmd: u16, flags: u16) -> usize {
        self.messages += 1;
        self.op_of.push(self.op_index);
        self.w
            .begin(kind::msg(cmd), kind::F_REQUEST | flags, nfproto(self.family), 0)
    }

    /// Encodes the first op (and the element ops of the same kind and set right after it, in one
    /// message); returns how many ops it took.
    pub fn ops(&mut self, ops: &[Op]) -> Result<usize, EncodeError> {
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
        let m = self.begin(cmd, flags);
        self.w.str(attr::TABLE_NAME, TABLE)?;
        if add {
            self.w.u32_be(attr::TABLE_FLAGS, 0)?;
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
            let u = Udata::comment(&crate::nft::comment_text(comment))?;
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
                .map(|c| Udata::comment(&crate::nft::comment_text(c)))
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

    fn rule(&mut self, chain: &str, rule: &Rule) -> Result<(), EncodeError> {
        let Compiled { sets, exprs } = expr::compile(&rule.text, self.family, &mut self.next_set_id)?;
        for s in &sets {
            self.anon_set(s)?;
        }
        let m = self.begin(kind::NEWRULE, kind::F_CREATE | kind::F_APPEND);
        self.w.str(attr::RULE_TABLE, TABLE)?;
        self.w.str(attr::RULE_CHAIN, chain)?;
        let list = self.w.nest(attr::RULE_EXPRESSIONS);
        for e in &exprs {
            self.expr(e)?;
        }
        self.w.nest_end(list)?;
        if let Some(comment) = &rule.comment {
            let u = Udata::comment(&crate::nft::comment_text(comment))?;
            self.w.attr(attr::RULE_USERDATA, &u.0)?;
        }
        self.w.end(m);
        Ok(())
    }

    fn anon_set(&mut self, s: &AnonSet) -> Result<(), EncodeError> {
        let name = if s.flags & expr::SET_MAP != 0 {
            "__map%d"
        } else {
            "__set%d"
        };
        let m = self.begin(kind::NEWSET, kind::F_CREATE);
        self.w.str(attr::SET_TABLE, TABLE)?;
        self.w.str(attr::SET_NAME, name)?;
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

        let m = self.begin(kind::NEWSETELEM, kind::F_CREATE);
        self.w.str(attr::ELEM_LIST_TABLE, TABLE)?;
        self.w.str(attr::ELEM_LIST_SET, name)?;
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
