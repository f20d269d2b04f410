//! Label selectors (equality and set-based) and field selectors, as the real apiserver parses them.

use serde_json::Value;

use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Exists(String),
    NotExists(String),
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed `labelSelector`; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

/// A parsed `fieldSelector`: `path=value` / `path!=value` terms on dotted JSON paths.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

/// Splits on commas that are not inside `( )`.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

fn set_values(rest: &str, sel: &str) -> Result<Vec<String>, ApiError> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| ApiError::bad_request(format!("unable to parse requirement: {sel}")))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for term in split_top(s) {
            let bad = || ApiError::bad_request(format!("unable to parse requirement: {term}"));
            let req = if let Some(k) = term.strip_prefix('!') {
                LabelReq::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = term.split_once("!=") {
                LabelReq::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = term.split_once("==") {
                LabelReq::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = term.split_once('=') {
                LabelReq::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = split_word(&term, "notin") {
                LabelReq::NotIn(k, set_values(rest, &term)?)
            } else if let Some((k, rest)) = split_word(&term, "in") {
                LabelReq::In(k, set_values(rest, &term)?)
            } else if term.contains(char::is_whitespace) || term.contains(['(', ')']) {
                return Err(bad());
            } else {
                LabelReq::Exists(term.clone())
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
        })
    }
}

/// `key in (a,b)` -> ("key", "(a,b)") when `word` stands alone between the key and the set.
fn split_word<'a>(term: &'a str, word: &str) -> Option<(String, &'a str)> {
    let mut parts = term.splitn(2, char::is_whitespace);
    let key = parts.next()?.trim();
    let rest = parts.next()?.trim_start();
    let after = rest.strip_prefix(word)?;
    if after.starts_with(|c: char| c.is_whitespace() || c == '(') {
        Some((key.to_string(), after))
    } else {
        None
    }
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in split_top(s) {
            let (path, neg, val) = if let Some((k, v)) = term.split_once("!=") {
                (k, true, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, false, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{term}'")));
            };
            terms.push((path.trim().to_string(), neg, val.trim().to_string()));
        }
        Ok(Self(terms))
    }

    /// A missing field compares as the empty string, like the real field label conversion.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, neg, want)| {
            let mut cur = Some(obj);
            for seg in path.split('.') {
                cur = cur.and_then(|c| c.get(seg));
            }
            let have = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (have == *want) != *neg
        })
    }
}

#[cfg(test)]
mod tests;
