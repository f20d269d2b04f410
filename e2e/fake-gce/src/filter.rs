//! List filters as clients send them.
//!
//! Supported: `field eq REGEX`, `field ne REGEX` (RE2 full match, as GCE does), conjunctions
//! `(a eq x) (b eq y)` (optionally joined by `AND`), gcloud's rewritten `(name eq ".*(^k8s-fw).*")`,
//! and the newer `field = "v"`, `field != "v"` (literal, `*` as wildcard), `field:v` (has).
//! Nested fields use dots (`networkInterfaces.networkIP`); list fields match when any element does.
use serde_json::Value;

use crate::errors::ApiError;

#[derive(Debug)]
pub struct Filter {
    terms: Vec<Term>,
}

#[derive(Debug)]
struct Term {
    path: Vec<String>,
    negate: bool,
    re: regex::Regex,
}

impl Filter {
    pub fn parse(s: &str) -> Result<Filter, ApiError> {
        let bad = |why: &str| ApiError::invalid(format!("Invalid list filter expression '{s}': {why}"));
        let chars: Vec<char> = s.chars().collect();
        let mut terms = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_whitespace() {
                i += 1;
                continue;
            }
            if chars[i] == '(' {
                let end = closing_paren(&chars, i).ok_or_else(|| bad("unbalanced parentheses"))?;
                let inner: String = chars[i + 1..end].iter().collect();
                terms.push(parse_term(&inner).map_err(|w| bad(&w))?);
                i = end + 1;
                continue;
            }
            // A bare term: field, operator and value are whitespace-separated words; a bare
            // single term may also carry a value with spaces up to the end.
            let rest: String = chars[i..].iter().collect();
            let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            if rest[..word_end].eq_ignore_ascii_case("and") {
                i += word_end;
                continue;
            }
            let (term, used) = parse_bare(&rest).map_err(|w| bad(&w))?;
            terms.push(term);
            i += used.max(1);
        }
        Ok(Filter { terms })
    }

    pub fn matches(&self, v: &Value) -> bool {
        self.terms.iter().all(|t| {
            let mut vals = Vec::new();
            collect(v, &t.path, &mut vals);
            let any = vals.iter().any(|s| t.re.is_match(s));
            any != t.negate
        })
    }
}

/// Index of the ')' closing the '(' at `open`, skipping quoted text.
fn closing_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_quote = false;
    let mut i = open;
    while i < chars.len() {
        let c = chars[i];
        if in_quote {
            if c == '\\' {
                i += 1;
            } else if c == '"' {
                in_quote = false;
            }
        } else if c == '"' {
            in_quote = true;
        } else if c == '(' {
            depth += 1;
        } else if c == ')' {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

fn parse_bare(rest: &str) -> Result<(Term, usize), String> {
    let mut words = Vec::new();
    let mut pos = 0;
    for _ in 0..2 {
        let s = &rest[pos..];
        let start = pos + (s.len() - s.trim_start().len());
        let len = rest[start..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - start);
        words.push(&rest[start..start + len]);
        pos = start + len;
    }
    // Value: a quoted string or one word.
    let s = &rest[pos..];
    let start = pos + (s.len() - s.trim_start().len());
    let v = &rest[start..];
    let vlen = if v.starts_with('"') {
        quoted_len(v).ok_or("unterminated quote")?
    } else {
        v.find(char::is_whitespace).unwrap_or(v.len())
    };
    let text = format!("{} {} {}", words[0], words[1], &v[..vlen]);
    Ok((parse_term(&text)?, start + vlen))
}

fn quoted_len(v: &str) -> Option<usize> {
    let b = v.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn parse_term(inner: &str) -> Result<Term, String> {
    let inner = inner.trim();
    let field_end = inner
        .find(|c: char| c.is_whitespace() || c == '=' || c == '!' || c == ':')
        .ok_or("missing operator")?;
    let field = &inner[..field_end];
    let rest = inner[field_end..].trim_start();
    let (op, value) = if let Some(v) = rest.strip_prefix("!=") {
        ("!=", v)
    } else if let Some(v) = rest.strip_prefix('=') {
        ("=", v)
    } else if let Some(v) = rest.strip_prefix(':') {
        (":", v)
    } else if let Some(v) = rest.strip_prefix("eq ") {
        ("eq", v)
    } else if let Some(v) = rest.strip_prefix("ne ") {
        ("ne", v)
    } else {
        return Err(format!("unsupported operator in '{inner}'"));
    };
    if field.is_empty() {
        return Err("missing field".into());
    }
    let value = unquote(value.trim());
    let (pattern, negate) = match op {
        "eq" => (value, false),
        "ne" => (value, true),
        "=" => (wildcard(&value), false),
        "!=" => (wildcard(&value), true),
        _ => (format!(".*{}.*", regex::escape(&value)), false),
    };
    let re = regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| e.to_string())?;
    Ok(Term {
        path: field.split('.').map(str::to_string).collect(),
        negate,
        re,
    })
}

fn unquote(v: &str) -> String {
    match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => v.to_string(),
    }
}

fn wildcard(v: &str) -> String {
    v.split('*').map(regex::escape).collect::<Vec<_>>().join(".*")
}

/// String forms of the values at `path` (descending into lists).
fn collect(v: &Value, path: &[String], out: &mut Vec<String>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| collect(x, path, out)),
        _ => match path.split_first() {
            None => match v {
                Value::String(s) => out.push(s.clone()),
                Value::Null | Value::Object(_) => {}
                other => out.push(other.to_string()),
            },
            Some((head, tail)) => {
                if let Some(x) = v.get(head) {
                    collect(x, tail, out);
                }
            }
        },
    }
}

#[cfg(test)]
mod tests;
