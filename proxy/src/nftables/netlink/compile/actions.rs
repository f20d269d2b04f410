//! The statements that act: mark arithmetic, the `numgen` endpoint pick with its anonymous verdict
//! map, affinity updates and DNAT, as nft encodes them.

use super::super::expr::*;
use super::{Parser, parse_u32, saddr};

impl Parser<'_> {
    /// `mark and M == V` and `mark set mark or|xor M`.
    pub(super) fn mark(&mut self) -> Result<(), String> {
        let load = Expr::Meta {
            key: META_MARK,
            dreg: 1,
        };
        match self.next()?.as_str() {
            "and" => {
                let mask = parse_u32(&self.next()?)?;
                self.expect("==")?;
                let value = parse_u32(&self.next()?)?;
                self.push(load);
                self.push(Expr::Bitwise {
                    mask: mask.to_ne_bytes().to_vec(),
                    xor: vec![0; 4],
                });
                self.push(Expr::Cmp {
                    op: EQ,
                    data: (value & mask).to_ne_bytes().to_vec(),
                });
            }
            "set" => {
                self.expect("mark")?;
                let op = self.next()?;
                let m = parse_u32(&self.next()?)?;
                let (mask, xor) = match op.as_str() {
                    "or" => (!m, m),
                    "xor" => (u32::MAX, m),
                    o => return Err(format!("unsupported mark operation {o:?}")),
                };
                self.push(load);
                self.push(Expr::Bitwise {
                    mask: mask.to_ne_bytes().to_vec(),
                    xor: xor.to_ne_bytes().to_vec(),
                });
                self.push(Expr::MetaSet { key: META_MARK });
            }
            w => return Err(format!("unsupported mark {w:?}")),
        }
        Ok(())
    }

    /// `numgen random mod N vmap { 0 : goto a , 1 : goto b }`.
    pub(super) fn numgen(&mut self) -> Result<(), String> {
        self.expect("random")?;
        self.expect("mod")?;
        let modulus = parse_u32(&self.next()?)?;
        self.expect("vmap")?;
        self.expect("{")?;
        let mut elements = Vec::new();
        loop {
            let t = self.next()?;
            match t.as_str() {
                "}" => break,
                "," => continue,
                key => {
                    let key = parse_u32(key)?;
                    self.expect(":")?;
                    let kind = self.next()?;
                    let chain = self.next()?;
                    let verdict = Verdict::parse(&format!("{kind} {chain}"))
                        .ok_or_else(|| format!("bad verdict {kind} {chain}"))?;
                    elements.push(AnonElement {
                        key: key.to_ne_bytes().to_vec(),
                        interval_end: false,
                        open: false,
                        verdict: Some(verdict),
                    });
                }
            }
        }
        let id = self.new_id();
        self.out.sets.push(AnonSet {
            id,
            flags: SET_ANONYMOUS | SET_CONSTANT | SET_MAP,
            key_type: TYPE_INTEGER,
            key_len: 4,
            udata: numgen_map_udata(),
            elements,
        });
        self.push(Expr::Numgen { modulus, dreg: 1 });
        self.push(Expr::Lookup {
            set: "__map%d".into(),
            anon: Some(id),
            dreg: Some(0),
            invert: false,
        });
        Ok(())
    }

    /// `update @set { ip saddr }`.
    pub(super) fn update(&mut self) -> Result<(), String> {
        let set = self.next()?;
        let set = set
            .strip_prefix('@')
            .ok_or_else(|| format!("update {set:?}: not a set"))?
            .to_string();
        self.expect("{")?;
        let plain = self.tokens.get(self.pos + 1).map(String::as_str) == Some("saddr")
            && self.tokens.get(self.pos + 2).map(String::as_str) == Some("}");
        if !plain {
            return self.update_map(set);
        }
        let fam = self.next()?;
        if fam != self.family_word() {
            return Err(format!("{fam} key in a {} table", self.family_word()));
        }
        self.expect("saddr")?;
        self.expect("}")?;
        self.push(saddr(1, self.family));
        self.push(Expr::Dynset {
            set,
            data: None,
            timeout_ms: None,
        });
        Ok(())
    }

    /// `dnat to 10.0.0.1:80` / `dnat to [fd00::1]:80`.
    pub(super) fn dnat(&mut self) -> Result<(), String> {
        self.expect("to")?;
        let target = self.next()?;
        let (addr, port) = target
            .rsplit_once(':')
            .ok_or_else(|| format!("dnat target {target:?} without a port"))?;
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        let (bytes, bits) = self.prefix(addr)?;
        if bits != bytes.len() as u32 * 8 {
            return Err(format!("dnat to a prefix {target:?}"));
        }
        let port: u16 = port.parse().map_err(|_| format!("bad port in {target:?}"))?;
        self.push(Expr::Immediate {
            dreg: 1,
            value: bytes,
        });
        self.push(Expr::Immediate {
            dreg: 2,
            value: port.to_be_bytes().to_vec(),
        });
        self.push(Expr::Dnat {
            family: super::super::nfproto(self.family) as u32,
            proto_reg: 2,
            flags: true,
        });
        Ok(())
    }
}

/// nft's user data of the `numgen ... vmap { }` map: host-order integer key, verdict data.
fn numgen_map_udata() -> Vec<u8> {
    vec![
        0, 4, 1, 0, 0, 0, 1, 4, 0, 0, 0, 0, 4, 8, 0, 4, 1, 0, 0, 0, 1, 0, 6, 4, 0, 0, 0, 0,
    ]
}
