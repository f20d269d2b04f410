//! P2: one service changed at 10k services / 100k endpoints.
//!
//! Per layout, one namespace is loaded with the whole state (setup, batched as the daemon's first
//! sync, not measured). Then the daemon's partial sync is timed end to end for single-service
//! changes, with the daemon's code: a [`Renderer`] pass renders the ports whose inputs changed
//! ("render"), then the shared chains and the diff against the digests of what the kernel holds
//! ("payload"), and the payloads are iptables-restored. Two kinds of change:
//! - an endpoint of one service replaced (a rolling update step): both layouts rewrite only that
//!   service's chains;
//! - one service added: the flat layout rewrites all of KUBE-SERVICES, the tree one leaf chain.
//!
//! A full sync of the same state (render from scratch + full payload + `iptables-save -t nat` + the
//! batched restores, as the daemon's full sync does) is timed in the same run for the ratio.
//!
//! The nftables mode gets the same changes in the same run ([`nftables`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use svcnet_proxy::config::{Layout, RenderConfig};
use svcnet_proxy::iptables::render::{self, FullOptions, Renderer};
use svcnet_proxy::model::ProxyState;

use crate::agent::Restored;
use crate::error::BenchError;
use crate::lab::Lab;
use crate::p1::layout_name;
use crate::synth::{self, ENDPOINT_PORT};

pub(crate) mod maps;
mod nftables;

#[derive(Clone, Debug)]
pub struct P2Params {
    pub services: usize,
    pub endpoints_per_service: usize,
    /// Timed changes of each kind.
    pub changes: usize,
    pub layouts: Vec<Layout>,
    /// Also run the nftables mode (needs `nft`).
    pub nftables: bool,
    /// Also time the nftables mode through `nft -f` (minutes for the first load at 10k x 100k).
    pub nft_binary: bool,
    /// Also the nftables mode's maps layout (rows `maps`, changes through `nft -f`, and `maps-nl`,
    /// changes through svcnet's netlink writer).
    pub nft_maps: bool,
    /// The maps rows' Services all have ClientIP affinity (each its own map and chains).
    pub maps_affinity: bool,
    /// Most steps per batch of the nftables first load: one `nftnl` row each.
    pub nft_batches: Vec<usize>,
    /// Layouts that also get a timed full sync (minutes each at 10k x 100k with iptables-nft).
    pub full_sync: Vec<Layout>,
    pub restore_program: String,
    pub save_program: String,
    pub max_chains: usize,
    /// A full-sync restore still running after this long is killed and reported as a lower bound.
    pub full_sync_limit: Duration,
}

/// One timed sync.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sync {
    /// render of the whole state.
    pub render: Duration,
    /// payload text (partial: the diff against the previous render; full: every chain).
    pub payload: Duration,
    /// `iptables-save -t nat` (full sync only).
    pub save: Duration,
    pub restore: Duration,
    /// The restore hit the limit and was killed: `restore` is a lower bound.
    pub killed: bool,
    pub lines: usize,
}

impl Sync {
    pub fn total(&self) -> Duration {
        self.render + self.payload + self.save + self.restore
    }
}

#[derive(Debug)]
pub struct P2Layout {
    /// `tree`, `flat` (iptables mode) or `nft` (nftables mode).
    pub name: String,
    /// Lines of the full payload the daemon would write for this state.
    pub full_lines: usize,
    pub initial_load: Duration,
    pub initial_chunks: usize,
    pub endpoint_change: Vec<Sync>,
    pub service_added: Vec<Sync>,
    /// A Service with an endpoint count no port has (the maps layout's rows only).
    pub new_count: Vec<Sync>,
    /// A Service with ClientIP affinity (the maps layout's rows only: its own map and chains).
    pub affinity_added: Vec<Sync>,
    pub full: Option<Sync>,
}

impl P2Layout {
    /// A row after its first load, before any change.
    pub(crate) fn loaded(
        name: &str,
        full_lines: usize,
        initial_load: Duration,
        initial_chunks: usize,
        full: Option<Sync>,
    ) -> P2Layout {
        P2Layout {
            name: name.into(),
            full_lines,
            initial_load,
            initial_chunks,
            endpoint_change: vec![],
            service_added: vec![],
            new_count: vec![],
            affinity_added: vec![],
            full,
        }
    }
}

#[derive(Debug)]
pub struct P2 {
    pub services: usize,
    pub endpoints: usize,
    pub layouts: Vec<P2Layout>,
}

/// Replaces the first endpoint of service `i` by a fresh pod (the `k`-th change).
pub(super) fn replace_endpoint(state: &mut ProxyState, i: usize, k: usize) {
    if let Some(eps) = state.endpoints.get_mut(&synth::service_name(i))
        && let Some(first) = Arc::make_mut(eps).first_mut()
    {
        *first = synth::endpoint(synth::pod_ip(8_000_000 - 1 - k), ENDPOINT_PORT);
    }
}

pub(super) fn add_service(state: &mut ProxyState, index: usize, ip: std::net::Ipv4Addr, eps: usize) {
    let name = synth::service_name(index);
    let endpoints = (0..eps)
        .map(|j| synth::endpoint(synth::pod_ip(index * eps + j), ENDPOINT_PORT))
        .collect();
    state.endpoints.insert(name.clone(), endpoints);
    state
        .services
        .insert(name.clone(), synth::service_port(name, ip).into());
}

