//! Pure renderer: ProxyState + node facts + config -> the KUBE-* chains of one IP family.
//!
//! `render` builds the whole desired ruleset as plain data ([`Rendered`]); `payload` turns it into
//! iptables-restore payloads, [`Rendered::partial_payload`] only what changed against the digests of
//! the last sync (`diff`); `batch` splits a sync into payloads, `restore_text` writes their text and
//! `jumps` holds the rules from built-in chains.
//! The daemon renders through [`Renderer`] (`cache`), which keeps a [`Summary`] per port (digests,
//! not rule text) between syncs.

mod batch;
mod cache;
mod diff;
mod dispatch;
mod endpoints;
mod jumps;
pub mod naming;
mod payload;
mod plan;
mod port_chains;
mod restore_text;
mod service;
mod summary;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

pub use batch::{DEFAULT_RESTORE_MAX_CHAINS, FRESH_TABLE_MAX_CHAINS, PayloadStats, Payloads, UNBATCHED};
pub use cache::{Done, Pass, Renderer};
pub use diff::ChainDigests;
pub use jumps::{Jump, ensured_jumps, jumps};
pub use payload::FullOptions;
pub use service::ServiceRules;
pub use summary::Summary;

use crate::config::RenderConfig;
use crate::model::{NodeFacts, ProxyState, ServicePortName};
use crate::sync::{LARGE_CLUSTER_ENDPOINTS, RenderStats};
use naming::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Filter,
    Nat,
}

impl Table {
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Filter => "filter",
            Table::Nat => "nat",
        }
    }
}

/// A chain and its rules; each rule is the text after `-A <chain> `.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub name: String,
    pub rules: Vec<String>,
}

/// The complete desired state of svcnet's chains for one family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    pub family: crate::model::Family,
    /// filter chains in payload order.
    pub filter: Vec<Arc<Chain>>,
    /// nat chains in payload order: the `shared` chains every service uses (KUBE-SERVICES,
    /// KUBE-NODEPORTS, KUBE-POSTROUTING, KUBE-MARK-MASQ, KUBE-DST-*), then each service port's own.
    pub nat: Vec<Arc<Chain>>,
    /// How many leading `nat` chains are shared.
    pub shared: usize,
    /// Each service port's rules, shared with the render cache (partial syncs skip them by pointer).
    pub services: BTreeMap<ServicePortName, Arc<ServiceRules>>,
    pub stats: RenderStats,
}

impl Rendered {
    pub fn chain(&self, table: Table, name: &str) -> Option<&Chain> {
        let chains = match table {
            Table::Filter => &self.filter,
            Table::Nat => &self.nat,
        };
        chains.iter().find(|c| c.name == name).map(AsRef::as_ref)
    }

    /// The nat chains a service port owns, in payload order (empty for an unknown port).
    pub fn owned_chains(&self, port: &ServicePortName) -> Vec<&str> {
        self.services
            .get(port)
            .map(|r| r.chains.iter().map(|c| c.name.as_str()).collect())
            .unwrap_or_default()
    }

    /// Every service port's own nat chains (built on demand: for `explain`, tools and tests).
    pub fn owners(&self) -> BTreeMap<ServicePortName, Vec<String>> {
        self.services
            .iter()
            .map(|(k, r)| (k.clone(), r.chains.iter().map(|c| c.name.clone()).collect()))
            .collect()
    }

    /// The nat chains every service uses.
    pub fn shared_nat(&self) -> &[Arc<Chain>] {
        self.nat.get(..self.shared).unwrap_or(&self.nat)
    }
}

/// A comment argument exactly as upstream writes it: bare when it is one plain word (`ns/name:port`),
/// double-quoted otherwise. Quotes and backslashes cannot occur in validated names, but are replaced
/// anyway so no input text can end the comment; xt_comment stores at most 255 bytes.
pub fn comment(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .take(250)
        .collect();
    let plain = !clean.is_empty()
        && clean
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b':' | b'.' | b'_' | b'-'));
    if plain { clean } else { format!("\"{clean}\"") }
}

/// Renders the whole ruleset from scratch (the daemon's [`Renderer`] renders only what changed).
pub fn render(state: &ProxyState, node: &NodeFacts, cfg: &RenderConfig) -> Rendered {
    let ctx = plan::Ctx::new(state, node, cfg);
    let per_service = state
        .services
        .iter()
        .map(|(name, svc)| (name.clone(), Arc::new(ctx.render(state, name, svc))))
        .collect();
    let per_service: Vec<(ServicePortName, Arc<ServiceRules>)> = per_service;
    let mut out = assemble(
        per_service.iter().map(|(_, r)| r.as_ref()),
        node,
        cfg,
        ctx.total_endpoints,
    );
    out.services = per_service.into_iter().collect();
    out
}

