//! Rule text -> nf_tables expressions, for the rule forms svcnet's renderer writes (upstream
//! kube-proxy's nftables rules). Each form is encoded as `nft` 1.0.x encodes it (the same
//! expressions, registers and data), so `nft list` prints a table written here exactly as one
//! loaded by `nft -f`; anything else is an error naming the rule, never a guess.

use std::net::IpAddr;

use super::EncodeError;
use crate::model::Family;

/// Payload bases.
const NETWORK: u32 = 1;
const TRANSPORT: u32 = 2;
/// Meta keys.
pub(super) const META_MARK: u32 = 3;
const META_IIFNAME: u32 = 6;
const META_L4PROTO: u32 = 16;
/// Comparison operators.
const EQ: u32 = 0;
const NEQ: u32 = 1;
/// `ct state new` bit.
const CT_STATE_NEW: u32 = 1 << 3;
/// fib flags and the `local` address type (RTN_LOCAL).
const FIB_SADDR: u32 = 1;
const FIB_DADDR: u32 = 2;
const RTN_LOCAL: u32 = 2;
/// masquerade fully-random (NF_NAT_RANGE_PROTO_RANDOM_FULLY).
const NAT_RANDOM_FULLY: u32 = 0x10;
/// Data types (nft's datatype ids) and set flags.
pub(super) const TYPE_INTEGER: u32 = 4;
pub(super) const TYPE_IPV4: u32 = 7;
pub(super) const TYPE_IPV6: u32 = 8;
pub(super) const TYPE_PROTO: u32 = 12;
pub(super) const TYPE_SERVICE: u32 = 13;
pub(super) const SET_ANONYMOUS: u32 = 0x1;
pub(super) const SET_CONSTANT: u32 = 0x2;
pub(super) const SET_INTERVAL: u32 = 0x4;
pub(super) const SET_MAP: u32 = 0x8;

/// A verdict, as in an immediate or a map element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Accept,
    Drop,
    Return,
    Jump(String),
    Goto(String),
}

impl Verdict {
    /// Parses `drop`, `jump X`, `goto X`, ... (map element values).
    pub fn parse(text: &str) -> Option<Verdict> {
        let mut words = text.split_whitespace();
        let v = match (words.next()?, words.next()) {
            ("accept", None) => Verdict::Accept,
            ("drop", None) => Verdict::Drop,
            ("return", None) => Verdict::Return,
            ("jump", Some(c)) => Verdict::Jump(c.to_string()),
            ("goto", Some(c)) => Verdict::Goto(c.to_string()),
            _ => return None,
        };
        words.next().is_none().then_some(v)
    }

    pub fn code(&self) -> i32 {
        match self {
            Verdict::Drop => 0,
            Verdict::Accept => 1,
            Verdict::Jump(_) => -3,
            Verdict::Goto(_) => -4,
            Verdict::Return => -5,
        }
    }

    pub fn chain(&self) -> Option<&str> {
        match self {
            Verdict::Jump(c) | Verdict::Goto(c) => Some(c),
            _ => None,
        }
    }
}

/// One expression. Loads write register 1 (or the given one inside a concatenation); comparisons,
/// bitwise and lookups read register 1, as nft does for one match at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Expr {
    Payload {
        base: u32,
        offset: u32,
        len: u32,
        dreg: u32,
    },
    Meta {
        key: u32,
        dreg: u32,
    },
    MetaSet {
        key: u32,
    },
    CtState,
    Cmp {
        op: u32,
        data: Vec<u8>,
    },
    Bitwise {
        mask: Vec<u8>,
        xor: Vec<u8>,
    },
    /// A set lookup; `dreg` 0 is a verdict map; `anon` names a set of this rule by its batch id.
    Lookup {
        set: String,
        anon: Option<u32>,
        dreg: Option<u32>,
        invert: bool,
    },
    Immediate {
        dreg: u32,
        value: Vec<u8>,
    },
    Verdict(Verdict),
    Reject {
        icmp_code: u8,
    },
    Fib {
        flags: u32,
    },
    Numgen {
        modulus: u32,
    },
    Dynset {
        set: String,
    },
    Dnat {
        family: u32,
    },
    Masq {
        flags: u32,
    },
}

/// An anonymous set or map a rule creates with itself (`{ ... }`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AnonSet {
    pub id: u32,
    pub flags: u32,
    pub key_type: u32,
    pub key_len: u32,
    pub udata: Vec<u8>,
    pub elements: Vec<AnonElement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AnonElement {
    pub key: Vec<u8>,
    /// Marks the end (exclusive) of an interval.
    pub interval_end: bool,
    /// The start of an interval that runs to the end of the address space (nft records it in the
    /// element's user data).
    pub open: bool,
    pub verdict: Option<Verdict>,
}

