//! Reads a `kube-proxy` nftables table in either form an operator has at hand: `nft -f` input
//! (`svcnet-proxy render --proxy-mode nftables`, `add chain ...` lines) or the kernel's listing
//! (`nft list table ip kube-proxy`, nested blocks). Both become the same [`NftRuleset`].

use std::collections::BTreeMap;

/// One table, as the tracer needs it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NftRuleset {
    pub chains: BTreeMap<String, NftChain>,
    pub sets: BTreeMap<String, NftSet>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NftChain {
    /// (hook, priority) of a base chain.
    pub hook: Option<(String, i32)>,
    pub rules: Vec<NftRule>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NftRule {
    /// As written (comment included).
    pub text: String,
    pub tokens: Vec<String>,
    /// 1-based line in the input.
    pub line: usize,
}

/// A set or map: its elements' key parts and, for a map, each element's verdict tokens or value parts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NftSet {
    pub elements: Vec<(Vec<String>, Option<Vec<String>>)>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct NftParseError {
    pub line: usize,
    pub message: String,
}

/// Splits a line into words; `{ } , ;` are words of their own, a quoted string is one word.
pub(super) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in text.chars() {
        if quoted {
            cur.push(c);
            if c == '"' {
                quoted = false;
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        match c {
            '"' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.push(c);
                quoted = true;
            }
            '{' | '}' | ',' | ';' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                out.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `dstnat - 10`, `-110`, `filter`: a priority in either form.
fn priority(words: &[String]) -> Option<i32> {
    let base = |w: &str| -> Option<i32> {
        Some(match w {
            "raw" => -300,
            "mangle" => -150,
            "dstnat" => -100,
            "filter" => 0,
            "security" => 50,
            "srcnat" => 100,
            n => n.parse().ok()?,
        })
    };
    let first = base(words.first()?)?;
    match (words.get(1).map(String::as_str), words.get(2)) {
        (Some("+"), Some(n)) => Some(first + n.parse::<i32>().ok()?),
        (Some("-"), Some(n)) => Some(first - n.parse::<i32>().ok()?),
        _ => Some(first),
    }
}

/// `type nat hook prerouting priority dstnat ;` (the words of a chain's spec) -> (hook, priority).
fn hook_of(words: &[String]) -> Option<(String, i32)> {
    let h = words.iter().position(|w| w == "hook")?;
    let p = words.iter().position(|w| w == "priority")?;
    let end = words[p + 1..]
        .iter()
        .position(|w| w == ";" || w == "}")
        .map_or(words.len(), |e| p + 1 + e);
    Some((words.get(h + 1)?.clone(), priority(&words[p + 1..end])?))
}

/// Elements between `{` and its `}`: `a . b [comment "x"] [: verdict]`, separated by `,` or, in a
/// verdict map listing, by nothing after a verdict.
pub(super) fn elements(words: &[String]) -> Vec<(Vec<String>, Option<Vec<String>>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let mut key = Vec::new();
        let mut verdict = None;
        let mut expect_part = true;
        while i < words.len() {
            let w = words[i].as_str();
            match w {
                "," => {
                    i += 1;
                    break;
                }
                "comment" => i += 2,
                "." => {
                    expect_part = true;
                    i += 1;
                }
                ":" => {
                    let takes = usize::from(matches!(
                        words.get(i + 1).map(String::as_str),
                        Some("goto" | "jump")
                    ));
                    let mut end = (i + 2 + takes).min(words.len());
                    // A data map's value may be a concatenation: `: 10.76.0.5 . 8080`.
                    while words.get(end).map(String::as_str) == Some(".") && end + 1 < words.len() {
                        end += 2;
                    }
                    verdict = Some(words[i + 1..end].iter().filter(|w| *w != ".").cloned().collect());
                    i = end;
                    if words.get(i).map(String::as_str) == Some(",") {
                        i += 1;
                    }
                    break;
                }
                _ if !expect_part => break,
                _ => {
                    key.push(w.to_string());
                    expect_part = false;
                    i += 1;
                }
            }
        }
        if !key.is_empty() {
            out.push((key, verdict));
        }
    }
    out
}

/// The words from an opening `{` (at `start`) to its matching `}`, exclusive; and the index after.
fn braced(words: &[String], start: usize) -> (&[String], usize) {
    let mut depth = 0;
    for (i, w) in words.iter().enumerate().skip(start) {
        match w.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return (&words[start + 1..i], i + 1);
                }
            }
            _ => {}
        }
    }
    (&words[(start + 1).min(words.len())..], words.len())
}

