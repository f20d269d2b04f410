//! P2's nftables rows, with the nftables daemon's code: the first load streamed as its full sync
//! (render, encode and write interleaved), then the same changes as the iptables layouts, each the
//! transaction of what changed (render of the changed ports, diff), written as the daemon writes it,
//! one netlink batch (row `nftnl`), or through `nft -f` (row `nft`, the fallback writer, which is
//! what kube-proxy's nftables mode runs; its first load is one `nft -f`).

use std::time::{Duration, Instant};

use svcnet_proxy::config::RenderConfig;
use svcnet_proxy::model::ProxyState;
use svcnet_proxy::nftables::kernel::STREAM_BATCH_OPS;
use svcnet_proxy::nftables::netlink;
use svcnet_proxy::nftables::render::{self as nft, Applied, Existing};
use svcnet_proxy::nftables::socket::NftSocket;

use super::{P2Layout, P2Params, Sync, add_service, replace_endpoint};
use crate::error::BenchError;
use crate::lab::Lab;
use crate::synth;

/// How the nftables rows write: svcnet's netlink batches, or `nft -f`.
enum NftWriter {
    /// With the most steps per batch of a streamed full sync.
    Netlink(NftSocket, usize),
    Binary,
}

/// One nftables sync of `state` on top of what `applied` says the kernel holds: the first one
/// streamed as the daemon's full sync (render, encode and write interleaved: all in `restore`),
/// later ones partial (`render`: taking the inputs, rendering the changed ports and diffing them;
/// `restore`: encoding and writing).
fn nft_sync(
    writer: &mut NftWriter,
    lab: &mut Lab,
    state: &ProxyState,
    first: bool,
    cfg: &RenderConfig,
    applied: &mut Applied,
) -> Result<Sync, BenchError> {
    // Taking the inputs from the model is part of every sync.
    let t = Instant::now();
    let inputs = nft::Inputs::new(state, synth::node(), cfg.clone());
    if first && let NftWriter::Netlink(socket, batch) = writer {
        let mut stream = nft::FullStream::new(inputs, Existing::default(), nft::Start::Over);
        svcnet_proxy::nftables::kernel::write_stream(socket, &mut stream, *batch, None, None)
            .map_err(|e| BenchError::Check(format!("netlink stream: {e}")))?;
        let restore = t.elapsed();
        let lines = stream.stats.rules_written + stream.stats.elements_added + stream.stats.chains_written;
        applied.commit_full(stream);
        return Ok(Sync {
            render: Duration::ZERO,
            payload: Duration::ZERO,
            save: Duration::ZERO,
            restore,
            killed: false,
            lines,
        });
    }
    let tx = match first {
        false => nft::partial(applied, inputs),
        true => nft::full(inputs, &Existing::default(), nft::Start::Over),
    };
    let render = t.elapsed();
    if tx.ops.is_empty() {
        return Err(BenchError::Check(
            "a change produced no nftables transaction".into(),
        ));
    }
    let lines = tx.ops.len();
    let restore = match writer {
        NftWriter::Binary => lab.agent.restore("nft", &tx.text())?,
        NftWriter::Netlink(socket, _) => {
            // Encoding is part of the write, as in the daemon.
            let t = Instant::now();
            for ops in svcnet_proxy::nftables::kernel::batches(&tx) {
                let batch = netlink::encode(tx.family(), ops, tx.sets(), socket.next_start())
                    .map_err(|e| BenchError::Check(format!("netlink encode: {e}")))?;
                socket
                    .apply(&batch)
                    .map_err(|e| BenchError::Check(format!("netlink batch: {e}")))?;
            }
            t.elapsed()
        }
    };
    applied.commit(tx);
    Ok(Sync {
        render,
        payload: Duration::ZERO,
        save: Duration::ZERO,
        restore,
        killed: false,
        lines,
    })
}

/// The nftables mode on the same state and changes as the iptables layouts: through netlink with
/// at most `batch` steps per batch of the first load, or (none) through `nft -f`.
pub(super) fn run(
    batch: Option<usize>,
    p: &P2Params,
    progress: &mut dyn FnMut(&str),
) -> Result<P2Layout, BenchError> {
    let n = p.services;
    let all_ips = synth::cluster_ips(n + p.changes, 0x5eed);
    let mut state = synth::state(&all_ips[..n], p.endpoints_per_service);
    let cfg = RenderConfig::default();
    let name = match batch {
        None => "nft".to_string(),
        Some(STREAM_BATCH_OPS) => "nftnl".to_string(),
        Some(b) => format!("nftnl@{b}"),
    };
    let mut lab = Lab::start(&format!("p2-{}", name.replace('@', "-")))?;
    let mut writer = if let Some(batch) = batch {
        let path = std::path::Path::new("/run/netns").join(&lab.ns.name);
        let socket = NftSocket::open_in(&path, svcnet_proxy::nftables::kernel::DEFAULT_TIMEOUT)
            .map_err(|e| BenchError::Check(format!("netlink socket in {}: {e}", lab.ns.name)))?;
        NftWriter::Netlink(socket, batch)
    } else {
        NftWriter::Binary
    };
    let mut applied = Applied::default();
    let full = nft_sync(&mut writer, &mut lab, &state, true, &cfg, &mut applied)?;
    progress(&format!(
        "P2 {name}: loaded {n} services / {} endpoints in {:.1} s (first load)",
        n * p.endpoints_per_service,
        full.total().as_secs_f64()
    ));
    let mut out = P2Layout::loaded(&name, full.lines, full.total(), 1, Some(full));
    let mut partial = |state: &ProxyState| nft_sync(&mut writer, &mut lab, state, false, &cfg, &mut applied);
    for k in 0..p.changes {
        let i = (k * 7919) % n.max(1);
        replace_endpoint(&mut state, i, k);
        out.endpoint_change.push(partial(&state)?);
    }
    for k in 0..p.changes {
        add_service(&mut state, n + k, all_ips[n + k], p.endpoints_per_service);
        out.service_added.push(partial(&state)?);
    }
    progress(&format!("P2 {name}: {} partial syncs done", 2 * p.changes));
    Ok(out)
}
