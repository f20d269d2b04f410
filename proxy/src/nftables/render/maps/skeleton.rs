//! The maps layout's rules: upstream's hooked chains and jumps, then constant rules that look keys up
//! in the sets and maps [`super::facts`] fills. The only part that varies with the services is one
//! dispatch rule per (group, protocol, endpoint count) in use, the larger counts' in one chain per
//! bucket of counts ([`Group::buckets`]); none has a per-service verdict.

use super::*;
use crate::config::RenderConfig;
use crate::nftables::render::base::{BASE_CHAINS, JUMPS, nodeport_ips};
use crate::nftables::render::naming::*;
use crate::nftables::render::service::local_detector;
use crate::nftables::render::{Hook, Rule, addr_type, family_word};

/// The word forms of one family's keys and statements.
struct Words {
    ip: &'static str,
    /// `ip daddr . meta l4proto . th dport`
    addr_key: String,
    mark: String,
}

impl Words {
    fn new(cfg: &RenderConfig) -> Words {
        let ip = family_word(cfg.family);
        Words {
            ip,
            addr_key: format!("{ip} daddr . meta l4proto . th dport"),
            mark: cfg.masq_mark(),
        }
    }

    fn key(&self, by_port: bool) -> &str {
        if by_port { PORT_KEY } else { &self.addr_key }
    }

    fn mark_set(&self) -> String {
        format!("meta mark set meta mark or {}", self.mark)
    }

    /// `meta l4proto P KEY @set dnat ip to KEY . numgen random mod N map @map`.
    fn dispatch(&self, group: Group, proto: &str, n: usize) -> String {
        let key = self.key(group.by_port());
        format!(
            "meta l4proto {proto} {key} @{} dnat {} to {key} . numgen random mod {n} map @{}",
            group.set(n),
            self.ip,
            group.map(n)
        )
    }
}

const PORT_KEY: &str = "meta l4proto . th dport";

/// The chains with their rules, and every set and map.
pub(super) fn skeleton(node: &NodeFacts, cfg: &RenderConfig, in_use: &InUse) -> (Vec<Chain>, Vec<MapsSet>) {
    let w = Words::new(cfg);
    let mut chains = declared_chains();
    let paths = bucket_paths(in_use);
    let buckets: BTreeSet<(Group, Bucket)> = paths
        .iter()
        .flat_map(|&(g, [outer, inner])| [(g, outer), (g, inner)])
        .collect();
    chains.extend(buckets.iter().map(|(g, b)| Chain::new(g.bucket_chain(*b))));
    chains.extend(super::affinity::port_chains(w.ip, in_use));
    let mut add = |chain: &str, rule: Rule| {
        if let Some(c) = chains.iter_mut().find(|c| c.name == chain) {
            c.rules.push(rule);
        }
    };
    add(
        NAT_POSTROUTING,
        Rule::commented(
            format!(
                "ct status dnat {ip} saddr . {ip} daddr @{HAIRPIN} {}",
                w.mark_set(),
                ip = w.ip
            ),
            "hairpin: an endpoint sent to itself through a service",
        ),
    );
    for (to, from, m) in JUMPS {
        add(from, Rule::new(format!("{m}jump {to}")));
    }
    for from in [FILTER_INPUT, FILTER_FORWARD, FILTER_OUTPUT] {
        add(
            from,
            Rule::new(format!("ct state new ct status dnat jump {AFFINITY_RECORD}")),
        );
    }
    for r in super::affinity::record_rules(w.ip, in_use) {
        add(AFFINITY_RECORD, r);
    }
    let np_ips = nodeport_ips(node, cfg);
    fixed_rules(&w, np_ips.is_some(), &mut add);
    dispatch_rules(&w, cfg, (in_use, &paths), np_ips.is_some(), &mut add);
    for &(g, [outer, inner]) in &paths {
        let jump = format!(
            "{} @{} jump {}",
            w.key(g.by_port()),
            g.bucket_set(inner),
            g.bucket_chain(inner)
        );
        add(&g.bucket_chain(outer), Rule::new(jump));
    }
    for &(g, proto, n) in in_use {
        if let Some([_, inner]) = g.buckets(n) {
            add(&g.bucket_chain(inner), Rule::new(w.dispatch(g, proto, n)));
        }
    }
    (chains, sets(cfg, in_use, np_ips, &buckets))
}

/// The (outer, inner) buckets in use, per group.
type Paths = BTreeSet<(Group, [Bucket; 2])>;

/// Computed once per skeleton: the bucket chains, their jumps and the scope chains' jumps.
fn bucket_paths(in_use: &InUse) -> Paths {
    in_use
        .iter()
        .filter_map(|&(g, _, n)| Some((g, g.buckets(n)?)))
        .collect()
}

