//! The `maps` layout of the nftables mode (`--nftables-layout maps`, docs/nftables-maps.md): a
//! constant skeleton of chains and rules, and every per-service and per-endpoint fact an element of a
//! few named sets and data maps (keys, endpoint slots, marks), never a verdict element or a
//! per-service chain or set. Pure: the same inputs as upstream's layout ([`super::render`]) and the
//! model's endpoint choice (`categorize`), so both layouts give every packet the same fate.
//!
//! [`facts`] turns each service port into elements and records which (protocol, endpoint count)
//! pairs are in use; [`skeleton`] writes the chains for those pairs; [`text`] prints `nft -f` input;
//! [`diff`] is the transaction from one table to the next (element steps only while the skeleton
//! stays); [`cache`] keeps the table per service port, so a sync renders only the ports that changed,
//! its elements packed by [`store`].
//! Element text holds addresses, protocols, ports and slot numbers only: no API names.

mod affinity;
mod cache;
mod diff;
mod element;
mod facts;
mod owners;
mod skeleton;
mod store;
mod text;

#[cfg(test)]
mod tests;

pub use affinity::nft_loadable;
pub use cache::{MapsCache, PortRecords};
pub use diff::{MapsChange, change};
pub use element::{Key, MapsElement, Part, SetName};

use std::collections::BTreeSet;

use super::Chain;
use crate::config::RenderConfig;
use crate::model::{Endpoint, Family, NodeFacts, ProxyState, ServicePort};

/// Where a service's endpoint slots live: the address-keyed or port-keyed (node port) maps, and the
/// policy endpoints or the cluster endpoints an ETP Local service's pod and node traffic gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// ClusterIP, external and LB IPs: the traffic policy's endpoints.
    Addr,
    /// ETP Local external IPs: cluster endpoints for traffic from pods and the node.
    AddrShort,
    /// Node ports: the external policy's endpoints.
    Port,
    /// ETP Local node ports: cluster endpoints for traffic from pods and the node.
    PortShort,
    /// ClientIP affinity in use for a protocol (the count is 0): the skeleton's lookups through
    /// `@sticky-keys` and records through `@sticky-records`. Kept once added, as counts are.
    Affinity,
    /// One Service port with ClientIP affinity (the count is 0): its own dynamic map and chains
    /// ([`Sticky`]), removed with the port.
    Sticky(Sticky),
}

impl Group {
    pub const ALL: [Group; 4] = [Group::Addr, Group::AddrShort, Group::Port, Group::PortShort];

    /// The prefix of this group's sets and maps (one of each per endpoint count).
    fn prefix(self) -> &'static str {
        match self {
            Group::Addr => "",
            Group::AddrShort => "short-",
            Group::Port => "np-",
            Group::PortShort => "np-short-",
            Group::Affinity | Group::Sticky(_) => "",
        }
    }

    /// The set of keys with `n` endpoints.
    pub fn set(self, n: usize) -> String {
        format!("{}svcs-{n}", self.prefix())
    }

    /// The map from key . slot to endpoint address . port of the keys with `n` endpoints, `eps-N`:
    /// one per count, so a rule for a new count binds a new, empty map (the kernel walks a map's
    /// elements when a rule binds it: docs/nftables-maps.md, "Where the goals stand").
    pub fn map(self, n: usize) -> String {
        format!("{}eps-{n}", self.prefix())
    }

    /// The two buckets of counts `n` is in, outer then inner, when the skeleton reaches its rule
    /// through jumps (the first [`DIRECT_COUNTS`] counts are rules of the scope chain itself): the
    /// scope chain jumps on the outer bucket's key set to its chain, which jumps on the inner one's
    /// to the chain of its counts' rules. Fixed ranges, so a new count has a fixed place, and a
    /// connection's first packet walks at most the direct rules, the outer buckets in use and the
    /// [`INNER_WIDTH`]-wide steps of one outer bucket (docs/nftables-maps.md, "A first packet that
    /// does not walk every count"). Affinity groups have no buckets.
    pub fn buckets(self, n: usize) -> Option<[Bucket; 2]> {
        (Group::ALL.contains(&self) && n > DIRECT_COUNTS)
            .then(|| [Bucket::of(n, OUTER_WIDTH), Bucket::of(n, INNER_WIDTH)])
    }

    /// The set of the keys whose count is in `b`, `svcs-17-80`.
    pub fn bucket_set(self, b: Bucket) -> String {
        format!("{}svcs-{}-{}", self.prefix(), b.lo, b.hi)
    }

    /// The chain reached for the counts of `b`, `dispatch-17-80`: an outer bucket's holds the
    /// jumps to its inner buckets, an inner one's the dispatch rules of its counts.
    pub fn bucket_chain(self, b: Bucket) -> String {
        format!("{}dispatch-{}-{}", self.prefix(), b.lo, b.hi)
    }

    pub fn by_port(self) -> bool {
        matches!(self, Group::Port | Group::PortShort)
    }
}

