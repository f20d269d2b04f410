//! [`Expr`] -> the attributes of one `NFTA_LIST_ELEM` of a rule's expression list.

use super::EncodeError;
use super::expr::{Expr, Verdict};
use super::msg::Writer;

const EXPR_NAME: u16 = 1;
const EXPR_DATA: u16 = 2;
const DATA_VALUE: u16 = 1;
const DATA_VERDICT: u16 = 2;
/// The one register svcnet's matches use, and NFT_REG_VERDICT.
const REG_1: u32 = 1;
const REG_VERDICT: u32 = 0;
/// NF_NAT_RANGE_PROTO_SPECIFIED: the DNAT target has a port.
const NAT_PROTO_SPECIFIED: u32 = 0x2;
const NAT_DNAT: u32 = 1;
const FIB_RESULT_ADDRTYPE: u32 = 3;
const NUMGEN_RANDOM: u32 = 1;
const DYNSET_UPDATE: u32 = 1;
const LOOKUP_INVERT: u32 = 1;

pub(super) fn write(w: &mut Writer, e: &Expr) -> Result<(), EncodeError> {
    let el = w.nest(1); // NFTA_LIST_ELEM
    w.str(EXPR_NAME, name(e))?;
    let data = w.nest(EXPR_DATA);
    match e {
        Expr::Payload { .. }
        | Expr::Meta { .. }
        | Expr::MetaSet { .. }
        | Expr::CtState
        | Expr::Ct { .. }
        | Expr::Hton { .. }
        | Expr::Cmp { .. }
        | Expr::Bitwise { .. }
        | Expr::Lookup { .. } => matches(w, e)?,
        _ => actions(w, e)?,
    }
    w.nest_end(data)?;
    w.nest_end(el)
}

fn name(e: &Expr) -> &'static str {
    match e {
        Expr::Payload { .. } => "payload",
        Expr::Meta { .. } | Expr::MetaSet { .. } => "meta",
        Expr::CtState | Expr::Ct { .. } => "ct",
        Expr::Hton { .. } => "byteorder",
        Expr::Cmp { .. } => "cmp",
        Expr::Bitwise { .. } => "bitwise",
        Expr::Lookup { .. } => "lookup",
        Expr::Immediate { .. } | Expr::Verdict(_) => "immediate",
        Expr::Reject { .. } => "reject",
        Expr::Fib { .. } => "fib",
        Expr::Numgen { .. } => "numgen",
        Expr::Dynset { .. } => "dynset",
        Expr::Dnat { .. } => "nat",
        Expr::Masq { .. } => "masq",
    }
}

/// `NFTA_DATA_VALUE` nested in attribute `ty`.
fn value(w: &mut Writer, ty: u16, data: &[u8]) -> Result<(), EncodeError> {
    let n = w.nest(ty);
    w.attr(DATA_VALUE, data)?;
    w.nest_end(n)
}

/// A verdict as `NFTA_DATA_VERDICT` (code, and chain for a jump or goto).
pub(super) fn verdict(w: &mut Writer, v: &Verdict) -> Result<(), EncodeError> {
    let n = w.nest(DATA_VERDICT);
    w.attr(1, &v.code().to_be_bytes())?;
    if let Some(c) = v.chain() {
        w.str(2, c)?;
    }
    w.nest_end(n)
}

/// The data of a load, comparison or lookup.
fn matches(w: &mut Writer, e: &Expr) -> Result<(), EncodeError> {
    match e {
        Expr::Payload {
            base,
            offset,
            len,
            dreg,
        } => {
            w.u32_be(1, *dreg)?;
            w.u32_be(2, *base)?;
            w.u32_be(3, *offset)?;
            w.u32_be(4, *len)?;
        }
        Expr::Meta { key, dreg } => {
            w.u32_be(2, *key)?;
            w.u32_be(1, *dreg)?;
        }
        Expr::MetaSet { key } => {
            w.u32_be(2, *key)?;
            w.u32_be(3, REG_1)?;
        }
        Expr::CtState => {
            w.u32_be(2, 0)?; // NFT_CT_STATE
            w.u32_be(1, REG_1)?;
        }
        Expr::Ct { key, dreg, original } => {
            w.u32_be(2, *key)?;
            w.u32_be(1, *dreg)?;
            if *original {
                w.attr(3, &[0])?; // IP_CT_DIR_ORIGINAL
            }
        }
        Expr::Hton { reg, len, size } => {
            w.u32_be(1, *reg)?;
            w.u32_be(2, *reg)?;
            w.u32_be(3, 1)?; // NFT_BYTEORDER_HTON
            w.u32_be(4, *len)?;
            w.u32_be(5, *size)?;
        }
        Expr::Cmp { op, data } => {
            w.u32_be(1, REG_1)?;
            w.u32_be(2, *op)?;
            value(w, 3, data)?;
        }
        Expr::Bitwise { mask, xor } => {
            w.u32_be(1, REG_1)?;
            w.u32_be(2, REG_1)?;
            w.u32_be(3, mask.len() as u32)?;
            value(w, 4, mask)?;
            value(w, 5, xor)?;
        }
        Expr::Lookup {
            set,
            anon,
            dreg,
            invert,
        } => {
            w.u32_be(2, REG_1)?;
            if let Some(d) = dreg {
                w.u32_be(3, *d)?;
            }
            w.str(1, set)?;
            if let Some(id) = anon {
                w.u32_be(4, *id)?;
            }
            if *invert {
                w.u32_be(5, LOOKUP_INVERT)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The data of an immediate, verdict or acting expression.
fn actions(w: &mut Writer, e: &Expr) -> Result<(), EncodeError> {
    match e {
        Expr::Immediate { dreg, value: v } => {
            w.u32_be(1, *dreg)?;
            value(w, 2, v)?;
        }
        Expr::Verdict(v) => {
            w.u32_be(1, REG_VERDICT)?;
            let d = w.nest(2);
            verdict(w, v)?;
            w.nest_end(d)?;
        }
        Expr::Reject { icmp_code } => {
            w.u32_be(1, 0)?; // NFT_REJECT_ICMP_UNREACH
            w.attr(2, &[*icmp_code])?;
        }
        Expr::Fib { flags } => {
            w.u32_be(3, *flags)?;
            w.u32_be(2, FIB_RESULT_ADDRTYPE)?;
            w.u32_be(1, REG_1)?;
        }
        Expr::Numgen { modulus, dreg } => {
            w.u32_be(1, *dreg)?;
            w.u32_be(2, *modulus)?;
            w.u32_be(3, NUMGEN_RANDOM)?;
            w.u32_be(4, 0)?;
        }
        Expr::Dynset {
            set,
            data,
            timeout_ms,
        } => {
            w.u32_be(4, REG_1)?;
            if let Some(d) = data {
                w.u32_be(5, *d)?;
            }
            w.u32_be(3, DYNSET_UPDATE)?;
            if let Some(t) = timeout_ms {
                w.attr(6, &t.to_be_bytes())?;
            }
            w.str(1, set)?;
        }
        Expr::Dnat {
            family,
            proto_reg,
            flags,
        } => {
            w.u32_be(1, NAT_DNAT)?;
            w.u32_be(2, *family)?;
            w.u32_be(3, REG_1)?;
            w.u32_be(5, *proto_reg)?;
            if *flags {
                w.u32_be(7, NAT_PROTO_SPECIFIED)?;
            }
        }
        Expr::Masq { flags } => {
            w.u32_be(1, *flags)?;
        }
        _ => {}
    }
    Ok(())
}
