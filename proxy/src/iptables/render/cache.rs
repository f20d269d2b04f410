//! The daemon's incremental render. Between syncs most service ports do not change, so the
//! [`Renderer`] keeps, for what the kernel holds, each port's input hash, its lines in the shared chains
//! and the names and digests of its own chains, never their rule text (at 10k services that text
//! dwarfs the rest: docs/proxy-daemon.md, "What happens", incremental sync). A partial sync renders only the ports whose inputs changed and writes only
//! the chains whose digest changed; a full sync renders every port again. Either way a [`Pass`] renders
//! ports while the caller restores batch after batch, so the whole payload never exists at once.

use std::collections::{BTreeSet, HashMap, HashSet, btree_map};
use std::iter::Peekable;
use std::sync::Arc;

use super::batch::{Batcher, ChainChanges};
use super::diff::digest;
use super::naming::KUBE_MARK_MASQ;
use super::plan::Ctx;
use super::summary::{Inputs, Summary};
use super::{Chain, Payloads, RenderStats, Table, assemble, mark_masq_chain};
use crate::config::RenderConfig;
use crate::model::{Endpoints, NodeFacts, ProxyState, ServicePort, ServicePortName};

/// What the kernel holds as of the last successful sync, without rule text.
#[derive(Debug, Default)]
pub struct Renderer {
    /// Everything besides a port's own inputs that its rules depend on (config, node facts,
    /// large-cluster mode); when it changes every port is rendered again.
    context: String,
    ports: HashMap<ServicePortName, Arc<Summary>>,
    /// Digests of the filter chains and the shared nat chains.
    shared: HashMap<(Table, String), u64>,
}

/// What a finished pass rendered; [`Renderer::commit`] it once every payload is in the kernel.
#[derive(Debug)]
pub struct Done {
    context: String,
    ports: HashMap<ServicePortName, Arc<Summary>>,
    shared: HashMap<(Table, String), u64>,
    pub stats: RenderStats,
    /// Rules of the whole ruleset (not only of this sync's payloads).
    pub filter_rules: usize,
    pub nat_rules: usize,
}

impl Renderer {
    /// Starts a sync of `state`. `full`: every chain is written (the kernel's content is not trusted);
    /// otherwise only what differs from the last committed sync.
    pub fn begin<'a>(
        &'a self,
        state: &'a ProxyState,
        node: &'a NodeFacts,
        cfg: &'a RenderConfig,
        full: bool,
        max_chains: usize,
    ) -> Pass<'a> {
        let ctx = Ctx::new(state, node, cfg);
        let context = format!("{cfg:?}|{node:?}|{}", ctx.large_cluster);
        let mark = mark_masq_chain(cfg);
        let mark_changed = self.shared.get(&(Table::Nat, KUBE_MARK_MASQ.to_string())) != Some(&digest(&mark));
        Pass {
            same_context: context == self.context,
            before: self,
            state,
            ctx,
            context,
            full,
            ports: state.services.iter(),
            endpoints: state.endpoints.iter().peekable(),
            next: HashMap::with_capacity(state.services.len()),
            deletes: Vec::new(),
            batcher: Batcher::new(max_chains, (full || mark_changed).then_some(mark)),
        }
    }

    /// Records that a pass is in the kernel.
    pub fn commit(&mut self, done: Done) {
        self.context = done.context;
        self.ports = done.ports;
        self.shared = done.shared;
    }

    /// The committed summary of a port.
    pub fn summary(&self, port: &ServicePortName) -> Option<&Summary> {
        self.ports.get(port).map(AsRef::as_ref)
    }

    /// What a partial sync deletes: (filter, nat) chains the last sync wrote and this one did not
    /// render, given this sync's shared-chain `digests` and port summaries.
    fn gone(
        &self,
        digests: &HashMap<(Table, String), u64>,
        ports: &HashMap<ServicePortName, Arc<Summary>>,
    ) -> (Vec<String>, Vec<String>) {
        let gone = |t: Table| -> Vec<String> {
            self.shared
                .keys()
                .filter(|(bt, n)| *bt == t && !digests.contains_key(&(t, n.clone())))
                .map(|(_, n)| n.clone())
                .collect()
        };
        let mut nat = gone(Table::Nat);
        for (name, old) in &self.ports {
            if !ports.contains_key(name) {
                nat.extend(old.chains().map(|(n, _)| n.to_string()));
            }
        }
        (gone(Table::Filter), nat)
    }
}

