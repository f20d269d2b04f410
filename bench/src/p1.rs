//! P1: new-connection cost through the real kernel rules, flat vs tree vs the nftables mode (its
//! upstream and maps layouts), at several service counts.
//!
//! Every size gets one namespace per layout, loaded with the full payload (jumps included); the
//! nftables mode's tables are loaded as the daemon writes them (netlink batches, [`maps`]). The
//! probed service is the last rule of the flat KUBE-SERVICES list (upstream's worst case) and, among
//! all services, one with the longest dispatch walk in the tree, so both layouts are measured at
//! their worst. Probes run in interleaved rounds over all namespaces so background load on the
//! shared machine hits every case alike; the first round warms up and is discarded.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use svcnet_proxy::config::{Layout, RenderConfig};
use svcnet_proxy::iptables::render::{self, FullOptions};
use svcnet_proxy::nftables::netlink;
use svcnet_proxy::nftables::render::{self as nft, Existing};
use svcnet_proxy::nftables::socket::NftSocket;

use crate::error::BenchError;
use crate::lab::{Lab, local_endpoints};
use crate::stats;
use crate::synth::{self, ENDPOINT_PORT, SERVICE_PORT};
use crate::walk::Walker;

mod maps;

#[derive(Clone, Debug)]
pub struct P1Params {
    pub sizes: Vec<usize>,
    /// Measured rounds (plus one warm-up round).
    pub rounds: usize,
    /// Connections per namespace per round.
    pub per_round: usize,
    pub restore_program: String,
    /// Setup loads declare at most about this many service chains per iptables-restore call.
    pub max_chains: usize,
    /// Stretch: endpoint counts of the probed service, measured in the tree at the smallest size
    /// (the endpoint chain is the same in both layouts). 1 is the base case.
    pub endpoint_sizes: Vec<usize>,
    /// The iptables layouts (flat, tree) at every size, and the tree's many-endpoint stretch.
    pub iptables: bool,
    /// Also the nftables mode's table at every size.
    pub nftables: bool,
    /// Also the nftables maps layout's table at every size.
    pub maps: bool,
    /// Maps layout at the largest size with this many distinct endpoint counts (the probe has the
    /// largest), against the same probe at the smallest size; counts of 2 or less are skipped.
    pub maps_counts: Vec<usize>,
}

/// Which rules a case loads: an iptables layout, or one of the nftables mode's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    Iptables(Layout),
    /// The upstream layout (`--nftables-layout upstream`).
    Nftables,
    /// The maps layout (`--nftables-layout maps`).
    Maps,
}

#[derive(Debug)]
pub struct P1Case {
    pub layout: Rules,
    pub services: usize,
    /// Endpoints of the probed service (all others have one, but in a maps spread case).
    pub endpoints: usize,
    /// Distinct endpoint counts among the services (the maps layout's dispatch rules per scope).
    pub counts: usize,
    /// Dispatch rules the probe connection is compared against (static count).
    pub walked: usize,
    pub payload_lines: usize,
    /// render + full payload text.
    pub render: Duration,
    /// iptables-restore of the full payload into the empty namespace (sum over `chunks` calls).
    pub restore: Duration,
    /// iptables-restore calls used to load it (1: one full payload, as the daemon writes it).
    pub chunks: usize,
    /// connect() times in microseconds (warm-up excluded).
    pub samples_us: Vec<f64>,
}

impl P1Case {
    pub fn median_us(&self) -> f64 {
        stats::median(&self.samples_us).unwrap_or(f64::NAN)
    }
}

#[derive(Debug)]
pub struct P1 {
    pub cases: Vec<P1Case>,
}

impl P1 {
    pub fn case(&self, layout: Rules, services: usize) -> Option<&P1Case> {
        self.case_eps(layout, services, 1)
    }

    pub fn case_eps(&self, layout: Rules, services: usize, endpoints: usize) -> Option<&P1Case> {
        self.cases
            .iter()
            .find(|c| c.layout == layout && c.services == services && c.endpoints == endpoints)
    }

    /// Median connect time of `layout` at `services` over the same layout at `base` services.
    pub fn growth(&self, layout: Rules, services: usize, base: usize) -> f64 {
        self.growth_at(layout, services, base, 50.0)
    }

