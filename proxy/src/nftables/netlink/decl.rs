//! The maps layout's set and map declarations (`type ipv4_addr . inet_proto . inet_service`,
//! `typeof ip daddr . meta l4proto . th dport . numgen random mod 2 : ip daddr . th dport`) as the
//! NEWSET attributes nft 1.0.6 sends: datatype ids, lengths, flags, the field lengths of an interval
//! concatenation, and nft's user data, where a `typeof` declaration keeps its expressions (so `nft
//! list` prints `typeof` again): per part the expression type and its own fields (payload: protocol
//! and field; meta: key; numgen: mode, modulus, offset), nested as libnftnl's udata.

use super::EncodeError;
use super::compile::{KeyPart, key_part};
use super::expr::{SET_INTERVAL, SET_MAP, TYPE_INTEGER, TYPE_IPV4, TYPE_IPV6, TYPE_PROTO, TYPE_SERVICE};
use super::objects::DATA_VERDICT;
use super::set_type::SetType;
use crate::model::Family;
use crate::nftables::render::Set;
use crate::nftables::render::maps::MapsSet;

const SET_TIMEOUT: u32 = 0x10;
const SET_EVAL: u32 = 0x20;
const SET_CONCAT: u32 = 0x80;
/// nft's expression types in a `typeof` (enum expr_types).
const EXPR_PAYLOAD: u32 = 7;
const EXPR_META: u32 = 9;
const EXPR_CONCAT: u32 = 13;
const EXPR_NUMGEN: u32 = 23;
/// Set user data types (libnftnl's NFTNL_UDATA_SET_*).
const UD_KEY_BYTEORDER: u8 = 0;
const UD_DATA_BYTEORDER: u8 = 1;
const UD_KEY_TYPEOF: u8 = 3;
const UD_DATA_TYPEOF: u8 = 4;
const UD_DATA_INTERVAL: u8 = 6;
const BYTEORDER_BIG: u32 = 2;

/// One part of a declared key or data: its datatype, length and (for `typeof`) expression.
#[derive(Clone, Copy, Debug)]
struct Field {
    ty: u32,
    len: u32,
    expr: Option<KeyPart>,
}

/// What a NEWSET message of the declaration carries.
#[derive(Clone, Debug)]
pub(super) struct Decl {
    pub flags: u32,
    pub key_type: u32,
    pub key_len: u32,
    pub data: Option<(u32, u32)>,
    /// Field lengths of an interval concatenation (NFTA_SET_DESC_CONCAT).
    pub concat_fields: Vec<u32>,
    pub udata: Vec<u8>,
}

