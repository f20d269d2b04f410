//! A full sync's write of the whole table. Where no packet reaches the kernel's table (there is
//! none, or it is dormant: a load in pieces that failed half way) it is loaded in pieces of bounded
//! size, woken last ([`netlink::Pieces`]); over a table packets reach (a restart, the hourly sync,
//! the other layout's table) it is one batch that keeps the hooked chains, so every packet sees
//! the old table or the new one, and leaves as they are the sets that already hold what the cache
//! holds ([`netlink::plan_refresh`]), so it carries only the others' elements.

use super::{Held, affinity, socket_or_open};
use crate::exec::ToolError;
use crate::nftables::kernel::{Nft, WriteError, Writer, kernel_error, off_thread};
use crate::nftables::netlink::read::TableObjects;
use crate::nftables::netlink::{self, Batch, RefreshPlan};
use crate::nftables::render::maps::{MapsElement, MapsTable, nft_loadable};
use crate::nftables::socket::{NetlinkError, NftSocket};

/// The whole table written from the cache, off the async threads: in pieces or as one
/// replacement batch (above); a table the encoder refuses goes through `nft -f` instead, with a
/// warning. Returns the socket to keep, the table, the writer and bytes.
pub(super) async fn write_replacement(
    nft: &Nft,
    socket: Option<NftSocket>,
    held: Held,
) -> (Option<NftSocket>, Held, Result<(Writer, usize), ToolError>) {
    let timeout = nft.timeout;
    let (socket, held, result) = off_thread(move || {
        let mut s = match socket_or_open(socket, timeout) {
            Ok(s) => s,
            Err(e) => return (None, held, Err(e)),
        };
        let result = write_table(&mut s, &held);
        let keep = !matches!(result, Err(WriteError::Kernel(_)));
        (keep.then_some(s), held, result)
    })
    .await;
    match result {
        Ok(bytes) => (socket, held, Ok((Writer::Netlink, bytes))),
        Err(WriteError::Encode(e)) => {
            tracing::warn!(error = %e, "nftables maps: netlink encoder cannot express the table; using nft -f");
            let (text, left_out) = nft_loadable(&held.cache.replace_text());
            if left_out > 0 {
                tracing::warn!(
                    rules = left_out,
                    "nftables maps: IPv6 ClientIP affinity is not written (nft cannot load its record rules)"
                );
            }
            let r = nft.apply(&text).await.map(|()| (Writer::Binary, text.len()));
            (socket, held, r)
        }
        Err(WriteError::Kernel(e)) => (socket, held, Err(e)),
    }
}

/// The table written on `s` as [`write_replacement`] says; returns the bytes sent.
fn write_table(s: &mut NftSocket, held: &Held) -> Result<usize, WriteError> {
    let family = held.cache.cfg().family;
    let timed = match affinity::read(s, family, held.cache.stickies()) {
        Ok(entries) => affinity::carried(&held.cache, &entries),
        Err(err) => {
            tracing::warn!(%err, "nftables maps: affinity entries not carried into the replacement");
            Vec::new()
        }
    };
    let kernel = match s.table_objects(family) {
        Ok(None) => return load_in_pieces(s, held, &timed),
        Ok(Some(k)) if k.dormant || !k.chains.iter().any(|c| c.hooked) => {
            return load_in_pieces(s, held, &timed);
        }
        Ok(Some(k)) => Some(k),
        Err(err) => {
            tracing::warn!(%err, "nftables maps: the table's objects not read; deleting the table instead");
            None
        }
    };
    let skeleton = held.cache.skeleton();
    let plan = match &kernel {
        Some(k) => refresh_plan(s, held, &skeleton, k),
        None => RefreshPlan::default(),
    };
    let mut result = replace(s, held, &skeleton, &timed, kernel.as_ref(), &plan);
    if kernel.is_some() && matches!(result, Err((_, true))) {
        // E.g. a hooked chain the kernel cannot redefine in place (another hook or priority).
        tracing::warn!(
            "nftables maps: the replacement keeping the hooked chains was refused; deleting the table instead"
        );
        result = replace(s, held, &skeleton, &timed, None, &RefreshPlan::default());
    }
    result.map_err(|(e, _)| e)
}

/// Which sets of the kernel's live table `k` a replacement leaves as they are (they hold what the
/// cache holds) or flushes ([`netlink::plan_refresh`]); none when reading them fails (every set is
/// declared and written again then).
fn refresh_plan(s: &mut NftSocket, held: &Held, skeleton: &MapsTable, k: &TableObjects) -> RefreshPlan {
    let family = skeleton.family;
    match netlink::plan_refresh(skeleton, held.cache.elements(), k, |set| {
        s.set_digest(family, set)
    }) {
        Ok(plan) => {
            tracing::debug!(
                kept = plan.keep.len(),
                flushed = plan.flush.len(),
                sets = skeleton.sets.len(),
                "nftables maps: sets the replacement leaves as they are or flushes"
            );
            plan
        }
        Err(err) => {
            tracing::warn!(%err, "nftables maps: the table's elements not compared; writing every set");
            RefreshPlan::default()
        }
    }
}

/// The table loaded in pieces ([`netlink::Pieces`]); returns the bytes of all of them. A failure
/// leaves a dormant table, which the next full sync loads in pieces again.
fn load_in_pieces(s: &mut NftSocket, held: &Held, timed: &[(MapsElement, u64)]) -> Result<usize, WriteError> {
    let skeleton = held.cache.skeleton();
    let mut pieces = netlink::Pieces::new(&skeleton, held.cache.elements(), timed, netlink::PIECE_BYTES);
    let (mut bytes, mut batches) = (0, 0);
    while let Some(batch) = pieces.next_batch(s.next_start()).map_err(WriteError::Encode)? {
        apply(s, &batch).map_err(|(e, _)| e)?;
        bytes += batch.bytes.len();
        batches += 1;
    }
    tracing::debug!(
        batches,
        bytes,
        "nftables maps: table loaded in pieces, woken last"
    );
    Ok(bytes)
}

/// One replacement batch (see [`netlink::encode_replacement`]; over the kernel's table `kernel`
/// as `plan` says: [`netlink::encode_refresh`]) applied on `s`; returns its bytes, or the error
/// and whether the kernel refused the batch (the socket still usable).
fn replace(
    s: &mut NftSocket,
    held: &Held,
    skeleton: &MapsTable,
    timed: &[(MapsElement, u64)],
    kernel: Option<&TableObjects>,
    plan: &RefreshPlan,
) -> Result<usize, (WriteError, bool)> {
    let elements = held.cache.elements();
    let batch = match kernel {
        Some(k) => netlink::encode_refresh(skeleton, elements, timed, k, plan, s.next_start()),
        None => netlink::encode_replacement(skeleton, elements, timed, None, s.next_start()),
    }
    .map_err(|e| (WriteError::Encode(e), false))?;
    apply(s, &batch)?;
    Ok(batch.bytes.len())
}

/// `batch` applied on `s`; on failure the error naming the refused step, and whether the kernel
/// refused the batch (the socket still usable).
fn apply(s: &mut NftSocket, batch: &Batch) -> Result<(), (WriteError, bool)> {
    s.apply(batch).map_err(|e| match e {
        NetlinkError::Refused { index, errno } => {
            let e = ToolError::Netlink(format!(
                "{}: {}",
                std::io::Error::from_raw_os_error(errno),
                netlink::replacement_step(batch, index)
            ));
            (WriteError::Kernel(e), true)
        }
        other => (kernel_error(other), false),
    })
}