fn partial_sync(
    lab: &mut Lab,
    state: &ProxyState,
    cfg: &RenderConfig,
    renderer: &mut Renderer,
    p: &P2Params,
) -> Result<Sync, BenchError> {
    let node = synth::node();
    let t = Instant::now();
    let mut pass = renderer.begin(state, &node, cfg, false, p.max_chains);
    let mut texts = Vec::new();
    while let Some(text) = pass.next_batch() {
        texts.push(text);
    }
    let render = t.elapsed();
    let t = Instant::now();
    let (rest, done) = pass.finish(false, &BTreeSet::new());
    texts.extend(rest.texts);
    let payload_time = t.elapsed();
    if texts.is_empty() {
        return Err(BenchError::Check("a change produced no partial payload".into()));
    }
    let mut restore = Duration::ZERO;
    for text in &texts {
        restore += lab.agent.restore(&p.restore_program, text)?;
    }
    let t = Instant::now();
    renderer.commit(done);
    Ok(Sync {
        render,
        payload: payload_time + t.elapsed(),
        save: Duration::ZERO,
        restore,
        killed: false,
        lines: texts.iter().map(|t| t.lines().count()).sum(),
    })
}

fn full_sync(
    lab: &mut Lab,
    state: &ProxyState,
    cfg: &RenderConfig,
    p: &P2Params,
) -> Result<Sync, BenchError> {
    let t = Instant::now();
    let r = render::render(state, &synth::node(), cfg);
    let render = t.elapsed();
    let t = Instant::now();
    let opts = FullOptions {
        jumps: false,
        canaries: true,
        ..Default::default()
    };
    let payloads = r.full_payloads(&opts, cfg, p.max_chains);
    let payload_time = t.elapsed();
    let save = lab.agent.save(&p.save_program)?;
    let (mut restore, mut killed) = (Duration::ZERO, false);
    for text in &payloads.texts {
        match lab
            .agent
            .restore_limited(&p.restore_program, text, Some(p.full_sync_limit))?
        {
            Restored::Done(d) => restore += d,
            Restored::Killed(d) => {
                restore += d;
                killed = true;
                break;
            }
        }
    }
    Ok(Sync {
        render,
        payload: payload_time,
        save,
        restore,
        killed,
        lines: payloads.texts.iter().map(|t| t.lines().count()).sum(),
    })
}

fn run_layout(layout: Layout, p: &P2Params, progress: &mut dyn FnMut(&str)) -> Result<P2Layout, BenchError> {
    let n = p.services;
    let all_ips = synth::cluster_ips(n + p.changes, 0x5eed);
    let mut state = synth::state(&all_ips[..n], p.endpoints_per_service);
    let cfg = RenderConfig {
        layout,
        ..Default::default()
    };
    let jumps = FullOptions {
        jumps: true,
        ..Default::default()
    };
    let parts = render::render(&state, &synth::node(), &cfg)
        .full_payloads(&jumps, &cfg, p.max_chains)
        .texts;
    // The daemon's render cache after that load: a full pass whose payloads the load already wrote.
    let mut renderer = Renderer::default();
    let node = synth::node();
    let (_, done) = renderer
        .begin(&state, &node, &cfg, true, render::UNBATCHED)
        .finish(true, &BTreeSet::new());
    renderer.commit(done);
    let mut lab = Lab::start(&format!("p2-{}", layout_name(layout)))?;
    let mut initial_load = Duration::ZERO;
    for part in &parts {
        initial_load += lab.agent.restore(&p.restore_program, part)?;
    }
    progress(&format!(
        "P2 {}: loaded {n} services / {} endpoints in {:.1} s ({} calls)",
        layout_name(layout),
        n * p.endpoints_per_service,
        initial_load.as_secs_f64(),
        parts.len()
    ));
    let mut out = P2Layout::loaded(layout_name(layout), 0, initial_load, parts.len(), None);
    for k in 0..p.changes {
        // Spread the changed services over the name space (first, middle, last ...).
        let i = (k * 7919) % n.max(1);
        replace_endpoint(&mut state, i, k);
        out.endpoint_change
            .push(partial_sync(&mut lab, &state, &cfg, &mut renderer, p)?);
    }
    for k in 0..p.changes {
        add_service(&mut state, n + k, all_ips[n + k], p.endpoints_per_service);
        out.service_added
            .push(partial_sync(&mut lab, &state, &cfg, &mut renderer, p)?);
    }
    progress(&format!(
        "P2 {}: {} partial syncs done",
        layout_name(layout),
        2 * p.changes
    ));
    if p.full_sync.contains(&layout) {
        let full = full_sync(&mut lab, &state, &cfg, p)?;
        progress(&format!(
            "P2 {}: full sync {}{:.1} s",
            layout_name(layout),
            if full.killed { "killed after " } else { "" },
            full.total().as_secs_f64()
        ));
        out.full_lines = full.lines;
        out.full = Some(full);
    } else {
        let r = render::render(&state, &synth::node(), &cfg);
        let opts = FullOptions {
            canaries: true,
            ..Default::default()
        };
        out.full_lines = r.payload(&opts, &cfg).0.lines().count();
    }
    Ok(out)
}

pub fn run(p: &P2Params, progress: &mut dyn FnMut(&str)) -> Result<P2, BenchError> {
    let mut layouts = Vec::new();
    for &layout in &p.layouts {
        layouts.push(run_layout(layout, p, progress)?);
    }
    if p.nftables {
        for &batch in &p.nft_batches {
            layouts.push(nftables::run(Some(batch), p, progress)?);
        }
        if p.nft_binary {
            layouts.push(nftables::run(None, p, progress)?);
        }
        if p.nft_maps {
            // With every Service sticky, `nft -f` takes ~85 s per load at 10k (its own cost of
            // 10k maps), and each growth through it is a load: only the netlink row runs.
            if !p.maps_affinity {
                layouts.push(maps::run(p, false, progress)?);
            }
            layouts.push(maps::run(p, true, progress)?);
        }
    }
    Ok(P2 {
        services: p.services,
        endpoints: p.services * p.endpoints_per_service,
        layouts,
    })
}
