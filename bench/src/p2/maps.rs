//! P2's `maps` rows: the nftables mode's maps layout (issue 32, docs/nftables-maps.md) on the same
//! state and changes as the other rows. Row `maps` writes through `nft -f`: the first load as the
//! whole table's text, each change (only the changed port rendered into the layout's per-port
//! cache) as its element transaction. Row `maps-nl` writes as the daemon does, through svcnet's
//! netlink writer on a socket kept open across changes: the first load as one batch holding the
//! whole table, each change as one batch of typed elements. `render` is the cache update and the
//! text or batch; `restore` the write until `nft` exits or the kernel acknowledges.

use std::time::{Duration, Instant};

use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::model::{Family, ProxyState, ServicePortName};
use svcnet_proxy::nftables::netlink::{Batch, EncodeError, Start, encode_elements, encode_replacement};
use svcnet_proxy::nftables::render::maps::{MapsCache, MapsChange};
use svcnet_proxy::nftables::socket::NftSocket;

use super::{P2Layout, P2Params, Sync, add_service, replace_endpoint};
use crate::error::BenchError;
use crate::lab::Lab;
use crate::synth;

/// Renders `changed` ports (all, on the first load) and writes the transaction.
fn sync(
    lab: &mut Lab,
    state: &ProxyState,
    cache: &mut MapsCache,
    changed: Option<&ServicePortName>,
    netlink: bool,
    socket: &mut Option<NftSocket>,
) -> Result<Sync, BenchError> {
    let t = Instant::now();
    let names: Vec<&ServicePortName> = match changed {
        Some(name) => vec![name],
        None => state.services.keys().collect(),
    };
    for name in names {
        let records = state
            .services
            .get(name)
            .map(|svc| (svc.clone(), state.endpoints.get(name).cloned()));
        cache.set_port(name, records);
    }
    let change = cache.take_change(changed.is_none());
    match (netlink, &change, changed) {
        (true, MapsChange::Elements { delete, add }, _) => {
            let lines = delete.len() + add.len();
            return netlink_sync(lab, t, socket, lines, |start| {
                encode_elements(Family::V4, delete, add, start)
            });
        }
        (true, MapsChange::Replace, None) => {
            return netlink_sync(lab, t, socket, cache.len(), |start| {
                encode_replacement(&cache.skeleton(), cache.elements(), &[], start)
            });
        }
        _ => {}
    }
    let (text, lines) = match (&change, changed) {
        (MapsChange::Replace, None) => (cache.replace_text(), cache.len()),
        (MapsChange::Replace, Some(_)) => {
            return Err(BenchError::Check("a P2 change replaced the maps table".into()));
        }
        (MapsChange::Elements { .. }, _) => (change.elements_text(Family::V4), change.len()),
    };
    let render = t.elapsed();
    if text.is_empty() {
        return Err(BenchError::Check("a change produced no maps transaction".into()));
    }
    let restore = lab.agent.restore("nft", &text)?;
    Ok(Sync {
        render,
        payload: Duration::ZERO,
        save: Duration::ZERO,
        restore,
        killed: false,
        lines,
    })
}

/// One write as the daemon makes it: one batch (`encode`) on a netlink socket in the lab's
/// namespace, kept open across changes (closing one after a batch that deleted elements waits in
/// the kernel).
fn netlink_sync(
    lab: &Lab,
    started: Instant,
    socket: &mut Option<NftSocket>,
    lines: usize,
    encode: impl FnOnce(Start) -> Result<Batch, EncodeError>,
) -> Result<Sync, BenchError> {
    let path = std::path::Path::new("/run/netns").join(&lab.ns.name);
    let bad = |e: String| BenchError::Check(format!("maps netlink write in {}: {e}", lab.ns.name));
    // Opening the socket (the first change only) counts in `render`; `restore` is the batch sent
    // and acknowledged.
    if socket.is_none() {
        *socket = Some(
            NftSocket::open_in(&path, svcnet_proxy::nftables::kernel::DEFAULT_TIMEOUT)
                .map_err(|e| bad(e.to_string()))?,
        );
    }
    let Some(socket) = socket.as_mut() else {
        return Err(bad("no socket".into()));
    };
    let batch = encode(socket.next_start()).map_err(|e| bad(e.to_string()))?;
    let render = started.elapsed();
    let t = Instant::now();
    socket.apply(&batch).map_err(|e| bad(e.to_string()))?;
    let restore = t.elapsed();
    Ok(Sync {
        render,
        payload: Duration::ZERO,
        save: Duration::ZERO,
        restore,
        killed: false,
        lines,
    })
}

pub(super) fn run(
    p: &P2Params,
    netlink: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<P2Layout, BenchError> {
    let row = if netlink { "maps-nl" } else { "maps" };
    let n = p.services;
    let all_ips = synth::cluster_ips(n + p.changes, 0x5eed);
    let mut state = synth::state(&all_ips[..n], p.endpoints_per_service);
    let cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        ..RenderConfig::default()
    };
    let mut lab = Lab::start(&format!("p2-{row}"))?;
    let mut cache = MapsCache::new(synth::node(), cfg);
    let mut socket = None;
    let full = sync(&mut lab, &state, &mut cache, None, netlink, &mut socket)?;
    progress(&format!(
        "P2 {row}: loaded {n} services / {} endpoints in {:.1} s (first load)",
        n * p.endpoints_per_service,
        full.total().as_secs_f64()
    ));
    let mut out = P2Layout {
        name: row.into(),
        full_lines: full.lines,
        initial_load: full.total(),
        initial_chunks: 1,
        endpoint_change: vec![],
        service_added: vec![],
        full: Some(full),
    };
    for k in 0..p.changes {
        let i = (k * 7919) % n.max(1);
        replace_endpoint(&mut state, i, k);
        let name = synth::service_name(i);
        out.endpoint_change.push(sync(
            &mut lab,
            &state,
            &mut cache,
            Some(&name),
            netlink,
            &mut socket,
        )?);
    }
    for k in 0..p.changes {
        add_service(&mut state, n + k, all_ips[n + k], p.endpoints_per_service);
        let name = synth::service_name(n + k);
        out.service_added.push(sync(
            &mut lab,
            &state,
            &mut cache,
            Some(&name),
            netlink,
            &mut socket,
        )?);
    }
    progress(&format!("P2 {row}: {} partial syncs done", 2 * p.changes));
    Ok(out)
}
