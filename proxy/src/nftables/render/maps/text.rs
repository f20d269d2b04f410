//! The maps layout's table as `nft -f` input: the table, chains, sets and maps declared, then the
//! rules, then the elements (the same order as upstream's layout, so it loads as one transaction).

use std::fmt::Write as _;

use super::{MapsElement, MapsSet, MapsTable};
use crate::nftables::render::family_word;
use crate::nftables::render::naming::TABLE;
use crate::nftables::render::text::{quote, write_chain, write_rule};

impl MapsTable {
    pub fn text(&self) -> String {
        let fam = family_word(self.family);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "add table {fam} {TABLE} {{ comment {} ; }}",
            quote("rules for kube-proxy")
        );
        for c in &self.chains {
            write_chain(&mut out, fam, c);
        }
        for s in &self.sets {
            write_set(&mut out, fam, s);
        }
        for c in &self.chains {
            for r in &c.rules {
                write_rule(&mut out, fam, &c.name, r);
            }
        }
        for e in &self.elements {
            write_element(&mut out, fam, e);
        }
        out
    }
}

fn write_set(out: &mut String, fam: &str, s: &MapsSet) {
    let kind = if s.is_map { "map" } else { "set" };
    let _ = write!(out, "add {kind} {fam} {TABLE} {} {{ {} ;", s.name, s.decl);
    if !s.flags.is_empty() {
        let _ = write!(out, " flags {} ;", s.flags.join(","));
    }
    out.push_str(" }\n");
}

/// `add element ... { key [: value] }` appended to `out`.
pub(super) fn write_element(out: &mut String, fam: &str, e: &MapsElement) {
    let _ = write!(out, "add element {fam} {TABLE} {} {{ {}", e.set, e.key);
    if let Some((ip, port)) = e.value {
        let _ = write!(out, " : {ip} . {port}");
    } else if let Some(v) = e.set.verdict_text() {
        let _ = write!(out, " : {v}");
    }
    out.push_str(" }\n");
}
