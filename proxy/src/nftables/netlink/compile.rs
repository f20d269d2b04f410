//! Rule text -> nf_tables expressions, for the rule forms svcnet's renderer writes (upstream
//! kube-proxy's nftables rules). Each form is encoded as `nft` 1.0.x encodes it (the same
//! expressions, registers and data), so `nft list` prints a table written here exactly as one
//! loaded by `nft -f`; anything else is an error naming the rule, never a guess. Address matches
//! and key concatenations are in [`address`], marks, `numgen`, affinity updates and DNAT in
//! [`actions`].

mod actions;
mod address;
mod concat;

pub(super) use concat::{KeyPart, key_part};

use super::EncodeError;
use super::expr::*;
use crate::model::Family;

/// Compiles one rule's text; `next_id` numbers the anonymous sets of the batch; `intervals` names
/// the table's interval sets (nft converts a concatenated key's byte order for those).
pub(super) fn compile(
    text: &str,
    family: Family,
    next_id: &mut u32,
    intervals: &[String],
) -> Result<Compiled, EncodeError> {
    let tokens = tokenize(text);
    let mut p = Parser {
        tokens,
        pos: 0,
        family,
        out: Compiled::default(),
        next_id,
        intervals,
    };
    p.rule().map_err(|why| EncodeError::Rule(text.to_string(), why))?;
    Ok(p.out)
}

