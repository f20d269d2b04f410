//! Writing iptables-restore text: one table of one payload, section by section (what goes into which
//! payload is decided in [`super::batch`]).

use std::fmt::Write as _;

use super::jumps::Jump;
use super::naming::KUBE_PROXY_CANARY;
use super::{Chain, Table};

/// The text of one table in one payload, built chain by chain. Its sections are written in this order:
/// canary, declarations of written then of deleted chains (declaring flushes, so `-X` finds a deleted chain
/// empty), jumps, rules, deletions.
#[derive(Default)]
pub(super) struct TableText {
    canary: bool,
    decls: String,
    delete_decls: String,
    jumps: String,
    rules: String,
    removes: String,
    pub(super) chains: usize,
    pub(super) rule_count: usize,
    pub(super) deletes: usize,
}

impl TableText {
    /// An empty table that declares KUBE-PROXY-CANARY when `canary`.
    pub(super) fn with_canary(canary: bool) -> TableText {
        TableText {
            canary,
            ..TableText::default()
        }
    }

    /// Room for these chains' declarations and rules, allocated once (the last payload's shared chains
    /// are megabytes at 10k services; growing by doubling would hold up to twice that).
    pub(super) fn reserve(&mut self, chains: &[&Chain]) {
        let decls: usize = chains.iter().map(|c| c.name.len() + 9).sum();
        let rules: usize = chains
            .iter()
            .map(|c| c.rules.iter().map(|r| c.name.len() + r.len() + 5).sum::<usize>())
            .sum();
        self.decls.reserve_exact(decls);
        self.rules.reserve_exact(rules);
    }

    pub(super) fn chain(&mut self, c: &Chain) {
        let _ = writeln!(self.decls, ":{} - [0:0]", c.name);
        for r in &c.rules {
            let _ = writeln!(self.rules, "-A {} {r}", c.name);
        }
        self.chains += 1;
        self.rule_count += c.rules.len();
    }

    pub(super) fn delete(&mut self, name: &str) {
        let _ = writeln!(self.delete_decls, ":{name} - [0:0]");
        let _ = writeln!(self.removes, "-X {name}");
        self.deletes += 1;
    }

    pub(super) fn jump(&mut self, j: &Jump) {
        let _ = writeln!(self.jumps, "-A {} {}", j.chain, j.rule);
    }

    /// Adds `other`'s chains and deletions after this one's.
    pub(super) fn append(&mut self, other: TableText) {
        self.canary |= other.canary;
        self.decls.push_str(&other.decls);
        self.delete_decls.push_str(&other.delete_decls);
        self.jumps.push_str(&other.jumps);
        self.rules.push_str(&other.rules);
        self.removes.push_str(&other.removes);
        self.chains += other.chains;
        self.rule_count += other.rule_count;
        self.deletes += other.deletes;
    }

    pub(super) fn is_empty(&self) -> bool {
        !self.canary && self.jumps.is_empty() && self.chains == 0 && self.deletes == 0
    }

    /// Appends `*table ... COMMIT`.
    pub(super) fn write(&self, table: Table, s: &mut String) {
        let sections = [
            &self.decls,
            &self.delete_decls,
            &self.jumps,
            &self.rules,
            &self.removes,
        ];
        // One exact allocation: a restore batch is megabytes of text.
        s.reserve_exact(sections.iter().map(|p| p.len()).sum::<usize>() + KUBE_PROXY_CANARY.len() + 64);
        let _ = writeln!(s, "*{}", table.as_str());
        if self.canary {
            let _ = writeln!(s, ":{KUBE_PROXY_CANARY} - [0:0]");
        }
        for part in sections {
            s.push_str(part);
        }
        s.push_str("COMMIT\n");
    }
}
