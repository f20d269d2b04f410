//! Pure nftables renderer: ProxyState + node facts + config -> upstream kube-proxy's `kube-proxy`
//! table (pkg/proxy/nftables, v1.34) for one IP family, as plain data ([`Ruleset`]) and as `nft -f`
//! input ([`Ruleset::text`]).
//!
//! The structure mirrors the iptables renderer: [`base`] is the fixed part every sync writes
//! (`setupNFTables`: hooked chains, dispatch and check chains, sets and verdict maps), [`service`] one
//! service port's map elements, chains, rules and affinity sets (`syncProxyRules`' loop), and
//! [`render`] puts them together. Endpoint selection reuses the model's `categorize`.

mod applied;
mod base;
mod element_index;
mod full;
pub mod maps;
pub mod naming;
mod op;
mod service;
mod text;
mod transaction;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::RenderConfig;
use crate::model::{Endpoints, Family, NodeFacts, ProxyState, ServicePort, ServicePortName};

pub use applied::{Applied, NoLocal};
pub use full::{FullStream, Start, full};
pub use op::Op;
pub use service::ServiceObjects;
pub use text::{COMMENT_MAX, comment_text, ops_text, quote};
pub use transaction::{Existing, Stats, Transaction, partial};

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

/// What a table is rendered from: each service port's Service and endpoints (the model's records,
/// shared, not copied: a port's name is in its `ServicePort`), in name order, the node's facts and the
/// render settings.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    ports: Vec<PortInputs>,
    pub node: NodeFacts,
    pub cfg: RenderConfig,
}

/// One service port's Service and endpoints (none: no EndpointSlice names the port).
pub(super) type PortInputs = (Arc<ServicePort>, Option<Endpoints>);

impl Inputs {
    pub fn new(state: &ProxyState, node: NodeFacts, cfg: RenderConfig) -> Inputs {
        let mut ports: Vec<PortInputs> = state
            .services
            .iter()
            .map(|(name, svc)| (svc.clone(), state.endpoints.get(name).cloned()))
            .collect();
        // The map's keys are the ports' names; a partial sync walks two of these by name.
        ports.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        Inputs { ports, node, cfg }
    }

    pub fn render(&self) -> Ruleset {
        let ctx = service::Ctx::new(&self.node, &self.cfg);
        let services = self
            .ports
            .iter()
            .map(|(svc, eps)| (svc.name.clone(), Arc::new(ctx.render(svc, endpoints(eps)))))
            .collect();
        Ruleset {
            family: self.cfg.family,
            base: base::base(&self.node, &self.cfg),
            services,
        }
    }

    /// Each service port's inputs, in name order.
    pub(super) fn ports(&self) -> &[PortInputs] {
        &self.ports
    }
}

/// A port's endpoints as a slice (none: no endpoints).
pub(super) fn endpoints(eps: &Option<Endpoints>) -> &[crate::model::Endpoint] {
    eps.as_deref().unwrap_or(&[])
}

/// Renders the whole table from scratch (the offline tools; the daemon renders a port at a time).
pub fn render(state: &ProxyState, node: &NodeFacts, cfg: &RenderConfig) -> Ruleset {
    let ctx = service::Ctx::new(node, cfg);
    let services = state
        .services
        .iter()
        .map(|(name, svc)| {
            let eps = state.endpoints.get(name).map_or(&[][..], |e| &e[..]);
            (name.clone(), Arc::new(ctx.render(svc, eps)))
        })
        .collect();
    Ruleset {
        family: cfg.family,
        base: base::base(node, cfg),
        services,
    }
}