fn declared_chains() -> Vec<Chain> {
    let mut chains: Vec<Chain> = BASE_CHAINS
        .iter()
        .map(|(name, kind, hook, priority)| Chain {
            hook: Some(Hook {
                kind,
                hook,
                priority: *priority,
            }),
            ..Chain::new(*name)
        })
        .collect();
    for name in [
        NODEPORT_ENDPOINTS_CHECK,
        SERVICE_ENDPOINTS_CHECK,
        FIREWALL_CHECK,
        SERVICES,
        NODEPORTS,
        AFFINITY_RECORD,
        MASQUERADING,
        CLUSTER_IPS_CHECK,
    ] {
        chains.push(Chain::new(name));
    }
    chains
}

/// `ip daddr @nodeport-ips`, or any local address but loopback (nftables mode has no localhost
/// node ports).
fn nodeport_match(ip: &str, listed: bool) -> String {
    match (listed, ip) {
        (true, _) => format!("{ip} daddr @{NODEPORT_IPS}"),
        (false, "ip") => "fib daddr type local ip daddr != 127.0.0.0/8".into(),
        (false, _) => "fib daddr type local ip6 daddr != ::1".into(),
    }
}

/// Masquerading, the checks before and after the DNAT.
fn fixed_rules(w: &Words, np_listed: bool, add: &mut dyn FnMut(&str, Rule)) {
    let (ip, mark, key) = (w.ip, &w.mark, &w.addr_key);
    add(MASQUERADING, Rule::new(format!("mark and {mark} == 0 return")));
    add(MASQUERADING, Rule::new(format!("mark set mark xor {mark}")));
    add(MASQUERADING, Rule::new("masquerade fully-random"));
    add(
        CLUSTER_IPS_CHECK,
        Rule::commented(
            format!("{ip} daddr @{CLUSTER_IPS} reject"),
            "Reject traffic to invalid ports of ClusterIPs",
        ),
    );
    add(
        CLUSTER_IPS_CHECK,
        Rule::commented(
            format!("{ip} daddr @{SERVICE_CIDRS} drop"),
            "Drop traffic to unallocated ClusterIPs",
        ),
    );
    add(
        SERVICE_ENDPOINTS_CHECK,
        Rule::new(format!("{key} @{NO_ENDPOINT_REJECT} reject")),
    );
    add(
        SERVICE_ENDPOINTS_CHECK,
        Rule::new(format!("{key} @{NO_ENDPOINT_DROP} drop")),
    );
    let np = nodeport_match(ip, np_listed);
    add(
        NODEPORT_ENDPOINTS_CHECK,
        Rule::new(format!("{np} {PORT_KEY} @{NP_NO_ENDPOINT_REJECT} reject")),
    );
    add(
        NODEPORT_ENDPOINTS_CHECK,
        Rule::new(format!("{np} {PORT_KEY} @{NP_NO_ENDPOINT_DROP} drop")),
    );
    add(
        FIREWALL_CHECK,
        Rule::new(format!(
            "{key} @{FW_PROTECTED} {key} . {ip} saddr != @{FW_ALLOW} drop"
        )),
    );
}

/// The services and nodeports chains: marks first, then ETP Local's pod and node short circuits,
/// then the policy endpoints; node ports last, as upstream.
fn dispatch_rules(
    w: &Words,
    cfg: &RenderConfig,
    in_use: (&InUse, &Paths),
    np_listed: bool,
    add: &mut dyn FnMut(&str, Rule),
) {
    let detector = local_detector(cfg);
    let key = &w.addr_key;
    if cfg.masquerade_all {
        add(
            SERVICES,
            Rule::new(format!("{key} @{MASQ_CLUSTER} {}", w.mark_set())),
        );
    } else if let Some((_, not_local)) = &detector {
        add(
            SERVICES,
            Rule::new(format!("{not_local} {key} @{MASQ_CLUSTER} {}", w.mark_set())),
        );
    }
    for (chain, by_port) in [(SERVICES, false), (NODEPORTS, true)] {
        for rule in scope_rules(w, detector.as_ref(), in_use, by_port) {
            add(chain, rule);
        }
    }
    let np = nodeport_match(w.ip, np_listed);
    add(SERVICES, Rule::new(format!("{np} jump {NODEPORTS}")));
}