/// The shared and filter chains from every port's rules, then the ports' own chains (`services` is
/// left to the caller).
fn assemble<'a>(
    per_service: impl IntoIterator<Item = &'a ServiceRules>,
    node: &NodeFacts,
    cfg: &RenderConfig,
    total_endpoints: usize,
) -> Rendered {
    let mut out = Rendered {
        family: cfg.family,
        ..Default::default()
    };
    out.stats.endpoints = total_endpoints;
    let mut lines = SharedLines::default();
    let mut service_chains = Vec::new();
    for rules in per_service {
        out.stats.services += 1;
        lines.add(rules);
        out.stats.no_local_internal += usize::from(rules.no_local_internal);
        out.stats.no_local_external += usize::from(rules.no_local_external);
        service_chains.extend(rules.chains.iter().cloned());
    }
    let SharedLines {
        f_services,
        f_external,
        f_nodeports,
        f_firewall,
        n_nodeports,
        dispatch,
    } = lines;

    let mut filter = vec![
        chain(KUBE_SERVICES, f_services),
        chain(KUBE_EXTERNAL_SERVICES, f_external),
        forward_chain(cfg),
        chain(KUBE_NODEPORTS, f_nodeports),
        chain(KUBE_PROXY_FIREWALL, f_firewall),
    ];
    if cfg.effective_localhost_nodeports() {
        filter.push(chain(KUBE_FIREWALL, vec![
            "-m comment --comment \"block incoming localnet connections\" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP".into(),
        ]));
    }

    // KUBE-SERVICES: flat list or dispatch tree, then the NodePorts jump last.
    let (mut n_services, dst_chains) = dispatch::build(dispatch, cfg);
    n_services.rules.extend(nodeports_jumps(node, cfg));

    out.filter = filter.into_iter().map(Arc::new).collect();
    out.nat = [
        n_services,
        chain(KUBE_NODEPORTS, n_nodeports),
        postrouting_chain(cfg),
        mark_masq_chain(cfg),
    ]
    .into_iter()
    .chain(dst_chains)
    .map(Arc::new)
    .collect();
    out.shared = out.nat.len();
    out.nat.extend(service_chains);
    out
}

/// Every port's lines in the shared chains, in port order.
#[derive(Default)]
struct SharedLines {
    f_services: Vec<String>,
    f_external: Vec<String>,
    f_nodeports: Vec<String>,
    f_firewall: Vec<String>,
    n_nodeports: Vec<String>,
    /// nat KUBE-SERVICES rules with their destinations, before dispatch arranges them.
    dispatch: Vec<(IpAddr, String)>,
}

impl SharedLines {
    fn add(&mut self, rules: &ServiceRules) {
        self.f_services.extend(rules.filter_services.iter().cloned());
        self.f_external.extend(rules.filter_external.iter().cloned());
        self.f_nodeports.extend(rules.filter_nodeports.iter().cloned());
        self.f_firewall.extend(rules.filter_firewall.iter().cloned());
        self.n_nodeports.extend(rules.nat_nodeports.iter().cloned());
        self.dispatch.extend(rules.nat_services.iter().cloned());
    }
}

fn chain(name: &str, rules: Vec<String>) -> Chain {
    Chain {
        name: name.into(),
        rules,
    }
}

/// filter KUBE-FORWARD: drop invalid conntrack state (unless --conntrack-tcp-be-liberal), accept
/// marked service traffic and its replies.
fn forward_chain(cfg: &RenderConfig) -> Chain {
    let mark = cfg.masq_mark();
    let mut rules = Vec::new();
    if !cfg.conntrack_tcp_liberal {
        let acct = if cfg.nfacct {
            format!(" -m nfacct --nfacct-name {NFACCT_CT_STATE_INVALID_DROPPED}")
        } else {
            String::new()
        };
        rules.push(format!("-m conntrack --ctstate INVALID{acct} -j DROP"));
    }
    rules.push(format!(
        "-m comment --comment \"kubernetes forwarding rules\" -m mark --mark {mark}/{mark} -j ACCEPT"
    ));
    rules.push("-m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT".into());
    chain(KUBE_FORWARD, rules)
}

/// nat KUBE-POSTROUTING: masquerade what KUBE-MARK-MASQ marked, clearing the mark.
fn postrouting_chain(cfg: &RenderConfig) -> Chain {
    let mark = cfg.masq_mark();
    chain(
        KUBE_POSTROUTING,
        vec![
            format!("-m mark ! --mark {mark}/{mark} -j RETURN"),
            format!("-j MARK --xor-mark {mark}"),
            format!(
                "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE{}",
                if cfg.random_fully { " --random-fully" } else { "" }
            ),
        ],
    )
}

/// KUBE-MARK-MASQ: service chains jump here to have a connection masqueraded.
fn mark_masq_chain(cfg: &RenderConfig) -> Chain {
    Chain {
        name: KUBE_MARK_MASQ.into(),
        rules: vec![format!("-j MARK --or-mark {}", cfg.masq_mark())],
    }
}

fn nodeports_jumps(node: &NodeFacts, cfg: &RenderConfig) -> Vec<String> {
    let c = "-m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\"";
    let npa = &cfg.nodeport_addresses;
    if npa.match_all(cfg.family) {
        let extra = match cfg.family {
            crate::model::Family::V6 => " ! -d ::1/128",
            crate::model::Family::V4 if !cfg.effective_localhost_nodeports() => " ! -d 127.0.0.0/8",
            _ => "",
        };
        return vec![format!(
            "{c} -m addrtype --dst-type LOCAL{extra} -j {KUBE_NODEPORTS}"
        )];
    }
    npa.node_ips(cfg.family, &node.ips, &node.interface_ips)
        .into_iter()
        .filter(|ip| !ip.is_loopback() || cfg.effective_localhost_nodeports())
        .map(|ip| format!("{c} -d {ip} -j {KUBE_NODEPORTS}"))
        .collect()
}
