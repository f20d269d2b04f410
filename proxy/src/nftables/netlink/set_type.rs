//! A named set's type (`ipv4_addr . inet_proto . inet_service : verdict`) as nf_tables wants it:
//! datatype ids, key length, nft's user data, and element keys as bytes.

use std::net::IpAddr;

use super::EncodeError;
use super::compile;
use super::expr;
use super::msg::Udata;
use crate::nftables::render::{Element, Set};

/// Bits per type in a concatenation's type id.
const TYPE_BITS: u32 = 6;

/// A set's key (and whether it maps to verdicts), parsed from its nft type text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetType {
    /// (nft datatype id, length in bytes) of each key part.
    parts: Vec<(u32, u32)>,
    pub(super) verdict_map: bool,
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

    pub(super) fn type_id(&self) -> u32 {
        self.parts.iter().fold(0, |acc, (t, _)| (acc << TYPE_BITS) | t)
    }

    pub(super) fn key_len(&self) -> u32 {
        if self.concat() {
            self.parts.iter().map(|(_, l)| l.div_ceil(4) * 4).sum()
        } else {
            self.parts.iter().map(|(_, l)| l).sum()
        }
    }

    /// nft's user data for the set (how it prints the key), then the comment.
    pub(super) fn udata(&self, comment: Option<&str>) -> Result<Vec<u8>, EncodeError> {
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
            u.put_str(7, &crate::nftables::render::comment_text(c))?;
        }
        Ok(u.0)
    }

    /// An element's key: each part parsed and, in a concatenation, padded to 4 bytes.
    pub(super) fn key(&self, e: &Element) -> Result<Vec<u8>, EncodeError> {
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
                    vec![compile::proto_number(text).ok_or_else(|| bad(format!("bad protocol {text:?}")))?]
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