fn fields(text: &str, family: Family, typeof_: bool) -> Option<Vec<Field>> {
    let ip = match family {
        Family::V4 => "ip",
        Family::V6 => "ip6",
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for part in words.split(|w| *w == ".") {
        let field = if typeof_ {
            let (p, n) = key_part(part, ip)?;
            if n != part.len() {
                return None;
            }
            let ty = match p {
                KeyPart::Daddr | KeyPart::Saddr if family == Family::V4 => TYPE_IPV4,
                KeyPart::Daddr | KeyPart::Saddr => TYPE_IPV6,
                KeyPart::L4proto => TYPE_PROTO,
                KeyPart::Dport => TYPE_SERVICE,
                KeyPart::Numgen(_) => TYPE_INTEGER,
                _ => return None,
            };
            Field {
                ty,
                len: p.len(family),
                expr: Some(p),
            }
        } else {
            let (ty, len) = match part {
                ["ipv4_addr"] if family == Family::V4 => (TYPE_IPV4, 4),
                ["ipv6_addr"] if family == Family::V6 => (TYPE_IPV6, 16),
                ["inet_proto"] => (TYPE_PROTO, 1),
                ["inet_service"] => (TYPE_SERVICE, 2),
                _ => return None,
            };
            Field { ty, len, expr: None }
        };
        out.push(field);
    }
    Some(out)
}

fn type_id(f: &[Field]) -> u32 {
    f.iter().fold(0, |acc, x| (acc << 6) | x.ty)
}

fn total_len(f: &[Field]) -> u32 {
    match f.len() {
        1 => f.iter().map(|x| x.len).sum(),
        _ => f.iter().map(|x| x.len.div_ceil(4) * 4).sum(),
    }
}

impl Decl {
    pub(super) fn parse(set: &MapsSet, family: Family) -> Result<Decl, EncodeError> {
        let bad = || EncodeError::SetType(set.name.clone(), set.decl.clone());
        let (typeof_, body) = match (set.decl.strip_prefix("typeof "), set.decl.strip_prefix("type ")) {
            (Some(b), _) => (true, b),
            (None, Some(b)) => (false, b),
            _ => return Err(bad()),
        };
        let (key, data) = match body.split_once(" : ") {
            Some((k, d)) => (k, Some(d)),
            None => (body, None),
        };
        let key = fields(key, family, typeof_).ok_or_else(bad)?;
        if data == Some("verdict") && !typeof_ && set.is_map && set.flags.is_empty() {
            return verdict_map(set);
        }
        let data = data
            .map(|d| fields(d, family, typeof_).ok_or_else(bad))
            .transpose()?;
        if data.is_some() != set.is_map || data.as_ref().is_some_and(|d| d.len() < 2) {
            return Err(bad());
        }
        let mut flags = if set.is_map { SET_MAP } else { 0 };
        for f in &set.flags {
            flags |= match *f {
                "interval" => SET_INTERVAL,
                "dynamic" => SET_EVAL,
                "timeout" => SET_TIMEOUT,
                other => return Err(EncodeError::SetType(set.name.clone(), format!("flag {other}"))),
            };
        }
        let concat_fields = match (flags & SET_INTERVAL != 0, key.len() > 1) {
            (true, true) => {
                flags |= SET_CONCAT;
                key.iter().map(|f| f.len).collect()
            }
            _ => Vec::new(),
        };
        Ok(Decl {
            flags,
            key_type: type_id(&key),
            key_len: total_len(&key),
            data: data.as_ref().map(|d| (type_id(d), total_len(d))),
            concat_fields,
            udata: udata(&key, data.as_deref()).ok_or_else(bad)?,
        })
    }
}

/// sizeof(struct nft_verdict).
const VERDICT_LEN: u32 = 16;

/// A `type KEY : verdict` map without flags (the affinity ports' verdict maps), declared as the
/// upstream layout's verdict maps are ([`SetType`]).
fn verdict_map(set: &MapsSet) -> Result<Decl, EncodeError> {
    let ty = SetType::parse(&Set {
        name: set.name.clone(),
        is_map: true,
        type_: set.decl.trim_start_matches("type ").to_string(),
        flags: Vec::new(),
        timeout: None,
        comment: None,
    })?;
    Ok(Decl {
        flags: SET_MAP,
        key_type: ty.type_id(),
        key_len: ty.key_len(),
        // The kernel takes a verdict's own length whatever is sent, and lists that.
        data: Some((DATA_VERDICT, VERDICT_LEN)),
        concat_fields: Vec::new(),
        udata: ty.udata(None)?,
    })
}

fn tlv(out: &mut Vec<u8>, ty: u8, value: &[u8]) -> Option<()> {
    out.push(ty);
    out.push(u8::try_from(value.len()).ok()?);
    out.extend_from_slice(value);
    Some(())
}

fn tlv_u32(out: &mut Vec<u8>, ty: u8, v: u32) -> Option<()> {
    tlv(out, ty, &v.to_ne_bytes())
}

/// One `typeof` expression's type and fields.
fn expr_udata(p: KeyPart) -> Option<(u32, Vec<u8>)> {
    let mut d = Vec::new();
    let ty = match p {
        KeyPart::Dport => {
            // Protocol `th` (11), field dport (2).
            tlv_u32(&mut d, 0, 11)?;
            tlv_u32(&mut d, 1, 2)?;
            EXPR_PAYLOAD
        }
        KeyPart::L4proto => {
            tlv_u32(&mut d, 0, 16)?;
            EXPR_META
        }
        KeyPart::Numgen(modulus) => {
            tlv_u32(&mut d, 0, 1)?;
            tlv_u32(&mut d, 1, modulus)?;
            tlv_u32(&mut d, 2, 0)?;
            EXPR_NUMGEN
        }
        _ => return None,
    };
    Some((ty, d))
}

/// A payload address field's udata (ip: protocol 12, saddr 11 / daddr 12; ip6: 13, 8 / 9).
fn addr_udata(p: KeyPart, len: u32) -> Option<(u32, Vec<u8>)> {
    let (desc, field) = match (len, p) {
        (4, KeyPart::Saddr) => (12, 11),
        (4, KeyPart::Daddr) => (12, 12),
        (16, KeyPart::Saddr) => (13, 8),
        (16, KeyPart::Daddr) => (13, 9),
        _ => return expr_udata(p),
    };
    let mut d = Vec::new();
    tlv_u32(&mut d, 0, desc)?;
    tlv_u32(&mut d, 1, field)?;
    Some((EXPR_PAYLOAD, d))
}

/// A concatenation's `typeof`: each part nested under its index, its type and its fields.
fn concat_typeof(out: &mut Vec<u8>, ty: u8, fields: &[Field]) -> Option<()> {
    let mut parts = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        if let Some(p) = f.expr {
            let (ety, data) = addr_udata(p, f.len)?;
            let mut nest = Vec::new();
            tlv_u32(&mut nest, 0, ety)?;
            tlv(&mut nest, 1, &data)?;
            tlv(&mut parts, u8::try_from(i).ok()?, &nest)?;
        }
    }
    let mut v = Vec::new();
    tlv_u32(&mut v, 0, EXPR_CONCAT)?;
    tlv(&mut v, 1, &parts)?;
    tlv(out, ty, &v)
}

/// The set's user data as nft writes it.
fn udata(key: &[Field], data: Option<&[Field]>) -> Option<Vec<u8>> {
    let mut u = Vec::new();
    let concat = key.len() > 1;
    tlv_u32(&mut u, UD_KEY_BYTEORDER, if concat { 0 } else { BYTEORDER_BIG })?;
    if data.is_some() {
        tlv_u32(&mut u, UD_DATA_BYTEORDER, 0)?;
    }
    if concat {
        concat_typeof(&mut u, UD_KEY_TYPEOF, key)?;
    } else if let [
        Field {
            expr: Some(p), len, ..
        },
    ] = key
    {
        // One expression: its type and fields, not nested in a concatenation.
        let (ety, data) = addr_udata(*p, *len)?;
        let mut v = Vec::new();
        tlv_u32(&mut v, 0, ety)?;
        tlv(&mut v, 1, &data)?;
        tlv(&mut u, UD_KEY_TYPEOF, &v)?;
    }
    if let Some(d) = data {
        if d.iter().any(|f| f.expr.is_some()) {
            concat_typeof(&mut u, UD_DATA_TYPEOF, d)?;
        }
        tlv_u32(&mut u, UD_DATA_INTERVAL, 0)?;
    }
    Some(u)
}
