//! Key concatenations (`ip daddr . meta l4proto . th dport`, `ct original ip daddr . ct original
//! protocol . ct original proto-dst`, `... . numgen random mod N`) and what reads them: a lookup in a
//! set (`@set`, `!= @set`), a verdict map (`vmap @map`), a data map feeding a DNAT (`dnat ip to KEY
//! map @map`) and a dynamic map's `update`. Registers as nft 1.0.6 allocates them: a key from
//! register 1, each part in the next 32-bit units, a dynset's data in the next 128-bit register after
//! the key, a map's data back into register 1.

use super::super::expr::*;
use super::{Parser, daddr, l4proto, parse_u32, register, saddr, th_dport};
use crate::model::Family;

/// One part of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::nftables::netlink) enum KeyPart {
    Daddr,
    Saddr,
    L4proto,
    /// `th dport`, and `tcp dport` / `udp dport` / `sctp dport` (the same load).
    Dport,
    CtDaddr,
    CtProto,
    CtProtoDst,
    Numgen(u32),
}

impl KeyPart {
    /// Bytes of the part's value.
    pub(in crate::nftables::netlink) fn len(self, family: Family) -> u32 {
        match self {
            KeyPart::Daddr | KeyPart::Saddr | KeyPart::CtDaddr => match family {
                Family::V4 => 4,
                Family::V6 => 16,
            },
            KeyPart::L4proto | KeyPart::CtProto => 1,
            KeyPart::Dport | KeyPart::CtProtoDst => 2,
            KeyPart::Numgen(_) => 4,
        }
    }

    fn load(self, dreg: u32, family: Family) -> Expr {
        let ct = |key| Expr::Ct {
            key,
            dreg,
            original: true,
        };
        match self {
            KeyPart::Daddr => daddr(dreg, family),
            KeyPart::Saddr => saddr(dreg, family),
            KeyPart::L4proto => l4proto(dreg, family),
            KeyPart::Dport => th_dport(dreg, family),
            KeyPart::CtDaddr => ct(match family {
                Family::V4 => CT_DST_IP,
                Family::V6 => CT_DST_IP6,
            }),
            KeyPart::CtProto => ct(CT_PROTOCOL),
            KeyPart::CtProtoDst => ct(CT_PROTO_DST),
            KeyPart::Numgen(modulus) => Expr::Numgen { modulus, dreg },
        }
    }
}

/// 32-bit register units a key takes.
fn units(parts: &[KeyPart], family: Family) -> u32 {
    parts.iter().map(|p| p.len(family).div_ceil(4)).sum()
}

/// The register unit of a dynset's data after a key of `key` units: the next 128-bit register, as
/// nft places it, when the data fits there; else the next 32-bit unit. nft 1.0.6 knows only the
/// first and aborts on an IPv6 client . address . protocol . port key with address . port data (10 +
/// 5 units: 12 + 5 would pass the kernel's 16), which fits the kernel's registers the second way.
fn data_unit(key: u32, data: u32) -> u32 {
    let aligned = key.div_ceil(4) * 4;
    if aligned + data <= REGISTER_UNITS {
        aligned
    } else {
        key
    }
}

/// The kernel's data registers, in 32-bit units (`NFT_REG32_00` to `NFT_REG32_15`).
const REGISTER_UNITS: u32 = 16;

/// Parses one key part from `words` (the family word given), or `None`.
pub(in crate::nftables::netlink) fn key_part(words: &[&str], ip: &str) -> Option<(KeyPart, usize)> {
    let part = match words {
        [f, "daddr", ..] if *f == ip => (KeyPart::Daddr, 2),
        [f, "saddr", ..] if *f == ip => (KeyPart::Saddr, 2),
        ["meta", "l4proto", ..] => (KeyPart::L4proto, 2),
        ["th" | "tcp" | "udp" | "sctp", "dport", ..] => (KeyPart::Dport, 2),
        ["ct", "original", f, "daddr", ..] if *f == ip => (KeyPart::CtDaddr, 4),
        ["ct", "original", "protocol", ..] => (KeyPart::CtProto, 3),
        ["ct", "original", "proto-dst", ..] => (KeyPart::CtProtoDst, 3),
        ["numgen", "random", "mod", n, ..] => (KeyPart::Numgen(parse_u32(n).ok()?), 4),
        _ => return None,
    };
    Some(part)
}

