//! Where the renderer's time goes at one size, phase by phase (`svcnet-bench phases`): the numbers
//! behind P2/P3 for whoever optimises the renderer. Pure CPU, no namespace needed.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use svcnet_proxy::config::{Layout, RenderConfig};
use svcnet_proxy::iptables::render::{self, FullOptions, Renderer, UNBATCHED};
use svcnet_proxy::model::{
    Family, Interner, ModelCache, NodeFacts, ProxyState, ServiceRecord, SliceRecord, parse_slice,
};

use crate::stats::{median, ms};
use crate::synth;

/// Median of `reps` runs of `f`, in milliseconds.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    let xs: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            ms(t.elapsed())
        })
        .collect();
    median(&xs).unwrap_or(f64::NAN)
}

pub fn report(services: usize, endpoints: usize, layout: Layout, reps: usize) -> String {
    let ips = synth::cluster_ips(services + 1, 0x5eed);
    let state = synth::state(&ips[..services], endpoints);
    let cfg = RenderConfig {
        layout,
        ..Default::default()
    };
    let node = synth::node();
    let r = render::render(&state, &node, &cfg);
    let prev = r.digests();
    let changed = first_endpoint_replaced(&state);
    let r2 = render::render(&changed, &node, &cfg);
    let full_opts = FullOptions {
        canaries: true,
        ..Default::default()
    };
    let incremental = daemon_sync_ms(&state, &changed, &node, &cfg, reps);
    // The model: API objects -> ProxyState, one Service changed, cached vs from scratch.
    let (svcs, slices) = synth::k8s_objects(&ips[..services], endpoints);
    let model_update = model_update_ms(&svcs, &slices, ips[0], reps);
    let rows: Vec<(&str, f64)> = vec![
        (
            "render() whole state, from scratch",
            time(reps, || drop(render::render(&state, &node, &cfg))),
        ),
        ("clone of ProxyState", time(reps, || drop(state.clone()))),
        ("digests()", time(reps, || drop(r.digests()))),
        (
            "partial_payload() vs digests (bench before)",
            time(reps, || drop(r2.partial_payload(&prev))),
        ),
        ("daemon: Renderer + diff, one service changed", incremental),
        (
            "model from scratch: ProxyState::from_k8s",
            time(reps, || {
                drop(ProxyState::from_k8s(
                    svcs.iter().map(AsRef::as_ref),
                    slices.iter().map(AsRef::as_ref),
                    Family::V4,
                ))
            }),
        ),
        ("daemon: ModelCache::update, one Service changed", model_update),
        (
            "payload() full text",
            time(reps, || drop(r.payload(&full_opts, &cfg))),
        ),
    ];
    let mut s = String::new();
    let chains = r.nat.len() + r.filter.len();
    let rules: usize = r.nat.iter().chain(&r.filter).map(|c| c.rules.len()).sum();
    let _ = writeln!(
        s,
        "phases at {services} services x {endpoints} endpoints ({layout:?}: {chains} chains, {rules} rules), median of {reps}:"
    );
    for (what, t) in rows {
        let _ = writeln!(s, "    {what:<48} {t:>9.1} ms");
    }
    s
}

/// `state` with the first service's first endpoint moved to another pod: one service differs.
fn first_endpoint_replaced(state: &ProxyState) -> ProxyState {
    let mut changed = state.clone();
    if let Some(eps) = changed.endpoints.get_mut(&synth::service_name(0))
        && let Some(first) = Arc::make_mut(eps).first_mut()
    {
        *first = synth::endpoint(synth::pod_ip(8_000_000), synth::ENDPOINT_PORT);
    }
    changed
}

/// Median ms of the daemon's path: a warm Renderer, alternating between the two states (one service
/// differs), so every pass is a partial sync.
fn daemon_sync_ms(
    state: &ProxyState,
    changed: &ProxyState,
    node: &NodeFacts,
    cfg: &RenderConfig,
    reps: usize,
) -> f64 {
    let mut renderer = Renderer::default();
    let pass = |r: &mut Renderer, st: &ProxyState, full: bool| {
        let mut pass = r.begin(st, node, cfg, full, UNBATCHED);
        while pass.next_batch().is_some() {}
        let (payloads, done) = pass.finish(full, &BTreeSet::new());
        r.commit(done);
        payloads
    };
    drop(pass(&mut renderer, state, true));
    let mut flip = false;
    time(reps, || {
        flip = !flip;
        drop(pass(&mut renderer, if flip { changed } else { state }, false));
    })
}

/// Median ms of a warm ModelCache taking one changed Service. The daemon converts an object to its
/// record when the watch event arrives; that is timed with the update.
fn model_update_ms(
    svcs: &[Arc<Service>],
    slices: &[Arc<EndpointSlice>],
    first_ip: Ipv4Addr,
    reps: usize,
) -> f64 {
    let mut svc_recs: Vec<Arc<ServiceRecord>> = svcs
        .iter()
        .map(|s| Arc::new(ServiceRecord::from_service(s)))
        .collect();
    let mut names = Interner::default();
    let slice_recs: Vec<Arc<SliceRecord>> = slices
        .iter()
        .map(|s| Arc::new(parse_slice(s, &mut names)))
        .collect();
    let mut model = ModelCache::new(Family::V4);
    model.update(&svc_recs, &slice_recs);
    let mut generation = 0;
    time(reps, || {
        generation += 1;
        if let Some(first) = svc_recs.first_mut() {
            let svc = synth::k8s_service(&synth::service_name(0).name, first_ip, generation);
            *first = Arc::new(ServiceRecord::from_service(&svc));
        }
        model.update(&svc_recs, &slice_recs);
    })
}