pub fn parse(text: &str) -> Result<NftRuleset, NftParseError> {
    if text.lines().any(|l| l.trim_start().starts_with("table ")) {
        parse_listing(text)
    } else {
        parse_commands(text)
    }
}

/// `nft -f` input: one command per line.
fn parse_commands(text: &str) -> Result<NftRuleset, NftParseError> {
    let mut rs = NftRuleset::default();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let words = tokens(t);
        let err = |message: &str| NftParseError {
            line: line_no,
            message: message.to_string(),
        };
        // add <kind> <family> <table> <name> ...
        let (Some(verb), Some(kind)) = (words.first(), words.get(1)) else {
            continue;
        };
        if verb != "add" {
            continue;
        }
        let name = words.get(4).cloned().unwrap_or_default();
        match kind.as_str() {
            "table" => {}
            "chain" => {
                if name.is_empty() {
                    return Err(err("chain without a name"));
                }
                let hook = hook_of(&words[5..]);
                rs.chains.entry(name).or_default().hook = hook;
            }
            "set" | "map" => {
                rs.sets.entry(name).or_default();
            }
            "rule" => {
                let Some(chain) = rs.chains.get_mut(&name) else {
                    return Err(err(&format!("rule for undeclared chain {name:?}")));
                };
                let body = t
                    .splitn(6, ' ')
                    .nth(5)
                    .ok_or_else(|| err("rule without a body"))?;
                chain.rules.push(NftRule {
                    text: body.to_string(),
                    tokens: tokens(body),
                    line: line_no,
                });
            }
            "element" => {
                let Some(open) = words.iter().position(|w| w == "{") else {
                    return Err(err("element without { }"));
                };
                let (inner, _) = braced(&words, open);
                let set = rs.sets.entry(name).or_default();
                set.elements.extend(elements(inner));
            }
            _ => {}
        }
    }
    Ok(rs)
}

/// `nft list table` output: blocks.
fn parse_listing(text: &str) -> Result<NftRuleset, NftParseError> {
    let mut rs = NftRuleset::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    // (kind, name) of the open block.
    let mut block: Option<(String, String)> = None;
    while i < lines.len() {
        let line_no = i + 1;
        let t = lines[i].trim();
        i += 1;
        if t.is_empty() {
            continue;
        }
        let words = tokens(t);
        match (
            words.first().map(String::as_str),
            words.get(2).map(String::as_str),
        ) {
            (Some("table"), _) => continue,
            (Some(kind @ ("chain" | "set" | "map")), Some("{")) => {
                let name = words[1].clone();
                if kind == "chain" {
                    rs.chains.entry(name.clone()).or_default();
                } else {
                    rs.sets.entry(name.clone()).or_default();
                }
                block = Some((kind.to_string(), name));
                continue;
            }
            (Some("}"), _) => {
                block = None;
                continue;
            }
            _ => {}
        }
        let Some((kind, name)) = &block else {
            continue;
        };
        if kind == "chain" {
            let Some(chain) = rs.chains.get_mut(name) else {
                continue;
            };
            if words.first().map(String::as_str) == Some("type") {
                chain.hook = hook_of(&words);
            } else if words.first().map(String::as_str) != Some("comment") {
                chain.rules.push(NftRule {
                    text: t.to_string(),
                    tokens: words,
                    line: line_no,
                });
            }
            continue;
        }
        if words.first().map(String::as_str) == Some("elements") {
            // The element list may span lines: gather to the closing brace.
            let mut all = words;
            while all.iter().filter(|w| *w == "{").count() > all.iter().filter(|w| *w == "}").count()
                && i < lines.len()
            {
                all.extend(tokens(lines[i]));
                i += 1;
            }
            let Some(open) = all.iter().position(|w| w == "{") else {
                return Err(NftParseError {
                    line: line_no,
                    message: "elements without { }".into(),
                });
            };
            let (inner, _) = braced(&all, open);
            if let Some(set) = rs.sets.get_mut(name) {
                set.elements.extend(elements(inner));
            }
        }
    }
    Ok(rs)
}
