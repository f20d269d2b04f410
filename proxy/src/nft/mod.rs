//! Pure nftables renderer: ProxyState + node facts + config -> upstream kube-proxy's `kube-proxy`
//! table (pkg/proxy/nftables, v1.34) for one IP family, as plain data ([`Ruleset`]) and as `nft -f`
//! input ([`Ruleset::text`]).
//!
//! The structure mirrors the iptables renderer: [`base`] is the fixed part every sync writes
//! (`setupNFTables`: hooked chains, dispatch and check chains, sets and verdict maps), [`service`] one
//! service port's map elements, chains, rules and affinity sets (`syncProxyRules`' loop), and
//! [`render`] puts them together. Endpoint selection reuses the model's `categorize`.

mod base;
pub mod naming;
pub mod netlink;
mod op;
mod service;
mod text;
mod transaction;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::RenderConfig;
use crate::model::{Family, NodeFacts, ProxyState, ServicePortName};

pub use op::Op;
pub use service::ServiceObjects;
pub use text::{COMMENT_MAX, comment_text, quote};
pub use transaction::{Applied, Existing, Stats, Transaction, full, partial};

/// How a base chain hooks into netfilter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hook {
    /// `filter` or `nat`.
    pub kind: &'static str,
    pub hook: &'static str,
    pub priority: i32,
}

/// One rule: the text after `add rule <family> kube-proxy <chain> `, and its comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub text: String,
    pub comment: Option<String>,
}

impl Rule {
    pub fn new(text: impl Into<String>) -> Rule {
        Rule {
            text: text.into(),
            comment: None,
        }
    }
    pub fn commented(text: impl Into<String>, comment: impl Into<String>) -> Rule {
        Rule {
            text: text.into(),
            comment: Some(comment.into()),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub name: String,
    pub hook: Option<Hook>,
    pub comment: Option<String>,
    pub rules: Vec<Rule>,
}

impl Chain {
    pub fn new(name: impl Into<String>) -> Chain {
        Chain {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// A set, or a map when `is_map` (`type` then holds `key : value`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    pub name: String,
    pub is_map: bool,
    pub type_: String,
    pub flags: Vec<&'static str>,
    /// Element timeout in seconds.
    pub timeout: Option<u32>,
    pub comment: Option<String>,
}

/// One element of the set or map `container`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Element {
    pub container: &'static str,
    /// Key parts, joined with ` . `.
    pub key: Vec<String>,
    /// The verdict of a map element.
    pub value: Option<String>,
    pub comment: Option<String>,
}

/// The whole `kube-proxy` table of one family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    pub family: Family,
    /// What every sync writes, whatever the services.
    pub base: base::Base,
    /// Each service port's own objects.
    pub services: BTreeMap<ServicePortName, Arc<ServiceObjects>>,
}

impl Ruleset {
    /// Every chain, by name (a name is unique across base and services).
    pub fn chains(&self) -> Vec<&Chain> {
        let mut all: Vec<&Chain> = self
            .base
            .chains
            .iter()
            .chain(self.services.values().flat_map(|s| s.chains.iter()))
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Every set and map, by name.
    pub fn sets(&self) -> Vec<&Set> {
        let mut all: Vec<&Set> = self
            .base
            .sets
            .iter()
            .chain(self.services.values().flat_map(|s| s.sets.iter()))
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.dedup_by(|a, b| a.name == b.name);
        all
    }

    /// Every element, by container.
    pub fn elements(&self) -> BTreeMap<&str, Vec<&Element>> {
        let mut out: BTreeMap<&str, Vec<&Element>> = BTreeMap::new();
        for e in self
            .base
            .elements
            .iter()
            .chain(self.services.values().flat_map(|s| s.elements.iter()))
        {
            out.entry(e.container).or_default().push(e);
        }
        out
    }

    pub fn chain(&self, name: &str) -> Option<&Chain> {
        self.chains().into_iter().find(|c| c.name == name)
    }
}

/// `ip` or `ip6`: the table family, and the payload keyword of addresses.
pub fn family_word(family: Family) -> &'static str {
    match family {
        Family::V4 => "ip",
        Family::V6 => "ip6",
    }
}

/// `ipv4_addr` or `ipv6_addr`.
pub fn addr_type(family: Family) -> &'static str {
    match family {
        Family::V4 => "ipv4_addr",
        Family::V6 => "ipv6_addr",
    }
}

/// Renders the whole table from scratch.
pub fn render(state: &ProxyState, node: &NodeFacts, cfg: &RenderConfig) -> Ruleset {
    render_reusing(state, node, cfg, None)
}

/// Renders the table, taking a service port's objects from `prev` (rendered from `prev_state` with
/// the same node facts and config) when its Service and endpoints are the very same records: a sync
/// renders only what changed.
pub fn render_reusing(
    state: &ProxyState,
    node: &NodeFacts,
    cfg: &RenderConfig,
    prev: Option<(&ProxyState, &Ruleset)>,
) -> Ruleset {
    let ctx = service::Ctx::new(node, cfg);
    let services = state
        .services
        .iter()
        .map(|(name, svc)| {
            let eps = state.endpoints.get(name);
            let reused = prev.and_then(|(old_state, old)| {
                let same_svc = old_state.services.get(name).is_some_and(|s| Arc::ptr_eq(s, svc));
                let same_eps = match (old_state.endpoints.get(name), eps) {
                    (None, None) => true,
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    _ => false,
                };
                (same_svc && same_eps)
                    .then(|| old.services.get(name).cloned())
                    .flatten()
            });
            let objects =
                reused.unwrap_or_else(|| Arc::new(ctx.render(svc, eps.map_or(&[][..], |e| &e[..]))));
            (name.clone(), objects)
        })
        .collect();
    Ruleset {
        family: cfg.family,
        base: base::base(node, cfg),
        services,
    }
}
