//! Pure renderer: ProxyState + node facts + config -> the KUBE-* chains of one IP family.
//!
//! `render` builds the whole desired ruleset as plain data ([`Rendered`]); `payload` turns it into
//! iptables-restore payloads, [`Rendered::partial_payload`] only what changed against the digests of
//! the last sync (`diff`); `batch` splits a sync into payloads, `restore_text` writes their text and
//! `jumps` holds the rules from built-in chains.
//! The daemon renders through [`Renderer`], which keeps digests instead of rule text between syncs.

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

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use batch::{DEFAULT_RESTORE_MAX_CHAINS, FRESH_TABLE_MAX_CHAINS, PayloadStats, Payloads, UNBATCHED};
pub use cache::{Done, Pass, Renderer, Summary};
pub use diff::ChainDigests;
pub use jumps::{Jump, ensured_jumps, jumps};
pub use payload::FullOptions;
pub use service::ServiceRules;

use crate::config::RenderConfig;
use crate::model::{NodeFacts, ProxyState, ServicePortName};
use naming::*;

/// Above this many endpoints upstream drops per-endpoint comments ("large cluster mode").
pub const LARGE_CLUSTER_ENDPOINTS: usize = 1000;

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

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenderStats {
    pub services: usize,
    pub endpoints: usize,
    pub no_local_internal: usize,
    pub no_local_external: usize,
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
    let mark = cfg.masq_mark();
    let mut out = Rendered {
        family: cfg.family,
        ..Default::default()
    };
    out.stats.endpoints = total_endpoints;

    // filter table.
    let mut f_services = Chain {
        name: KUBE_SERVICES.into(),
        rules: vec![],
    };
    let mut f_external = Chain {
        name: KUBE_EXTERNAL_SERVICES.into(),
        rules: vec![],
    };
    let mut f_forward = Chain {
        name: KUBE_FORWARD.into(),
        rules: vec![],
    };
    let mut f_nodeports = Chain {
        name: KUBE_NODEPORTS.into(),
        rules: vec![],
    };
    let mut f_firewall = Chain {
        name: KUBE_PROXY_FIREWALL.into(),
        rules: vec![],
    };
    // nat table.
    let mut n_nodeports = Chain {
        name: KUBE_NODEPORTS.into(),
        rules: vec![],
    };
    let n_postrouting = Chain {
        name: KUBE_POSTROUTING.into(),
        rules: vec![
            format!("-m mark ! --mark {mark}/{mark} -j RETURN"),
            format!("-j MARK --xor-mark {mark}"),
            format!(
                "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE{}",
                if cfg.random_fully { " --random-fully" } else { "" }
            ),
        ],
    };
    let n_mark_masq = mark_masq_chain(cfg);

    let mut dispatch_rules = Vec::new();
    let mut service_chains = Vec::new();
    for rules in per_service {
        out.stats.services += 1;
        f_services.rules.extend(rules.filter_services.iter().cloned());
        f_external.rules.extend(rules.filter_external.iter().cloned());
        f_nodeports.rules.extend(rules.filter_nodeports.iter().cloned());
        f_firewall.rules.extend(rules.filter_firewall.iter().cloned());
        n_nodeports.rules.extend(rules.nat_nodeports.iter().cloned());
        dispatch_rules.extend(rules.nat_services.iter().cloned());
        out.stats.no_local_internal += usize::from(rules.no_local_internal);
        out.stats.no_local_external += usize::from(rules.no_local_external);
        service_chains.extend(rules.chains.iter().cloned());
    }

    if !cfg.conntrack_tcp_liberal {
        let acct = if cfg.nfacct {
            format!(" -m nfacct --nfacct-name {NFACCT_CT_STATE_INVALID_DROPPED}")
        } else {
            String::new()
        };
        f_forward
            .rules
            .push(format!("-m conntrack --ctstate INVALID{acct} -j DROP"));
    }
    f_forward.rules.push(format!(
        "-m comment --comment \"kubernetes forwarding rules\" -m mark --mark {mark}/{mark} -j ACCEPT"
    ));
    f_forward
        .rules
        .push("-m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT".into());

    let mut filter = vec![f_services, f_external, f_forward, f_nodeports, f_firewall];
    if cfg.effective_localhost_nodeports() {
        filter.push(Chain {
            name: KUBE_FIREWALL.into(),
            rules: vec![
                "-m comment --comment \"block incoming localnet connections\" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP".into(),
            ],
        });
    }

    // KUBE-SERVICES: flat list or dispatch tree, then the NodePorts jump last.
    let (mut n_services, dst_chains) = dispatch::build(dispatch_rules, cfg);
    n_services.rules.extend(nodeports_jumps(node, cfg));

    out.filter = filter.into_iter().map(Arc::new).collect();
    out.nat = [n_services, n_nodeports, n_postrouting, n_mark_masq]
        .into_iter()
        .chain(dst_chains)
        .map(Arc::new)
        .collect();
    out.shared = out.nat.len();
    out.nat.extend(service_chains);
    out
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