/// A compiled rule: the anonymous sets to create first, then its expressions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Compiled {
    pub sets: Vec<AnonSet>,
    pub exprs: Vec<Expr>,
}

/// Compiles one rule's text; `next_id` numbers the anonymous sets of the batch.
pub(super) fn compile(text: &str, family: Family, next_id: &mut u32) -> Result<Compiled, EncodeError> {
    let tokens = tokenize(text);
    let mut p = Parser {
        tokens,
        pos: 0,
        family,
        out: Compiled::default(),
        next_id,
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
}

/// One part of a lookup key.
#[derive(Clone, Copy)]
struct Component {
    expr: fn(u32, Family) -> Expr,
    len: u32,
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
                "ct" => self.ct_state()?,
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

    /// After `ip`/`ip6`: `saddr|daddr`, then a comparison, a set, or the start of a concatenation.
    fn address_match(&mut self) -> Result<(), String> {
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
    fn prefix(&self, text: &str) -> Result<(Vec<u8>, u32), String> {
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

    fn new_id(&mut self) -> u32 {
        *self.next_id += 1;
        *self.next_id
    }

    /// `ip daddr . meta l4proto . th dport vmap @map` (and shorter concatenations).
    fn concat_lookup(&mut self) -> Result<(), String> {
        let mut parts = Vec::new();
        loop {
            let a = self.next()?;
            let b = self.next()?;
            let part = match (a.as_str(), b.as_str()) {
                ("ip" | "ip6", "daddr") if a == self.family_word() => Component {
                    expr: daddr,
                    len: self.addr_len(),
                },
                ("ip" | "ip6", "saddr") if a == self.family_word() => Component {
                    expr: saddr,
                    len: self.addr_len(),
                },
                ("meta", "l4proto") => Component {
                    expr: l4proto,
                    len: 1,
                },
                ("th", "dport") => Component {
                    expr: th_dport,
                    len: 2,
                },
                _ => return Err(format!("unsupported key part {a} {b}")),
            };
            parts.push(part);
            if self.peek() == Some(".") {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.expect("vmap")?;
        let map = self.next()?;
        let map = map
            .strip_prefix('@')
            .ok_or_else(|| format!("vmap {map:?}: only named maps are supported"))?;
        let mut unit = 0;
        for p in &parts {
            let e = (p.expr)(register(unit), self.family);
            self.push(e);
            unit += p.len.div_ceil(4);
        }
        self.push(Expr::Lookup {
            set: map.to_string(),
            anon: None,
            dreg: Some(0),
            invert: false,
        });
        Ok(())
    }

    fn addr_len(&self) -> u32 {
        match self.family {
            Family::V4 => 4,
            Family::V6 => 16,
        }
    }

    fn meta(&mut self) -> Result<(), String> {
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

    /// `mark and M == V` and `mark set mark or|xor M`.
    fn mark(&mut self) -> Result<(), String> {
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
    fn numgen(&mut self) -> Result<(), String> {
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
        self.push(Expr::Numgen { modulus });
        self.push(Expr::Lookup {
            set: "__map%d".into(),
            anon: Some(id),
            dreg: Some(0),
            invert: false,
        });
        Ok(())
    }

    /// `update @set { ip saddr }`.
    fn update(&mut self) -> Result<(), String> {
        let set = self.next()?;
        let set = set
            .strip_prefix('@')
            .ok_or_else(|| format!("update {set:?}: not a set"))?
            .to_string();
        self.expect("{")?;
        let fam = self.next()?;
        if fam != self.family_word() {
            return Err(format!("{fam} key in a {} table", self.family_word()));
        }
        self.expect("saddr")?;
        self.expect("}")?;
        self.push(saddr(1, self.family));
        self.push(Expr::Dynset { set });
        Ok(())
    }

    /// `dnat to 10.0.0.1:80` / `dnat to [fd00::1]:80`.
    fn dnat(&mut self) -> Result<(), String> {
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
            family: super::nfproto(self.family) as u32,
        });
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

/// nft's user data of the `numgen ... vmap { }` map: host-order integer key, verdict data.
fn numgen_map_udata() -> Vec<u8> {
    vec![
        0, 4, 1, 0, 0, 0, 1, 4, 0, 0, 0, 0, 4, 8, 0, 4, 1, 0, 0, 0, 1, 0, 6, 4, 0, 0, 0, 0,
    ]
}
