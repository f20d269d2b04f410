//! Field validation shared by the resource modules, with GCE's messages.
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::errors::ApiError;

/// RFC 1035 names as GCE requires them.
pub fn name(field: &str, v: &str) -> Result<(), ApiError> {
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$").ok());
    match re {
        Some(re) if re.is_match(v) => Ok(()),
        _ => Err(ApiError::invalid_field(
            field,
            v,
            "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'",
        )),
    }
}

/// A CIDR (or a bare address, which GCE treats as /32).
pub fn cidr(field: &str, v: &str) -> Result<(), ApiError> {
    let ok = v.parse::<ipnet::IpNet>().is_ok() || v.parse::<std::net::IpAddr>().is_ok();
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_field(field, v, "Must be a valid CIDR range."))
    }
}

pub fn ip(field: &str, v: &str) -> Result<std::net::IpAddr, ApiError> {
    v.parse()
        .map_err(|_| ApiError::invalid_field(field, v, "Must be a valid IP address."))
}

/// `"80"` or `"8000-9000"` inside 1..=65535; returns (low, high).
pub fn port_range(field: &str, v: &str) -> Result<(u16, u16), ApiError> {
    let bad = || ApiError::invalid_field(field, v, "Must be a port or a port range (e.g. 80-90).");
    let (lo, hi) = match v.split_once('-') {
        Some((a, b)) => (a.trim().parse::<u16>(), b.trim().parse::<u16>()),
        None => (v.trim().parse::<u16>(), v.trim().parse::<u16>()),
    };
    let (lo, hi) = (lo.map_err(|_| bad())?, hi.map_err(|_| bad())?);
    if lo == 0 || lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

/// Firewall protocols: names GCE knows or a protocol number.
pub fn firewall_protocol(field: &str, v: &str) -> Result<(), ApiError> {
    const NAMES: [&str; 8] = ["tcp", "udp", "icmp", "esp", "ah", "sctp", "ipip", "all"];
    if NAMES.contains(&v) || v.parse::<u8>().is_ok() {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            v,
            "Must be a valid protocol name or number.",
        ))
    }
}

/// Optional string field; error if present with another JSON type.
pub fn opt_str<'a>(obj: &'a Map<String, Value>, field: &str) -> Result<Option<&'a str>, ApiError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(other) => Err(ApiError::invalid_field(
            field,
            &other.to_string(),
            "Must be a string.",
        )),
    }
}

/// Optional integer (JSON number or numeric string, as proto3 JSON allows) within bounds.
pub fn opt_int(obj: &Map<String, Value>, field: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
    let n = match obj.get(field) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        Some(_) => None,
    };
    let raw = obj.get(field).map(Value::to_string).unwrap_or_default();
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(ApiError::invalid_field(
            field,
            raw.trim_matches('"'),
            &format!("Must be an integer between {min} and {max}."),
        )),
    }
}

/// Optional list of strings.
pub fn opt_str_list(obj: &Map<String, Value>, field: &str) -> Result<Vec<String>, ApiError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::invalid_field(field, &v.to_string(), "Must be a string."))
            })
            .collect(),
        Some(other) => Err(ApiError::invalid_field(
            field,
            &other.to_string(),
            "Must be a list.",
        )),
    }
}

/// One of a fixed set of enum values (upper-case, as the API spells them).
pub fn one_of(field: &str, v: &str, allowed: &[&str]) -> Result<(), ApiError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            v,
            &format!("Must be one of {allowed:?}."),
        ))
    }
}

#[cfg(test)]
mod tests;