    /// Like [`P1::growth`] at percentile `p`. Connect times are bimodal on this machine (two CPU
    /// states ~10 us apart), so the median can jump between modes; background load only ever adds
    /// time, so a low percentile (p10) is the steadier view of the rule cost.
    pub fn growth_at(&self, layout: Rules, services: usize, base: usize, p: f64) -> f64 {
        match (self.case(layout, services), self.case(layout, base)) {
            (Some(a), Some(b)) => stats::ratio(
                stats::percentile(&a.samples_us, p).unwrap_or(f64::NAN),
                stats::percentile(&b.samples_us, p).unwrap_or(f64::NAN),
            ),
            _ => f64::NAN,
        }
    }
}

/// Cluster IPs for `n` services, reordered so the last service (last flat rule) also has one of the
/// longest tree walks.
pub fn probe_ips(n: usize) -> Vec<Ipv4Addr> {
    let mut ips = synth::cluster_ips(n, n as u64);
    let Some(last) = n.checked_sub(1) else {
        return ips;
    };
    let cfg = RenderConfig {
        layout: Layout::Tree,
        ..Default::default()
    };
    let r = render::render(&synth::state(&ips, 1), &synth::node(), &cfg);
    let w = Walker::new(&r);
    let worst = (0..n)
        .max_by_key(|i| w.rules_walked(IpAddr::V4(ips[*i]), SERVICE_PORT).unwrap_or(0))
        .unwrap_or(last);
    ips.swap(worst, last);
    ips
}

struct Loaded {
    case: P1Case,
    lab: Lab,
    vip: SocketAddr,
}

/// The synthetic state of a case: `n` services with one endpoint, the probed one with `eps`.
fn state_of(n: usize, ips: &[Ipv4Addr], eps: usize) -> Result<svcnet_proxy::model::ProxyState, BenchError> {
    let mut state = synth::state(ips, 1);
    let target = synth::service_name(n - 1);
    let endpoints = local_endpoints(eps)?
        .into_iter()
        .map(|ip| synth::endpoint(ip, ENDPOINT_PORT))
        .collect();
    state.endpoints.insert(target, endpoints);
    Ok(state)
}

fn load(n: usize, ips: &[Ipv4Addr], rules: Rules, eps: usize, p: &P1Params) -> Result<Loaded, BenchError> {
    match rules {
        Rules::Iptables(layout) => load_iptables(n, ips, layout, eps, p),
        Rules::Nftables => load_nftables(n, ips, eps),
        Rules::Maps => maps::load(n, ips, eps, false),
    }
}

/// The nftables mode's table, written as the daemon's first sync writes it. The probe's verdict is
/// one map lookup whatever the size: "rules walked" counts that lookup.
fn load_nftables(n: usize, ips: &[Ipv4Addr], eps: usize) -> Result<Loaded, BenchError> {
    let state = state_of(n, ips, eps)?;
    let t = Instant::now();
    let inputs = nft::Inputs::new(&state, synth::node(), RenderConfig::default());
    let tx = nft::full(inputs, &Existing::default(), nft::Start::Over);
    let render_time = t.elapsed();
    let lab = Lab::start(&format!("p1-nft{n}-{eps}"))?;
    let path = std::path::Path::new("/run/netns").join(&lab.ns.name);
    let check = |e: String| BenchError::Check(format!("nftables load in {}: {e}", lab.ns.name));
    let mut socket = NftSocket::open_in(&path, svcnet_proxy::nftables::kernel::DEFAULT_TIMEOUT)
        .map_err(|e| check(e.to_string()))?;
    let t = Instant::now();
    let batches = svcnet_proxy::nftables::kernel::batches(&tx);
    for ops in &batches {
        let batch = netlink::encode(tx.family(), ops, tx.sets(), socket.next_start())
            .map_err(|e| check(e.to_string()))?;
        socket.apply(&batch).map_err(|e| check(e.to_string()))?;
    }
    let restore = t.elapsed();
    finish(
        lab,
        P1Case {
            layout: Rules::Nftables,
            services: n,
            endpoints: eps,
            counts: maps::distinct_counts(&state),
            walked: 1,
            payload_lines: tx.ops.len(),
            render: render_time,
            restore,
            chunks: batches.len(),
            samples_us: Vec::new(),
        },
        IpAddr::V4(ips[n - 1]),
    )
}

/// A loaded case: the probe must connect once, or the rules are wrong (fail loudly, not with odd
/// timings).
fn finish(mut lab: Lab, case: P1Case, vip_ip: IpAddr) -> Result<Loaded, BenchError> {
    let vip = SocketAddr::new(vip_ip, SERVICE_PORT);
    lab.agent.connect_us(vip, 1)?;
    Ok(Loaded { case, lab, vip })
}

