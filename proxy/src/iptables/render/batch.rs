//! Batching: which chains of one sync go into which iptables-restore payload (see [`Payloads`] for
//! why there are several), in order. The text itself is written by [`super::restore_text`].

use super::jumps::Jump;
use super::naming::KUBE_MARK_MASQ;
use super::restore_text::TableText;
use super::{Chain, Table};

/// What a payload holds, for metrics and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PayloadStats {
    pub filter_rules: usize,
    pub nat_rules: usize,
    pub chains_written: usize,
    pub chains_deleted: usize,
}

/// The chains one sync writes and deletes, before they become text: from a complete render diffed
/// against digests (`diff.rs`), a complete render written whole (`payload.rs`), or the render cache's
/// changed shared chains and deletions (its changed ports' chains go to [`Batcher::group`] as they
/// are rendered). `nat_owned` holds each service port's chains as a group (whole services travel
/// together when a sync is batched).
#[derive(Default)]
pub(super) struct ChainChanges<'a> {
    pub filter: Vec<&'a Chain>,
    pub filter_deletes: Vec<&'a str>,
    /// nat chains shared by all services (KUBE-SERVICES, KUBE-NODEPORTS, KUBE-DST-*, ...).
    pub nat_shared: Vec<&'a Chain>,
    pub nat_owned: Vec<Vec<&'a Chain>>,
    pub nat_deletes: Vec<&'a str>,
}

impl ChainChanges<'_> {
    fn chains(&self) -> usize {
        self.filter.len() + self.nat_shared.len() + self.nat_owned.iter().map(Vec::len).sum::<usize>()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.chains() == 0 && self.filter_deletes.is_empty() && self.nat_deletes.is_empty()
    }
}

/// Turns the chains of one sync into payloads as they come (see [`Payloads`] for why several): service
/// chains are collected a whole service port at a time, and once they reach `max_chains` they leave as
/// a batch (the first batch also declares KUBE-MARK-MASQ, which service chains jump to, when the sync
/// writes it). The caller takes each batch as soon as it is ready, so a large sync never holds more
/// than one batch of text; [`Batcher::close`] writes the rest.
pub(super) struct Batcher {
    max_chains: usize,
    mark_masq: Option<Chain>,
    owned: TableText,
    ready: Vec<String>,
    batched: bool,
    stats: PayloadStats,
}

impl Batcher {
    /// `mark_masq`: KUBE-MARK-MASQ when this sync writes it.
    pub(super) fn new(max_chains: usize, mark_masq: Option<Chain>) -> Batcher {
        Batcher {
            max_chains,
            mark_masq,
            owned: TableText::default(),
            ready: Vec::new(),
            batched: false,
            stats: PayloadStats::default(),
        }
    }

    /// One service port's chains; they are never split over two payloads.
    pub(super) fn group<'c>(&mut self, chains: impl IntoIterator<Item = &'c Chain>) {
        let pending = self.owned.chains + usize::from(!self.batched && self.mark_masq.is_some());
        if pending > 0 && pending >= self.max_chains {
            self.flush();
        }
        for c in chains {
            self.owned.chain(c);
        }
    }

    fn flush(&mut self) {
        let mut t = TableText::default();
        if !self.batched
            && let Some(m) = &self.mark_masq
        {
            t.chain(m);
        }
        t.append(std::mem::take(&mut self.owned));
        self.batched = true;
        self.count(&t, Table::Nat);
        let mut s = String::new();
        t.write(Table::Nat, &mut s);
        self.ready.push(s);
    }

    fn count(&mut self, t: &TableText, table: Table) {
        self.stats.chains_written += t.chains;
        self.stats.chains_deleted += t.deletes;
        match table {
            Table::Filter => self.stats.filter_rules += t.rule_count,
            Table::Nat => self.stats.nat_rules += t.rule_count,
        }
    }

    /// The oldest batch not yet taken.
    pub(super) fn take_ready(&mut self) -> Option<String> {
        (!self.ready.is_empty()).then(|| self.ready.remove(0))
    }

    /// Takes what is left: `last`'s service chains (grouped like [`Batcher::group`]'s), a last batch
    /// of service chains when batching, then the tables of the payload with the mangle canary, the
    /// filter table, the shared nat chains (KUBE-MARK-MASQ is skipped when a batch already wrote it)
    /// and every deletion; `jumps` go into their tables. `full`: write both tables even when one has
    /// nothing to change (a full sync names every chain). The result owns its text, so the caller can
    /// drop the chains before [`Closing::write`].
    pub(super) fn close(
        mut self,
        last: ChainChanges<'_>,
        jumps: &[Jump],
        canaries: bool,
        full: bool,
    ) -> Closing {
        for group in last.nat_owned {
            self.group(group);
        }
        if self.batched && self.owned.chains > 0 {
            self.flush();
        }
        let start = |table: Table, chains: &[&Chain]| {
            let mut t = TableText::with_canary(canaries);
            t.reserve(chains);
            for j in jumps.iter().filter(|j| j.table == table.as_str()) {
                t.jump(j);
            }
            t
        };
        let mut filter = start(Table::Filter, &last.filter);
        for c in &last.filter {
            filter.chain(c);
        }
        for d in &last.filter_deletes {
            filter.delete(d);
        }
        let shared: Vec<&Chain> = last
            .nat_shared
            .iter()
            .copied()
            .filter(|c| !(self.batched && c.name == KUBE_MARK_MASQ))
            .collect();
        let mut nat = start(Table::Nat, &shared);
        for c in shared {
            nat.chain(c);
        }
        if !self.batched {
            nat.append(std::mem::take(&mut self.owned));
        }
        for d in &last.nat_deletes {
            nat.delete(d);
        }
        Closing {
            batcher: self,
            filter,
            nat,
            canaries,
            full,
        }
    }
}