/// Names of service chains a pass rendered.
pub struct OwnChains<'a>(Vec<&'a str>);

impl OwnChains<'_> {
    pub fn contains(&self, name: &str) -> bool {
        self.0.binary_search(&name).is_ok()
    }
}

/// One sync in progress: renders service ports as the caller asks for payloads.
pub struct Pass<'a> {
    before: &'a Renderer,
    state: &'a ProxyState,
    ctx: Ctx<'a>,
    context: String,
    full: bool,
    /// Whether the config and node facts are those of the last sync (summaries can be kept).
    same_context: bool,
    ports: btree_map::Iter<'a, ServicePortName, Arc<ServicePort>>,
    endpoints: Peekable<btree_map::Iter<'a, ServicePortName, Endpoints>>,
    next: HashMap<ServicePortName, Arc<Summary>>,
    /// Own chains of changed ports that they no longer have.
    deletes: Vec<String>,
    batcher: Batcher,
}

impl<'a> Pass<'a> {
    /// The next batch of service chains to restore, rendering ports until one is ready. `None` once
    /// every port is rendered; the rest comes from [`Pass::finish`].
    pub fn next_batch(&mut self) -> Option<String> {
        loop {
            if let Some(text) = self.batcher.take_ready() {
                return Some(text);
            }
            let (name, svc) = self.ports.next()?;
            self.port(name, svc);
        }
    }

