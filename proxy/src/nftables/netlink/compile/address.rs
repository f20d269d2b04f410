//! Address matches (`ip saddr 10.0.0.0/8`, `ip daddr != { a, b }`, `@set`) and key
//! concatenations (`ip daddr . meta l4proto . th dport vmap @map`), as nft encodes them: prefix
//! trimming, masks, interval sets and nft's register numbering.

use std::net::IpAddr;

use super::super::expr::*;
use super::{Parser, daddr, saddr};
use crate::model::Family;

impl Parser<'_> {
    /// After `ip`/`ip6`: `saddr|daddr`, then a comparison, a set, or the start of a concatenation.
    pub(super) fn address_match(&mut self) -> Result<(), String> {
        let field = self.next()?;
        let load: fn(u32, Family) -> Expr = match field.as_str() {
            "saddr" => saddr,
            "daddr" => daddr,
            f => return Err(format!("unsupported field {f:?}")),
        };
        if self.peek() == Some(".") {
            self.pos -= 2;
            return self.concat_lookup();
        }
        let invert = if self.peek() == Some("!=") {
            self.pos += 1;
            true
        } else {
            false
        };
        let rhs = self.next()?;
        if let Some(set) = rhs.strip_prefix('@') {
            self.push(load(1, self.family));
            self.push(Expr::Lookup {
                set: set.to_string(),
                anon: None,
                dreg: None,
                invert,
            });
            return Ok(());
        }
        if rhs == "{" {
            let mut ranges = Vec::new();
            loop {
                let t = self.next()?;
                match t.as_str() {
                    "}" => break,
                    "," => continue,
                    _ => ranges.push(self.prefix(&t)?),
                }
            }
            return self.address_set(load, &field, ranges, invert);
        }
        let (addr, bits) = self.prefix(&rhs)?;
        self.prefix_match(load, &addr, bits, invert);
        Ok(())
    }

    /// An address or CIDR of the table's family: its bytes and prefix length.
    pub(super) fn prefix(&self, text: &str) -> Result<(Vec<u8>, u32), String> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| format!("bad address {text:?}"))?;
        let bytes = match (ip, self.family) {
            (IpAddr::V4(v4), Family::V4) => v4.octets().to_vec(),
            (IpAddr::V6(v6), Family::V6) => v6.octets().to_vec(),
            _ => return Err(format!("{text:?} is not of the table's family")),
        };
        let max = bytes.len() as u32 * 8;
        let bits = match bits {
            None => max,
            Some(b) => b
                .parse::<u32>()
                .ok()
                .filter(|b| *b <= max)
                .ok_or_else(|| format!("bad prefix {text:?}"))?,
        };
        Ok((bytes, bits))
    }

    /// `ip saddr 10.0.0.0/8` as nft writes it: a whole-byte prefix loads only those bytes, any
    /// other prefix loads the address and masks it.
    fn prefix_match(&mut self, load: fn(u32, Family) -> Expr, addr: &[u8], bits: u32, invert: bool) {
        let op = if invert { NEQ } else { EQ };
        let full = addr.len() as u32 * 8;
        let mut l = load(1, self.family);
        if bits == full {
            self.push(l);
            self.push(Expr::Cmp {
                op,
                data: addr.to_vec(),
            });
        } else if bits.is_multiple_of(8) && bits > 0 {
            if let Expr::Payload { len, .. } = &mut l {
                *len = bits / 8;
            }
            self.push(l);
            self.push(Expr::Cmp {
                op,
                data: addr[..(bits / 8) as usize].to_vec(),
            });
        } else {
            let mask = mask_bytes(addr.len(), bits);
            let masked: Vec<u8> = addr.iter().zip(&mask).map(|(a, m)| a & m).collect();
            self.push(l);
            self.push(Expr::Bitwise {
                mask,
                xor: vec![0; addr.len()],
            });
            self.push(Expr::Cmp { op, data: masked });
        }
    }

    /// `ip saddr != { a, b/n }`: one element is a plain comparison (as nft optimises it); more
    /// become an anonymous interval set.
    fn address_set(
        &mut self,
        load: fn(u32, Family) -> Expr,
        field: &str,
        ranges: Vec<(Vec<u8>, u32)>,
        invert: bool,
    ) -> Result<(), String> {
        if ranges.len() == 1
            && let Some((addr, bits)) = ranges.first()
        {
            self.prefix_match(load, addr, *bits, invert);
            return Ok(());
        }
        let elements = interval_elements(&ranges);
        let id = self.new_id();
        let (key_type, key_len) = match self.family {
            Family::V4 => (TYPE_IPV4, 4),
            Family::V6 => (TYPE_IPV6, 16),
        };
        self.out.sets.push(AnonSet {
            id,
            flags: SET_ANONYMOUS | SET_CONSTANT | SET_INTERVAL,
            key_type,
            key_len,
            udata: address_set_udata(self.family, field == "saddr"),
            elements,
        });
        self.push(load(1, self.family));
        self.push(Expr::Lookup {
            set: "__set%d".into(),
            anon: Some(id),
            dreg: None,
            invert,
        });
        Ok(())
    }
}

