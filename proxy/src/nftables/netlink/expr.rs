//! nf_tables expressions, verdicts and the anonymous sets of a rule, as plain data: what
//! [`super::compile`] makes of a rule's text and [`super::encode_expr`] writes as attributes.

/// Payload bases.
pub(super) const NETWORK: u32 = 1;
pub(super) const TRANSPORT: u32 = 2;
/// Meta keys.
pub(super) const META_MARK: u32 = 3;
pub(super) const META_IIFNAME: u32 = 6;
pub(super) const META_L4PROTO: u32 = 16;
/// Conntrack keys.
pub(super) const CT_STATUS: u32 = 2;
pub(super) const CT_PROTOCOL: u32 = 10;
pub(super) const CT_PROTO_DST: u32 = 12;
pub(super) const CT_DST_IP: u32 = 20;
pub(super) const CT_DST_IP6: u32 = 22;
/// `ct status dnat` bit (IPS_DST_NAT).
pub(super) const CT_STATUS_DNAT: u32 = 0x20;
/// Comparison operators.
pub(super) const EQ: u32 = 0;
pub(super) const NEQ: u32 = 1;
/// `ct state new` bit.
pub(super) const CT_STATE_NEW: u32 = 1 << 3;
/// fib flags and the `local` address type (RTN_LOCAL).
pub(super) const FIB_SADDR: u32 = 1;
pub(super) const FIB_DADDR: u32 = 2;
pub(super) const RTN_LOCAL: u32 = 2;
/// masquerade fully-random (NF_NAT_RANGE_PROTO_RANDOM_FULLY).
pub(super) const NAT_RANDOM_FULLY: u32 = 0x10;
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
    pub(super) fn parse(text: &str) -> Option<Verdict> {
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

    pub(super) fn code(&self) -> i32 {
        match self {
            Verdict::Drop => 0,
            Verdict::Accept => 1,
            Verdict::Jump(_) => -3,
            Verdict::Goto(_) => -4,
            Verdict::Return => -5,
        }
    }

    pub(super) fn chain(&self) -> Option<&str> {
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
        dreg: u32,
    },
    /// `update @set { key [timeout T] [: data] }`: key from register 1, data from `data`.
    Dynset {
        set: String,
        data: Option<u32>,
        timeout_ms: Option<u64>,
    },
    /// DNAT to the address in register 1 and the port in `proto_reg`; `flags`: nft's
    /// NF_NAT_RANGE_PROTO_SPECIFIED, which it sends for a literal target only.
    Dnat {
        family: u32,
        proto_reg: u32,
        flags: bool,
    },
    /// A conntrack field (`ct status`, `ct original protocol`); `original`: of the original
    /// direction.
    Ct {
        key: u32,
        dreg: u32,
        original: bool,
    },
    /// Host to network order of `len` bytes in `reg` (nft's key conversion in interval
    /// concatenations).
    Hton {
        reg: u32,
        len: u32,
        size: u32,
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
