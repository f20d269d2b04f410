//! P2's `maps` rows: the nftables mode's maps layout (issue 32, docs/nftables-maps.md) on the same
//! state and changes as the other rows. Row `maps` writes through `nft -f`: the first load as the
//! whole table's text, each change (only the changed port rendered into the layout's per-port
//! cache) as its element transaction. Row `maps-nl` writes as the daemon does, through svcnet's
//! netlink writer on a socket kept open across changes: the first load as one batch holding the
//! whole table, each change as one batch of typed elements. `render` is the cache update and the
//! text or batch; `restore` the write until `nft` exits or the kernel acknowledges. A Service
//! with an endpoint count no port has needs new dispatch rules: `maps-nl` grows the table in place
//! as the daemon does, `maps` replaces it.

use std::time::{Duration, Instant};

use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::model::{Family, ProxyState, ServicePortName};
use svcnet_proxy::nftables::netlink::{self, Batch, EncodeError, Start, encode_elements, encode_replacement};
use svcnet_proxy::nftables::render::maps::{MapsCache, MapsChange};
use svcnet_proxy::nftables::socket::NftSocket;

use super::{P2Layout, P2Params, Sync, add_service, replace_endpoint};
use crate::error::BenchError;
use crate::lab::Lab;
use crate::synth;

/// Renders `changed` ports (all, on the first load) and writes the transaction.
pub(crate) fn sync(
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
                encode_replacement(&cache.skeleton(), cache.elements(), &[], None, start)
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

/// A Service whose endpoint count no port has, or with ClientIP affinity (its own map and chains):
/// the daemon grows the table in place (new sets, chains and rules placed by the handles read back
/// from the kernel, with the port's elements, one batch); through `nft -f` the table is replaced.
fn growth(
    lab: &mut Lab,
    cache: &mut MapsCache,
    name: &ServicePortName,
    records: svcnet_proxy::nftables::render::maps::PortRecords,
    netlink: bool,
    socket: &mut Option<NftSocket>,
) -> Result<Sync, BenchError> {
    let t = Instant::now();
    cache.set_port(name, Some(records));
    if cache.peek_change(false) != MapsChange::Replace {
        return Err(BenchError::Check(
            "a new endpoint count or affinity port needed no new rule".into(),
        ));
    }
    if !netlink {
        let text = cache.replace_text();
        cache.commit_change(false, &MapsChange::Replace);
        let render = t.elapsed();
        let restore = lab.agent.restore("nft", &text)?;
        return Ok(Sync {
            render,
            payload: Duration::ZERO,
            save: Duration::ZERO,
            restore,
            killed: false,
            lines: cache.len(),
        });
    }
    let (held, grown) = (cache.held_skeleton(), cache.skeleton());
    let mut handles = std::collections::BTreeMap::new();
    let s = socket
        .as_mut()
        .ok_or_else(|| BenchError::Check("no netlink socket before a growth".into()))?;
    for chain in netlink::grown_chains(&held, &grown) {
        let h = s
            .rule_handles(Family::V4, chain)
            .map_err(|e| BenchError::Check(format!("rule handles of {chain}: {e}")))?;
        handles.insert(chain.to_string(), h);
    }
    let steps = cache.element_steps();
    let MapsChange::Elements { delete, add } = &steps else {
        return Err(BenchError::Check("no element steps".into()));
    };
    let out = netlink_sync(lab, t, socket, steps.len(), |start| {
        netlink::encode_growth(&held, &grown, &handles, delete, add, start)
    })?;
    cache.commit_change(false, &steps);
    Ok(out)
}

/// The port with ClientIP affinity (the default timeout).
fn sticky(svc: &mut std::sync::Arc<svcnet_proxy::model::ServicePort>) {
    let mut port = (**svc).clone();
    port.session_affinity = Some(10800);
    *svc = std::sync::Arc::new(port);
}

pub(super) fn run(
    p: &P2Params,
    netlink: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<P2Layout, BenchError> {
    let row = if netlink { "maps-nl" } else { "maps" };
    let n = p.services;
    let all_ips = synth::cluster_ips(n + 3 * p.changes, 0x5eed);
    let mut state = synth::state(&all_ips[..n], p.endpoints_per_service);
    if p.maps_affinity {
        state.services.values_mut().for_each(sticky);
    }
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
    let mut out = P2Layout::loaded(row, full.lines, full.total(), 1, Some(full));
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
    for k in 0..p.changes {
        let i = n + p.changes + k;
        add_service(&mut state, i, all_ips[i], p.endpoints_per_service + 1 + k);
        let name = synth::service_name(i);
        let records = (state.services[&name].clone(), state.endpoints.get(&name).cloned());
        let grown = growth(&mut lab, &mut cache, &name, records, netlink, &mut socket)?;
        out.new_count.push(grown);
    }
    for k in 0..p.changes {
        let i = n + 2 * p.changes + k;
        add_service(&mut state, i, all_ips[i], p.endpoints_per_service);
        let name = synth::service_name(i);
        let mut svc = state.services[&name].clone();
        sticky(&mut svc);
        let records = (svc, state.endpoints.get(&name).cloned());
        let grown = growth(&mut lab, &mut cache, &name, records, netlink, &mut socket)?;
        out.affinity_added.push(grown);
    }
    progress(&format!("P2 {row}: {} partial syncs done", 4 * p.changes));
    Ok(out)
}