impl Parser<'_> {
    /// `a . b . c`, from the current word.
    fn key(&mut self) -> Result<Vec<KeyPart>, String> {
        let ip = self.family_word();
        let mut parts = Vec::new();
        loop {
            let words: Vec<&str> = self.tokens[self.pos..].iter().map(String::as_str).collect();
            let (part, n) =
                key_part(&words, ip).ok_or_else(|| format!("unsupported key part at {:?}", words.first()))?;
            parts.push(part);
            self.pos += n;
            if self.peek() == Some(".") {
                self.pos += 1;
            } else {
                return Ok(parts);
            }
        }
    }

    /// Loads `parts` from register unit `first`; `hton`: convert host-order parts (an interval
    /// concatenation's key, as nft does).
    fn load_key(&mut self, parts: &[KeyPart], first: u32, hton: bool) {
        let mut unit = first;
        for p in parts {
            let reg = register(unit);
            self.push(p.load(reg, self.family));
            if hton && *p == KeyPart::L4proto {
                self.push(Expr::Hton { reg, len: 1, size: 2 });
            }
            unit += p.len(self.family).div_ceil(4);
        }
    }

    /// A concatenation from the current word and what reads it: `vmap @map`, `@set`, `!= @set`.
    pub(super) fn concat_lookup(&mut self) -> Result<(), String> {
        let parts = self.key()?;
        let (invert, verdict) = match self.peek() {
            Some("vmap") => (false, true),
            Some("!=") => (true, false),
            _ => (false, false),
        };
        if invert || verdict {
            self.pos += 1;
        }
        let set = self.next()?;
        let set = set
            .strip_prefix('@')
            .ok_or_else(|| format!("{set:?}: only named sets are supported"))?
            .to_string();
        let interval = self.intervals.contains(&set);
        self.load_key(&parts, 0, interval);
        self.push(Expr::Lookup {
            set,
            anon: None,
            dreg: verdict.then_some(0),
            invert,
        });
        Ok(())
    }

    /// After `dnat`: `ip to KEY map @map` (the map's data is address . port).
    pub(super) fn dnat_map(&mut self) -> Result<(), String> {
        let fam = self.next()?;
        if fam != self.family_word() {
            return Err(format!("dnat {fam} in a {} table", self.family_word()));
        }
        self.expect("to")?;
        let parts = self.key()?;
        self.expect("map")?;
        let map = self.named()?;
        self.load_key(&parts, 0, false);
        self.push(Expr::Lookup {
            set: map,
            anon: None,
            dreg: Some(1),
            invert: false,
        });
        let addr_units = self.addr_len().div_ceil(4);
        self.push(Expr::Dnat {
            family: u32::from(super::super::nfproto(self.family)),
            proto_reg: register(addr_units),
            flags: false,
        });
        Ok(())
    }

    /// After `update @map {`: `KEY timeout Ns : DATA }`.
    pub(super) fn update_map(&mut self, map: String) -> Result<(), String> {
        let key = self.key()?;
        let mut timeout_ms = None;
        if self.peek() == Some("timeout") {
            self.pos += 1;
            let t = self.next()?;
            let secs = t
                .strip_suffix('s')
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| format!("bad timeout {t:?}"))?;
            timeout_ms = Some(secs * 1000);
        }
        self.expect(":")?;
        let data = self.key()?;
        self.expect("}")?;
        let data_unit = data_unit(units(&key, self.family), units(&data, self.family));
        self.load_key(&key, 0, false);
        self.load_key(&data, data_unit, false);
        self.push(Expr::Dynset {
            set: map,
            data: Some(register(data_unit)),
            timeout_ms,
        });
        Ok(())
    }

    /// `@name` -> `name`.
    fn named(&mut self) -> Result<String, String> {
        let t = self.next()?;
        t.strip_prefix('@')
            .map(str::to_string)
            .ok_or_else(|| format!("{t:?}: only named maps are supported"))
    }

    /// After `ct`: `state new`, `status dnat`, `original protocol P`, or a key from `ct original`.
    pub(super) fn ct(&mut self) -> Result<(), String> {
        match self.peek() {
            Some("state") => return self.ct_state(),
            Some("status") => {
                self.pos += 1;
                self.expect("dnat")?;
                self.push(Expr::Ct {
                    key: CT_STATUS,
                    dreg: 1,
                    original: false,
                });
                self.push(Expr::Bitwise {
                    mask: CT_STATUS_DNAT.to_ne_bytes().to_vec(),
                    xor: vec![0; 4],
                });
                self.push(Expr::Cmp {
                    op: NEQ,
                    data: vec![0; 4],
                });
                return Ok(());
            }
            _ => {}
        }
        let next = |i: usize| self.tokens.get(self.pos + i).map(String::as_str);
        if next(0) == Some("original") && next(1) == Some("protocol") && next(2) != Some(".") {
            self.pos += 2;
            let proto = self.next()?;
            let n = super::proto_number(&proto).ok_or_else(|| format!("unknown protocol {proto:?}"))?;
            self.push(KeyPart::CtProto.load(1, self.family));
            self.push(Expr::Cmp {
                op: EQ,
                data: vec![n],
            });
            return Ok(());
        }
        self.pos -= 1;
        self.concat_lookup()
    }
}