/// The last payload of a sync, as table texts not yet joined (see [`Batcher::close`]).
pub(super) struct Closing {
    batcher: Batcher,
    filter: TableText,
    nat: TableText,
    canaries: bool,
    full: bool,
}

impl Closing {
    /// The payloads not yet taken, in order.
    pub(super) fn write(self) -> Payloads {
        let Closing {
            mut batcher,
            filter,
            nat,
            canaries,
            full,
        } = self;
        let mut text = String::new();
        if canaries {
            text.push_str("*mangle\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n");
        }
        for (table, t) in [(Table::Filter, filter), (Table::Nat, nat)] {
            // A full payload always names both tables; a partial one only those it changes.
            if t.is_empty() && !full {
                continue;
            }
            batcher.count(&t, table);
            t.write(table, &mut text);
        }
        if !text.is_empty() {
            batcher.ready.push(text);
        }
        Payloads {
            texts: batcher.ready,
            stats: batcher.stats,
        }
    }
}

/// One or more iptables-restore payloads, applied in order.
///
/// Why several: iptables-nft-restore 1.8.x takes time quadratic in the chains declared in one call
/// (docs/proxy-daemon.md, "What happens", batched restores), so a first sync of 10k services would
/// take minutes in one transaction. Past `max_chains`, each service's own chains
/// (KUBE-SVC/SVL/EXT/FW/SEP/EPG, which only jump among themselves and to KUBE-MARK-MASQ) are written
/// first in batches, a whole service per batch. Until the last payload rewrites KUBE-SERVICES and the
/// dispatch chains they are unreferenced, so a half-applied sync never sends traffic to a half-written
/// service; the last payload also holds the filter table, canaries, jumps and every deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payloads {
    pub texts: Vec<String>,
    pub stats: PayloadStats,
}

impl Payloads {
    /// All payloads as one text (what a single call would restore; for `render` and tests).
    pub fn joined(&self) -> String {
        self.texts.concat()
    }

    pub fn len(&self) -> usize {
        self.texts.iter().map(String::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// No batching: everything in one payload.
pub const UNBATCHED: usize = usize::MAX;

/// `--iptables-restore-max-chains` default: small enough that one iptables-nft call stays well under a
/// second, large enough for a table that already holds a large ruleset, where every call also pays a
/// fixed cost (the restore's chain cache and the kernel's validation of the whole table), so fewer,
/// larger calls win (docs/proxy-daemon.md, "What happens", batch size; docs/BENCHMARKS.md, P4).
pub const DEFAULT_RESTORE_MAX_CHAINS: usize = 5000;

/// Batch size of a full sync into a table svcnet has not written yet (no KUBE-PROXY-CANARY: a fresh node):
/// new chains are unreferenced until the last call, so calls are cheap and only the quadratic cost per
/// call counts; 1000 was the fastest first sync of the sizes svcnet-bench P4 tried (docs/BENCHMARKS.md,
/// "P4: proxy memory (10k services / 100k endpoints)").
pub const FRESH_TABLE_MAX_CHAINS: usize = 1000;

/// Turns changes into payloads: one when small, else service batches and a final payload.
pub(super) fn batch(
    changes: ChainChanges<'_>,
    jumps: &[Jump],
    canaries: bool,
    full: bool,
    max_chains: usize,
) -> Payloads {
    let mark_masq = changes
        .nat_shared
        .iter()
        .find(|c| c.name == KUBE_MARK_MASQ)
        .map(|c| (*c).clone());
    Batcher::new(max_chains, mark_masq)
        .close(changes, jumps, canaries, full)
        .write()
}