    /// The endpoints of `name`, walking the endpoints map in step with the services map (both are
    /// sorted by port name, so no lookup per port).
    fn endpoints(&mut self, name: &ServicePortName) -> Option<&'a Endpoints> {
        while self.endpoints.peek().is_some_and(|(k, _)| *k < name) {
            self.endpoints.next();
        }
        self.endpoints.next_if(|(k, _)| *k == name).map(|(_, e)| e)
    }

    fn port(&mut self, name: &'a ServicePortName, svc: &'a Arc<ServicePort>) {
        let prior = self.before.ports.get(name);
        let inputs = Inputs::new(svc, self.endpoints(name), prior.map(AsRef::as_ref));
        let old = prior.filter(|_| !self.full);
        if let Some(old) = old.filter(|o| self.same_context && o.inputs == inputs.hash) {
            self.next.insert(name.clone(), old.rebased(&inputs));
            return;
        }
        let (summary, chains) = Summary::new(&inputs, self.ctx.render(self.state, name, svc));
        match old {
            None => {
                self.batcher.group(chains.iter().map(AsRef::as_ref));
                // A full sync writes every port, but an unchanged one keeps its summary: the old and
                // new summaries of every port would otherwise both be held until the sync ends.
                let unchanged = |p: &&Arc<Summary>| {
                    self.same_context && p.inputs == inputs.hash && p.digests == summary.digests
                };
                if let Some(p) = prior.filter(unchanged) {
                    self.next.insert(name.clone(), p.rebased(&inputs));
                    return;
                }
            }
            Some(old) => {
                let was: HashMap<&str, u64> = old.chains().collect();
                let changed = chains
                    .iter()
                    .zip(summary.digests.iter())
                    .filter(|(c, d)| was.get(c.name.as_str()) != Some(*d))
                    .map(|(c, _)| c.as_ref());
                self.batcher.group(changed);
                let now: HashSet<&str> = summary.names.lines().collect();
                self.deletes.extend(
                    old.chains()
                        .map(|(n, _)| n)
                        .filter(|n| !now.contains(n))
                        .map(str::to_string),
                );
            }
        }
        self.next.insert(name.clone(), Arc::new(summary));
    }

    /// The own chains of every port rendered so far (all of them once [`Pass::next_batch`] returned
    /// `None`), sorted (exactly sized: ~100k names at 10k services).
    pub fn own_chains(&self) -> OwnChains<'_> {
        let mut names = Vec::with_capacity(self.next.values().map(|s| s.digests.len()).sum());
        names.extend(self.next.values().flat_map(|s| s.names.lines()));
        names.sort_unstable();
        OwnChains(names)
    }

    /// Of the svcnet chains a full sync found in the kernel, those it did not render (a partial sync
    /// deletes nothing it did not write itself).
    fn unrendered<'s>(&self, stale: &'s BTreeSet<String>) -> Vec<&'s String> {
        if !self.full || stale.is_empty() {
            return Vec::new();
        }
        let own = self.own_chains();
        stale.iter().filter(|n| !own.contains(n)).collect()
    }

    /// Renders the ports left and writes the rest: service chains not yet taken, then the shared and
    /// filter chains that changed, and every deletion. `canaries`: declare KUBE-PROXY-CANARY.
    /// `stale`: svcnet's nat chains found in the kernel (a full sync reads them with iptables-save);
    /// those not rendered now are deleted. The payloads are empty when nothing changed.
    pub fn finish(mut self, canaries: bool, stale: &BTreeSet<String>) -> (Payloads, Done) {
        while let Some((name, svc)) = self.ports.next() {
            self.port(name, svc);
        }
        let stale = self.unrendered(stale);
        let ports = self.next;
        // Service rules without chains: assemble builds only the shared and filter chains.
        let in_order = self.state.services.keys().filter_map(|k| ports.get(k));
        let shared = assemble(
            in_order.map(|s| s.rules.as_ref()),
            self.ctx.node,
            self.ctx.cfg,
            self.ctx.total_endpoints,
        );

        let tables = [(Table::Filter, &shared.filter), (Table::Nat, &shared.nat)];
        let digests: HashMap<(Table, String), u64> = tables
            .iter()
            .flat_map(|(t, chains)| chains.iter().map(|c| ((*t, c.name.clone()), digest(c))))
            .collect();
        let (before, full) = (self.before, self.full);
        let changed = |t: Table, c: &Arc<Chain>| {
            full || before.shared.get(&(t, c.name.clone())) != digests.get(&(t, c.name.clone()))
        };
        let mut filter_deletes = Vec::new();
        let mut nat_deletes = self.deletes;
        if full {
            let shared_nat: HashSet<&str> = shared.nat.iter().map(|c| c.name.as_str()).collect();
            nat_deletes.extend(
                stale
                    .into_iter()
                    .filter(|n| !shared_nat.contains(n.as_str()))
                    .cloned(),
            );
        } else {
            let (filter, nat) = before.gone(&digests, &ports);
            filter_deletes = filter;
            nat_deletes.extend(nat);
        }
        let closing = self.batcher.close(
            ChainChanges {
                filter: shared
                    .filter
                    .iter()
                    .filter(|c| changed(Table::Filter, c))
                    .map(AsRef::as_ref)
                    .collect(),
                filter_deletes: filter_deletes.iter().map(String::as_str).collect(),
                nat_shared: shared
                    .nat
                    .iter()
                    .filter(|c| changed(Table::Nat, c))
                    .map(AsRef::as_ref)
                    .collect(),
                nat_deletes: nat_deletes.iter().map(String::as_str).collect(),
                nat_owned: Vec::new(),
            },
            &[],
            canaries,
            full,
        );
        let rules = |chains: &[Arc<Chain>]| chains.iter().map(|c| c.rules.len()).sum::<usize>();
        let (filter_rules, shared_nat_rules) = (rules(&shared.filter), rules(&shared.nat));
        let stats = shared.stats.clone();
        drop(shared); // its text is in `closing` now
        let payloads = closing.write();
        let done = Done {
            context: self.context,
            filter_rules,
            nat_rules: shared_nat_rules + ports.values().map(|s| s.rule_count).sum::<usize>(),
            ports,
            shared: digests,
            stats,
        };
        (payloads, done)
    }
}

#[cfg(test)]
mod tests;