fn mask_bytes(len: usize, bits: u32) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let start = i as u32 * 8;
            match bits.saturating_sub(start) {
                0 => 0,
                n if n >= 8 => 0xff,
                n => 0xffu8 << (8 - n),
            }
        })
        .collect()
}

/// Ranges -> the elements of an interval set as nft sends them: merged ranges in order, each a start
/// and an exclusive end (flagged), and a leading end at address zero when the first range does not
/// start there.
fn interval_elements(ranges: &[(Vec<u8>, u32)]) -> Vec<AnonElement> {
    let mut spans: Vec<(u128, u128)> = ranges
        .iter()
        .map(|(addr, bits)| {
            let width = addr.len() as u32 * 8;
            let value = addr.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b));
            let host = width - bits;
            let low = if host >= 128 { 0 } else { (value >> host) << host };
            let high = if host >= 128 {
                u128::MAX
            } else {
                low | ((1u128 << host) - 1)
            };
            (low, high)
        })
        .collect();
    spans.sort();
    let mut merged: Vec<(u128, u128)> = Vec::new();
    for (lo, hi) in spans {
        match merged.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    let len = ranges.first().map_or(4, |(a, _)| a.len());
    let max = if len == 16 {
        u128::MAX
    } else {
        (1u128 << (len * 8)) - 1
    };
    let bytes = |v: u128| v.to_be_bytes()[16 - len..].to_vec();
    let mut out = Vec::new();
    if merged.first().is_some_and(|(lo, _)| *lo != 0) {
        out.push(AnonElement {
            key: bytes(0),
            interval_end: true,
            open: false,
            verdict: None,
        });
    }
    for (lo, hi) in merged {
        out.push(AnonElement {
            key: bytes(lo),
            interval_end: false,
            open: hi == max,
            verdict: None,
        });
        if hi != max {
            out.push(AnonElement {
                key: bytes(hi + 1),
                interval_end: true,
                open: false,
                verdict: None,
            });
        }
    }
    out
}

/// nft's user data of an anonymous address interval set: big-endian key, merged elements, and the
/// key's `typeof` (payload of the ip/ip6 header field).
fn address_set_udata(family: Family, source: bool) -> Vec<u8> {
    let (proto, field): (u8, u8) = match (family, source) {
        (Family::V4, true) => (12, 11),
        (Family::V4, false) => (12, 12),
        (Family::V6, true) => (13, 8),
        (Family::V6, false) => (13, 9),
    };
    let mut u = vec![
        0, 4, 2, 0, 0, 0, 2, 4, 1, 0, 0, 0, 3, 20, 0, 4, 7, 0, 0, 0, 1, 12, 0, 4,
    ];
    u.extend_from_slice(&[proto, 0, 0, 0, 1, 4, field, 0, 0, 0]);
    u
}
