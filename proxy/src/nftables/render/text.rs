//! The ruleset as `nft -f` input, in the order and form knftables' `Fake.Dump()` prints a table
//! (upstream's tests compare that text): the table, every chain, set and map by name, then every
//! chain's rules in order, then the set and map elements. Objects are declared before anything refers
//! to them, so the text loads as one `nft -f` transaction.

use std::fmt::Write as _;

use super::naming::TABLE;
use super::op::Op;
use super::{Chain, Element, Ruleset, Set, family_word};
use crate::model::Family;

/// nft (and knftables' `CommentLengthMax`) accept at most 128 bytes of comment.
pub const COMMENT_MAX: usize = 128;

/// A comment as knftables writes it (Go's `%q`), for text that may come from the API: `"` and `\`
/// and control characters are replaced by `_` (nft's scanner has no escapes, and validated names
/// never contain them), and the text is cut to [`COMMENT_MAX`] bytes so nft accepts it.
pub fn quote(text: &str) -> String {
    format!("\"{}\"", comment_text(text))
}

/// A comment's text as [`quote`] writes it, without the quotes (netlink user data carries it as is).
pub fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut len = 0;
    for c in text.chars() {
        let c = if c == '"' || c == '\\' || c.is_control() {
            '_'
        } else {
            c
        };
        len += c.len_utf8();
        if len > COMMENT_MAX {
            break;
        }
        out.push(c);
    }
    out
}

impl Ruleset {
    /// The whole table as `nft -f` input.
    pub fn text(&self) -> String {
        let fam = family_word(self.family);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "add table {fam} {TABLE} {{ comment {} ; }}",
            quote("rules for kube-proxy")
        );
        let chains = self.chains();
        for c in &chains {
            write_chain(&mut out, fam, c);
        }
        let (sets, maps): (Vec<&Set>, Vec<&Set>) = self.sets().into_iter().partition(|s| !s.is_map);
        for s in sets.iter().chain(maps.iter()) {
            write_set(&mut out, fam, s);
        }
        for c in &chains {
            for r in &c.rules {
                write_rule(&mut out, fam, &c.name, r);
            }
        }
        let elements = self.elements();
        for s in sets.iter().chain(maps.iter()) {
            let mut lines: Vec<String> = elements
                .get(s.name.as_str())
                .into_iter()
                .flatten()
                .map(|e| element_line(fam, e))
                .collect();
            lines.sort();
            lines.dedup();
            for l in lines {
                out.push_str(&l);
            }
        }
        out
    }
}

pub(super) fn write_chain(out: &mut String, fam: &str, c: &Chain) {
    let _ = write!(out, "add chain {fam} {TABLE} {}", c.name);
    if c.hook.is_some() || c.comment.is_some() {
        out.push_str(" {");
        if let Some(h) = &c.hook {
            let _ = write!(out, " type {} hook {} priority {} ;", h.kind, h.hook, h.priority);
        }
        if let Some(comment) = &c.comment {
            let _ = write!(out, " comment {} ;", quote(comment));
        }
        out.push_str(" }");
    }
    out.push('\n');
}

pub(super) fn write_set(out: &mut String, fam: &str, s: &Set) {
    let kind = if s.is_map { "map" } else { "set" };
    let _ = write!(out, "add {kind} {fam} {TABLE} {} {{ type {} ;", s.name, s.type_);
    if !s.flags.is_empty() {
        let _ = write!(out, " flags {} ;", s.flags.join(","));
    }
    if let Some(t) = s.timeout {
        let _ = write!(out, " timeout {t}s ;");
    }
    if let Some(comment) = &s.comment {
        let _ = write!(out, " comment {} ;", quote(comment));
    }
    out.push_str(" }\n");
}

pub(super) fn element_line(fam: &str, e: &Element) -> String {
    let mut l = format!(
        "add element {fam} {TABLE} {} {{ {}",
        e.container,
        e.key.join(" . ")
    );
    if let Some(comment) = &e.comment {
        let _ = write!(l, " comment {}", quote(comment));
    }
    if let Some(v) = &e.value {
        let _ = write!(l, " : {v}");
    }
    l.push_str(" }\n");
    l
}

pub(super) fn write_rule(out: &mut String, fam: &str, chain: &str, r: &super::Rule) {
    let _ = write!(out, "add rule {fam} {TABLE} {chain} {}", r.text);
    if let Some(comment) = &r.comment {
        let _ = write!(out, " comment {}", quote(comment));
    }
    out.push('\n');
}

/// A transaction's steps as `nft -f` input, one line each.
pub fn ops_text(family: Family, ops: &[Op]) -> String {
    let fam = family_word(family);
    let kind = |is_map: bool| if is_map { "map" } else { "set" };
    let mut out = String::new();
    for op in ops {
        match op {
            Op::AddTable => {
                let _ = writeln!(
                    out,
                    "add table {fam} {TABLE} {{ comment {} ; }}",
                    quote("rules for kube-proxy")
                );
            }
            Op::DeleteTable => {
                let _ = writeln!(out, "delete table {fam} {TABLE}");
            }
            Op::AddChain(c) => write_chain(&mut out, fam, c),
            Op::FlushChain(c) => {
                let _ = writeln!(out, "flush chain {fam} {TABLE} {c}");
            }
            Op::DeleteChain(c) => {
                let _ = writeln!(out, "delete chain {fam} {TABLE} {c}");
            }
            Op::AddSet(s) => write_set(&mut out, fam, s),
            Op::FlushSet { name, is_map } => {
                let _ = writeln!(out, "flush {} {fam} {TABLE} {name}", kind(*is_map));
            }
            Op::DeleteSet { name, is_map } => {
                let _ = writeln!(out, "delete {} {fam} {TABLE} {name}", kind(*is_map));
            }
            Op::AddRule { chain, rule } => write_rule(&mut out, fam, chain, rule),
            Op::AddElement(e) => out.push_str(&element_line(fam, e)),
            Op::DeleteElement(e) => {
                let _ = writeln!(
                    out,
                    "delete element {fam} {TABLE} {} {{ {} }}",
                    e.container,
                    e.key.join(" . ")
                );
            }
        }
    }
    out
}