/// A Service port with ClientIP affinity: a dynamic map `affinity-<id>-<T>` from client to the
/// endpoint its last new connection was sent to, a chain `sticky-<id>-<T>` that looks the client up
/// in it (reached from `services` and `nodeports` through `@sticky-keys` / `@np-sticky-keys`, whose
/// elements are the port's keys) and a chain `sticky-record-<id>-<T>` that records it after the
/// DNAT (reached through `@sticky-records` / `@np-sticky-records` from the connection's original
/// key). So a client is remembered per Service port, on all its keys, as upstream's per-endpoint
/// sets remember it; the timeout is in the names, so a new timeout is a new map. The exception to
/// the layout's "no per-service object" (docs/nftables-maps.md, "Affinity per Service port"):
/// only affinity ports pay it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sticky {
    /// The first 64 bits of the SHA-256 of the port's `ns/name/proto/port`.
    pub id: u64,
    /// The affinity timeout in seconds.
    pub timeout: u32,
}

impl Sticky {
    pub fn new(name: &crate::model::ServicePortName, timeout: u32) -> Sticky {
        use sha2::{Digest, Sha256};
        let text = format!(
            "{}/{}/{}/{}",
            name.namespace,
            name.name,
            name.protocol.as_str(),
            name.port
        );
        let digest = Sha256::digest(text.as_bytes());
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        Sticky {
            id: u64::from_be_bytes(id),
            timeout,
        }
    }

    fn tag(self) -> String {
        format!("{:016x}-{}", self.id, self.timeout)
    }

    /// The dynamic map of client -> endpoint.
    pub fn map(self) -> String {
        format!("{AFFINITY_PREFIX}{}", self.tag())
    }

    /// The chain that looks the client up (nat, before the draws).
    pub fn lookup_chain(self) -> String {
        format!("sticky-{}", self.tag())
    }

    /// The chain that records the client (filter, after the DNAT).
    pub fn record_chain(self) -> String {
        format!("sticky-record-{}", self.tag())
    }

    /// The port a map of the table is for, from its name (`None`: not such a map).
    pub fn of_map(name: &str) -> Option<Sticky> {
        Sticky::of_tag(name.strip_prefix(AFFINITY_PREFIX)?)
    }

    /// The port a lookup or record chain is for, from its name (`None`: not such a chain).
    pub fn of_chain(name: &str) -> Option<Sticky> {
        let tag = name.strip_prefix("sticky-")?;
        Sticky::of_tag(tag.strip_prefix("record-").unwrap_or(tag))
    }

    fn of_tag(tag: &str) -> Option<Sticky> {
        let (id, t) = tag.split_once('-')?;
        Some(Sticky {
            id: u64::from_str_radix(id, 16).ok().filter(|_| id.len() == 16)?,
            timeout: t.parse().ok()?,
        })
    }
}

/// Endpoint counts up to this one have their dispatch rule in the scope chain (`services`,
/// `nodeports`); larger ones sit in bucket chains ([`Group::buckets`]).
pub const DIRECT_COUNTS: usize = 16;
/// How many counts an outer bucket spans (its chain: one jump per inner bucket in use).
pub const OUTER_WIDTH: usize = 64;
/// How many counts an inner bucket spans (its chain: one dispatch rule per count in use).
pub const INNER_WIDTH: usize = 8;

/// A range of endpoint counts past [`DIRECT_COUNTS`] reached through one jump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bucket {
    pub lo: u32,
    pub hi: u32,
}

impl Bucket {
    /// The `width`-wide bucket holding count `n` (`n > DIRECT_COUNTS`).
    fn of(n: usize, width: usize) -> Bucket {
        let lo = DIRECT_COUNTS + 1 + n.saturating_sub(DIRECT_COUNTS + 1) / width * width;
        let wide = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Bucket {
            lo: wide(lo),
            hi: wide(lo.saturating_add(width - 1)),
        }
    }
}