/// Words, with `{`, `}` and `,` as tokens of their own (`{ a,b }` and `{ a , b }` alike).
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        let mut cur = String::new();
        for c in word.chars() {
            if matches!(c, '{' | '}' | ',') {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                out.push(c.to_string());
            } else {
                cur.push(c);
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

struct Parser<'a> {
    tokens: Vec<String>,
    pos: usize,
    family: Family,
    out: Compiled,
    next_id: &'a mut u32,
    intervals: &'a [String],
}

fn payload_addr(field_offset_v4: u32, field_offset_v6: u32) -> impl Fn(u32, Family) -> Expr {
    move |dreg, family| match family {
        Family::V4 => Expr::Payload {
            base: NETWORK,
            offset: field_offset_v4,
            len: 4,
            dreg,
        },
        Family::V6 => Expr::Payload {
            base: NETWORK,
            offset: field_offset_v6,
            len: 16,
            dreg,
        },
    }
}

fn saddr(dreg: u32, family: Family) -> Expr {
    payload_addr(12, 8)(dreg, family)
}
fn daddr(dreg: u32, family: Family) -> Expr {
    payload_addr(16, 24)(dreg, family)
}
fn l4proto(dreg: u32, _: Family) -> Expr {
    Expr::Meta {
        key: META_L4PROTO,
        dreg,
    }
}
fn th_dport(dreg: u32, _: Family) -> Expr {
    Expr::Payload {
        base: TRANSPORT,
        offset: 2,
        len: 2,
        dreg,
    }
}

/// nft's register numbering: 32-bit unit `u` of the register file is NFT_REG_1 + u/4 when it starts
/// a 128-bit register, else NFT_REG32_00 + u.
fn register(unit: u32) -> u32 {
    if unit.is_multiple_of(4) {
        1 + unit / 4
    } else {
        8 + unit
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn next(&mut self) -> Result<String, String> {
        let t = self
            .tokens
            .get(self.pos)
            .cloned()
            .ok_or_else(|| "unexpected end".to_string())?;
        self.pos += 1;
        Ok(t)
    }

    fn expect(&mut self, word: &str) -> Result<(), String> {
        let t = self.next()?;
        if t == word {
            Ok(())
        } else {
            Err(format!("expected {word:?}, found {t:?}"))
        }
    }

    fn push(&mut self, e: Expr) {
        self.out.exprs.push(e);
    }

    fn family_word(&self) -> &'static str {
        match self.family {
            Family::V4 => "ip",
            Family::V6 => "ip6",
        }
    }

    fn rule(&mut self) -> Result<(), String> {
        while let Some(t) = self.peek().map(str::to_string) {
            self.pos += 1;
            match t.as_str() {
                "ct" => self.ct()?,
                "ip" | "ip6" => {
                    if t != self.family_word() {
                        return Err(format!("{t} match in a {} table", self.family_word()));
                    }
                    self.address_match()?
                }
                "meta" => self.meta()?,
                "th" => {
                    self.pos -= 1;
                    self.concat_lookup()?
                }
                "fib" => self.fib()?,
                "iifname" => self.iifname()?,
                "mark" => self.mark()?,
                "numgen" => self.numgen()?,
                "update" => self.update()?,
                "jump" | "goto" => {
                    let chain = self.next()?;
                    self.push(Expr::Verdict(if t == "jump" {
                        Verdict::Jump(chain)
                    } else {
                        Verdict::Goto(chain)
                    }));
                }
                "drop" => self.push(Expr::Verdict(Verdict::Drop)),
                "accept" => self.push(Expr::Verdict(Verdict::Accept)),
                "return" => self.push(Expr::Verdict(Verdict::Return)),
                "reject" => {
                    let icmp_code = match self.family {
                        Family::V4 => 3, // ICMP port unreachable
                        Family::V6 => 4, // ICMPv6 port unreachable
                    };
                    self.push(Expr::Reject { icmp_code });
                }
                "masquerade" => {
                    let mut flags = 0;
                    if self.peek() == Some("fully-random") {
                        self.pos += 1;
                        flags |= NAT_RANDOM_FULLY;
                    }
                    self.push(Expr::Masq { flags });
                }
                "dnat" if matches!(self.peek(), Some("ip" | "ip6")) => self.dnat_map()?,
                "dnat" => self.dnat()?,
                other => return Err(format!("unsupported word {other:?}")),
            }
        }
        Ok(())
    }

    fn ct_state(&mut self) -> Result<(), String> {
        self.expect("state")?;
        self.expect("new")?;
        self.push(Expr::CtState);
        self.push(Expr::Bitwise {
            mask: CT_STATE_NEW.to_ne_bytes().to_vec(),
            xor: vec![0; 4],
        });
        self.push(Expr::Cmp {
            op: NEQ,
            data: vec![0; 4],
        });
        Ok(())
    }

    fn new_id(&mut self) -> u32 {
        *self.next_id += 1;
        *self.next_id
    }

    fn addr_len(&self) -> u32 {
        match self.family {
            Family::V4 => 4,
            Family::V6 => 16,
        }
    }

    fn meta(&mut self) -> Result<(), String> {
        if self.peek() == Some("mark") {
            // `meta mark set meta mark or M`: nft's long form of `mark set mark or M`.
            self.pos += 1;
            let word = |i: usize| self.tokens.get(self.pos + i).map(String::as_str);
            if word(0) != Some("set") || word(1) != Some("meta") {
                return Err(format!("unsupported meta mark {:?}", word(0)));
            }
            self.tokens.remove(self.pos + 1);
            return self.mark();
        }
        if self.peek() == Some("l4proto") && self.tokens.get(self.pos + 1).map(String::as_str) == Some(".") {
            self.pos -= 1;
            return self.concat_lookup();
        }
        self.expect("l4proto")?;
        let proto = self.next()?;
        let n = proto_number(&proto).ok_or_else(|| format!("unknown protocol {proto:?}"))?;
        self.push(l4proto(1, self.family));
        self.push(Expr::Cmp {
            op: EQ,
            data: vec![n],
        });
        Ok(())
    }

    fn fib(&mut self) -> Result<(), String> {
        let flags = match self.next()?.as_str() {
            "saddr" => FIB_SADDR,
            "daddr" => FIB_DADDR,
            f => return Err(format!("unsupported fib {f:?}")),
        };
        self.expect("type")?;
        self.expect("local")?;
        self.push(Expr::Fib { flags });
        self.push(Expr::Cmp {
            op: EQ,
            data: RTN_LOCAL.to_ne_bytes().to_vec(),
        });
        Ok(())
    }

    /// `iifname eth0` compares the whole name (NUL-padded); `iifname veth*` only the prefix.
    fn iifname(&mut self) -> Result<(), String> {
        let mut op = EQ;
        let mut name = self.next()?;
        if name == "!=" {
            op = NEQ;
            name = self.next()?;
        }
        let name = name.trim_matches('"');
        let data = match name.strip_suffix('*') {
            Some(prefix) => prefix.as_bytes().to_vec(),
            None => {
                let mut d = name.as_bytes().to_vec();
                if d.len() >= 16 {
                    return Err(format!("interface name {name:?} too long"));
                }
                d.resize(16, 0);
                d
            }
        };
        self.push(Expr::Meta {
            key: META_IIFNAME,
            dreg: 1,
        });
        self.push(Expr::Cmp { op, data });
        Ok(())
    }
}

pub(super) fn proto_number(name: &str) -> Option<u8> {
    match name {
        "tcp" => Some(6),
        "udp" => Some(17),
        "sctp" => Some(132),
        _ => None,
    }
}

fn parse_u32(text: &str) -> Result<u32, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("bad number {text:?}"))
}