/// One chain's rules (`services` for address keys, `nodeports` for node ports): the marks (the
/// node's own traffic to an ETP Local key is marked unless it is pod traffic, which upstream's
/// short circuit takes first, unmarked), the affinity lookups, then the choices: pods' and the
/// node's short circuits to the cluster endpoints, then the policy endpoints.
fn scope_rules(
    w: &Words,
    detector: Option<&(String, String)>,
    (in_use, paths): (&InUse, &Paths),
    by_port: bool,
) -> Vec<Rule> {
    let key = w.key(by_port);
    let (masq, origin, short, group) = if by_port {
        (NP_MASQ, NP_LOCAL_ORIGIN, Group::PortShort, Group::Port)
    } else {
        (MASQ_EXTERNAL, LOCAL_ORIGIN, Group::AddrShort, Group::Addr)
    };
    let mut out = vec![Rule::new(format!("{key} @{masq} {}", w.mark_set()))];
    let not_pod = detector
        .map(|(_, not_local)| format!("{not_local} "))
        .unwrap_or_default();
    out.push(Rule::commented(
        format!("{not_pod}fib saddr type local {key} @{origin} {}", w.mark_set()),
        "masquerade local traffic",
    ));
    out.extend(super::affinity::read_rule(key, by_port, in_use));
    let direct = |g: Group| {
        in_use
            .iter()
            .filter(move |(x, _, n)| *x == g && g.buckets(*n).is_none())
    };
    let buckets = |g: Group| {
        let outer: BTreeSet<Bucket> = paths
            .iter()
            .filter(|(x, _)| *x == g)
            .map(|(_, [o, _])| *o)
            .collect();
        outer
            .into_iter()
            .map(move |b| format!("{key} @{} jump {}", g.bucket_set(b), g.bucket_chain(b)))
    };
    let mut choices = |cond: &str, g: Group| {
        for (g, proto, n) in direct(g) {
            out.push(Rule::new(format!("{cond}{}", w.dispatch(*g, proto, *n))));
        }
        for jump in buckets(g) {
            out.push(Rule::new(format!("{cond}{jump}")));
        }
    };
    if let Some((local, _)) = detector {
        choices(&format!("{local} "), short);
    }
    choices("fib saddr type local ", short);
    choices("", group);
    out
}

fn set(name: &str, decl: String, flags: Vec<&'static str>) -> MapsSet {
    MapsSet {
        name: name.into(),
        is_map: false,
        decl,
        flags,
    }
}

/// Every set and map; the endpoint-count sets only for the counts in use.
fn sets(
    cfg: &RenderConfig,
    in_use: &InUse,
    np_ips: Option<Vec<std::net::IpAddr>>,
    buckets: &BTreeSet<(Group, Bucket)>,
) -> Vec<MapsSet> {
    let (ip, addr) = (family_word(cfg.family), addr_type(cfg.family));
    let addr_key = format!("type {addr} . inet_proto . inet_service");
    let port_key = "type inet_proto . inet_service".to_string();
    let mut out = vec![
        set(CLUSTER_IPS, format!("type {addr}"), vec![]),
        set(SERVICE_CIDRS, format!("type {addr}"), vec!["interval"]),
        set(HAIRPIN, format!("type {addr} . {addr}"), vec![]),
        set(
            FW_ALLOW,
            format!("type {addr} . inet_proto . inet_service . {addr}"),
            vec!["interval"],
        ),
    ];
    if np_ips.is_some() {
        out.push(set(NODEPORT_IPS, format!("type {addr}"), vec![]));
    }
    for name in [
        MASQ_CLUSTER,
        MASQ_EXTERNAL,
        LOCAL_ORIGIN,
        NO_ENDPOINT_REJECT,
        NO_ENDPOINT_DROP,
        FW_PROTECTED,
    ] {
        out.push(set(name, addr_key.clone(), vec![]));
    }
    for name in [
        NP_MASQ,
        NP_LOCAL_ORIGIN,
        NP_NO_ENDPOINT_REJECT,
        NP_NO_ENDPOINT_DROP,
    ] {
        out.push(set(name, port_key.clone(), vec![]));
    }
    let counts: BTreeSet<(Group, usize)> = in_use
        .iter()
        .filter(|(g, _, _)| Group::ALL.contains(g))
        .map(|(g, _, n)| (*g, *n))
        .collect();
    for &(g, n) in &counts {
        let decl = if g.by_port() { &port_key } else { &addr_key };
        out.push(set(&g.set(n), decl.clone(), vec![]));
    }
    for &(g, b) in buckets {
        let decl = if g.by_port() { &port_key } else { &addr_key };
        out.push(set(&g.bucket_set(b), decl.clone(), vec![]));
    }
    out.extend(super::affinity::maps(ip, addr, in_use));
    for (g, n) in counts {
        let key = if g.by_port() {
            PORT_KEY.to_string()
        } else {
            format!("{ip} daddr . meta l4proto . th dport")
        };
        out.push(MapsSet {
            name: g.map(n),
            is_map: true,
            // The numgen part only fixes the slot's type (32 bits), as nft prints it back.
            decl: format!("typeof {key} . numgen random mod 2 : {ip} daddr . th dport"),
            flags: vec![],
        });
    }
    out
}

/// The node's NodePort addresses and the service CIDRs of this family, as elements.
pub(super) fn fixed_elements(node: &NodeFacts, cfg: &RenderConfig) -> Vec<MapsElement> {
    let mut out: Vec<MapsElement> = cfg
        .service_cidrs
        .iter()
        .filter(|c| cfg.family.matches(&c.addr()))
        .map(|c| MapsElement {
            set: SetName::Fixed(SERVICE_CIDRS),
            key: Key::new(&[Part::Net(c.trunc())]),
            value: None,
        })
        .collect();
    for ip in nodeport_ips(node, cfg).unwrap_or_default() {
        out.push(MapsElement {
            set: SetName::Fixed(NODEPORT_IPS),
            key: Key::new(&[Part::Addr(ip)]),
            value: None,
        });
    }
    out
}