// Plain sets of keys (address keys: `ip daddr . meta l4proto . th dport`; port keys: `meta l4proto .
// th dport`).
pub const MASQ_CLUSTER: &str = "masq-cluster";
pub const MASQ_EXTERNAL: &str = "masq-external";
pub const NP_MASQ: &str = "np-masq";
pub const LOCAL_ORIGIN: &str = "local-origin";
pub const NP_LOCAL_ORIGIN: &str = "np-local-origin";
pub const NO_ENDPOINT_REJECT: &str = "no-endpoint-reject";
pub const NO_ENDPOINT_DROP: &str = "no-endpoint-drop";
pub const NP_NO_ENDPOINT_REJECT: &str = "np-no-endpoint-reject";
pub const NP_NO_ENDPOINT_DROP: &str = "np-no-endpoint-drop";
pub const FW_PROTECTED: &str = "fw-protected";
/// Address key . allowed source prefix (interval concatenation).
pub const FW_ALLOW: &str = "fw-allow";
/// Endpoint address . endpoint address: hairpin traffic, recognised after the DNAT.
pub const HAIRPIN: &str = "hairpin";
pub const SERVICE_CIDRS: &str = "service-cidrs";
/// Verdict maps from an affinity port's keys to `jump` its lookup chain ([`Sticky`]).
pub const STICKY_KEYS: &str = "sticky-keys";
pub const NP_STICKY_KEYS: &str = "np-sticky-keys";
/// Verdict maps from an affinity port's keys (as the connection's original destination) to `goto`
/// its record chain.
pub const STICKY_RECORDS: &str = "sticky-records";
pub const NP_STICKY_RECORDS: &str = "np-sticky-records";
/// The prefix of the per-port dynamic maps (upstream's affinity sets have it too: the tracer takes
/// both as dynamic).
pub const AFFINITY_PREFIX: &str = crate::nftables::render::naming::AFFINITY_PREFIX;
/// The filter chain (after the DNAT) that records affinity.
pub const AFFINITY_RECORD: &str = "affinity-record";
/// The chain the node-port rules live in.
pub const NODEPORTS: &str = "nodeports";

/// A set or map of the maps layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapsSet {
    pub name: String,
    pub is_map: bool,
    /// The declaration's `type ...` or `typeof ...` clause.
    pub decl: String,
    pub flags: Vec<&'static str>,
}

/// The whole table of one family in the maps layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapsTable {
    pub family: Family,
    pub chains: Vec<Chain>,
    pub sets: Vec<MapsSet>,
    pub elements: Vec<MapsElement>,
}

impl MapsTable {
    pub fn chain(&self, name: &str) -> Option<&Chain> {
        self.chains.iter().find(|c| c.name == name)
    }

    /// The elements of one set or map.
    pub fn elements_of<'a>(&'a self, set: &'a str) -> impl Iterator<Item = &'a MapsElement> + 'a {
        self.elements.iter().filter(move |e| e.set == *set)
    }
}

/// Which dispatch rules the skeleton needs: (group, protocol, endpoint count) in use.
pub type InUse = BTreeSet<(Group, &'static str, usize)>;

/// The sets and maps one service port has elements in (what `explain` names for it).
pub fn port_sets(svc: &ServicePort, eps: &[Endpoint], node: &NodeFacts, cfg: &RenderConfig) -> Vec<String> {
    let mut f = facts::Facts::new(node, cfg);
    f.add_port(svc, eps);
    let names: BTreeSet<String> = f.finish().0.into_iter().map(|e| e.set.name()).collect();
    names.into_iter().map(|n| format!("@{n}")).collect()
}

/// Keeps each key of the sticky verdict maps for one port (the first in order): two Services
/// claiming one external IP and port would give the kernel two elements of one key, and it would
/// refuse the table ([`MapsCache`] keeps the first port to claim it).
fn one_sticky_port_per_key(elements: &mut Vec<MapsElement>) {
    let mut owner: std::collections::BTreeMap<(bool, Key), Sticky> = Default::default();
    for e in elements.iter() {
        if let SetName::StickyKey { by_port, port } = e.set {
            owner.entry((by_port, e.key)).or_insert(port);
        }
    }
    elements.retain(|e| match e.set {
        SetName::StickyKey { by_port, port } | SetName::StickyRecord { by_port, port } => {
            owner.get(&(by_port, e.key)) == Some(&port)
        }
        _ => true,
    });
}

/// The maps layout's whole table for `cfg.family`.
pub fn render(state: &ProxyState, node: &NodeFacts, cfg: &RenderConfig) -> MapsTable {
    let mut f = facts::Facts::new(node, cfg);
    for (name, svc) in &state.services {
        let eps = state.endpoints.get(name).map_or(&[][..], |e| &e[..]);
        f.add_port(svc, eps);
    }
    let (mut elements, in_use) = f.finish();
    elements.extend(skeleton::fixed_elements(node, cfg));
    elements.sort();
    elements.dedup();
    one_sticky_port_per_key(&mut elements);
    let (chains, sets) = skeleton::skeleton(node, cfg, &in_use);
    MapsTable {
        family: cfg.family,
        chains,
        sets,
        elements,
    }
}