fn load_iptables(
    n: usize,
    ips: &[Ipv4Addr],
    layout: Layout,
    eps: usize,
    p: &P1Params,
) -> Result<Loaded, BenchError> {
    let state = state_of(n, ips, eps)?;
    let cfg = RenderConfig {
        layout,
        ..Default::default()
    };
    let t = Instant::now();
    let r = render::render(&state, &synth::node(), &cfg);
    // Loaded the way the daemon's first sync writes it (batched past max_chains).
    let parts = r
        .full_payloads(
            &FullOptions {
                jumps: true,
                ..Default::default()
            },
            &cfg,
            p.max_chains,
        )
        .texts;
    let render_time = t.elapsed();
    let vip_ip = IpAddr::V4(ips[n - 1]);
    let walked = Walker::new(&r)
        .rules_walked(vip_ip, SERVICE_PORT)
        .ok_or_else(|| BenchError::Check(format!("no rule for {vip_ip}:{SERVICE_PORT}")))?;
    drop(r);
    let tag = format!("p1-{}{n}-{eps}", layout_name(layout));
    let mut lab = Lab::start(&tag)?;
    let mut restore = Duration::ZERO;
    for part in &parts {
        restore += lab.agent.restore(&p.restore_program, part)?;
    }
    finish(
        lab,
        P1Case {
            layout: Rules::Iptables(layout),
            services: n,
            endpoints: eps,
            counts: maps::distinct_counts(&state),
            walked,
            payload_lines: parts.iter().map(|t| t.lines().count()).sum(),
            render: render_time,
            restore,
            chunks: parts.len(),
            samples_us: Vec::new(),
        },
        vip_ip,
    )
}

pub fn layout_name(l: Layout) -> &'static str {
    match l {
        Layout::Flat => "flat",
        Layout::Tree => "tree",
    }
}

pub fn rules_name(r: Rules) -> &'static str {
    match r {
        Rules::Iptables(l) => layout_name(l),
        Rules::Nftables => "nft",
        Rules::Maps => "maps",
    }
}

/// The cases to load: (services, rules, probe endpoints, maps spread), grouped by size.
fn cases(p: &P1Params) -> Vec<(usize, Rules, usize, bool)> {
    let sizes: Vec<usize> = p.sizes.iter().copied().filter(|n| *n > 0).collect();
    let mut todo = Vec::new();
    for &n in &sizes {
        if p.iptables {
            todo.extend([
                (n, Rules::Iptables(Layout::Flat), 1, false),
                (n, Rules::Iptables(Layout::Tree), 1, false),
            ]);
        }
        if p.nftables {
            todo.push((n, Rules::Nftables, 1, false));
        }
        if p.maps {
            todo.push((n, Rules::Maps, 1, false));
        }
    }
    let (Some(&base), Some(&top)) = (sizes.iter().min(), sizes.iter().max()) else {
        return todo;
    };
    todo.extend(
        p.endpoint_sizes
            .iter()
            .filter(|e| p.iptables && **e > 1)
            .map(|e| (base, Rules::Iptables(Layout::Tree), *e, false)),
    );
    if p.maps {
        // The same probe (the same endpoints) at the smallest size is the spread case's base.
        let counts = p.maps_counts.iter().filter(|d| **d > 2);
        todo.extend(counts.clone().map(|d| (base, Rules::Maps, *d, false)));
        todo.extend(counts.map(|d| (top, Rules::Maps, *d, true)));
    }
    todo
}

pub fn run(p: &P1Params, progress: &mut dyn FnMut(&str)) -> Result<P1, BenchError> {
    let mut loaded: Vec<Loaded> = Vec::new();
    let mut ips = Vec::new();
    for (n, layout, eps, spread) in cases(p) {
        if ips.len() != n {
            ips = probe_ips(n);
        }
        let l = match spread {
            true => maps::load(n, &ips, eps, true)?,
            false => load(n, &ips, layout, eps, p)?,
        };
        progress(&format!(
            "P1 loaded {} x {n} (probe with {eps} endpoints, {} distinct counts): {} lines, restore {:.0} ms in {} call(s)",
            rules_name(layout),
            l.case.counts,
            l.case.payload_lines,
            stats::ms(l.case.restore),
            l.case.chunks
        ));
        loaded.push(l);
    }
    for round in 0..=p.rounds {
        // Rotate the start so no case always runs first after a pause.
        let k = loaded.len().max(1);
        for i in 0..loaded.len() {
            let l = &mut loaded[(i + round) % k];
            let s = l.lab.agent.connect_us(l.vip, p.per_round)?;
            if round > 0 {
                l.case.samples_us.extend(s);
            }
        }
    }
    Ok(P1 {
        cases: loaded.into_iter().map(|l| l.case).collect(),
    })
}
