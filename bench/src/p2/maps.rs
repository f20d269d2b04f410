//! P2's `maps` row: the nftables mode's maps layout (issue 32, docs/nftables-maps.md) on the same
//! state and changes as the other rows. The first load is the whole table in one `nft -f`; each
//! change is the transaction from the previous table (element steps only while no new endpoint count
//! appears), also through `nft -f`. `render` is the maps render of the whole state plus the diff.

use std::time::{Duration, Instant};

use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::model::ProxyState;
use svcnet_proxy::nftables::render::maps::{self, MapsChange, MapsTable};

use super::{P2Layout, P2Params, Sync, add_service, replace_endpoint};
use crate::error::BenchError;
use crate::lab::Lab;
use crate::synth;

fn sync(
    lab: &mut Lab,
    state: &ProxyState,
    cfg: &RenderConfig,
    held: &mut Option<MapsTable>,
) -> Result<Sync, BenchError> {
    let t = Instant::now();
    let next = maps::render(state, &synth::node(), cfg);
    let (text, lines) = match held.as_ref() {
        None => (next.text(), next.elements.len()),
        Some(prev) => {
            let change = maps::change(prev, &next);
            if change == MapsChange::Replace {
                return Err(BenchError::Check("a P2 change replaced the maps table".into()));
            }
            (change.text(&next), change.len())
        }
    };
    let render = t.elapsed();
    if text.is_empty() {
        return Err(BenchError::Check("a change produced no maps transaction".into()));
    }
    let restore = lab.agent.restore("nft", &text)?;
    *held = Some(next);
    Ok(Sync {
        render,
        payload: Duration::ZERO,
        save: Duration::ZERO,
        restore,
        killed: false,
        lines,
    })
}

pub(super) fn run(p: &P2Params, progress: &mut dyn FnMut(&str)) -> Result<P2Layout, BenchError> {
    let n = p.services;
    let all_ips = synth::cluster_ips(n + p.changes, 0x5eed);
    let mut state = synth::state(&all_ips[..n], p.endpoints_per_service);
    let cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        ..RenderConfig::default()
    };
    let mut lab = Lab::start("p2-maps")?;
    let mut held = None;
    let full = sync(&mut lab, &state, &cfg, &mut held)?;
    progress(&format!(
        "P2 maps: loaded {n} services / {} endpoints in {:.1} s (first load)",
        n * p.endpoints_per_service,
        full.total().as_secs_f64()
    ));
    let mut out = P2Layout {
        name: "maps".into(),
        full_lines: full.lines,
        initial_load: full.total(),
        initial_chunks: 1,
        endpoint_change: vec![],
        service_added: vec![],
        full: Some(full),
    };
    for k in 0..p.changes {
        replace_endpoint(&mut state, (k * 7919) % n.max(1), k);
        out.endpoint_change.push(sync(&mut lab, &state, &cfg, &mut held)?);
    }
    for k in 0..p.changes {
        add_service(&mut state, n + k, all_ips[n + k], p.endpoints_per_service);
        out.service_added.push(sync(&mut lab, &state, &cfg, &mut held)?);
    }
    progress(&format!("P2 maps: {} partial syncs done", 2 * p.changes));
    Ok(out)
}
