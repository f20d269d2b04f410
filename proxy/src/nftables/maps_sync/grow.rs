//! A sync whose ports need dispatch rules the kernel's table lacks (a new endpoint count, a new
//! affinity timeout): the table is grown in place by one netlink batch (the new sets and rules,
//! each rule placed by the handles read back from its chain, then the element steps), and replaced
//! whole only when that is refused. A replacement writes every element of the table again: 0.8 s
//! at 10k services, 2.5 s at 44k (docs/nftables-maps.md).

use std::collections::BTreeMap;

use super::Held;
use super::replace::write_replacement;
use crate::exec::ToolError;
use crate::nftables::kernel::{Nft, Writer, off_thread};
use crate::nftables::netlink::{self, EncodeError};
use crate::nftables::render::maps::MapsChange;
use crate::nftables::socket::{NetlinkError, NftSocket};

/// Why a growth did not happen (the table is then replaced).
#[derive(Debug, thiserror::Error)]
enum GrowError {
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error("reading the rule handles: {0}")]
    Read(NetlinkError),
    #[error("nftables refused {step}: {errno}")]
    Refused {
        step: &'static str,
        errno: std::io::Error,
    },
    #[error(transparent)]
    Socket(NetlinkError),
}

/// Grows the held table when one is held (`first` false), else (or when that fails) replaces it.
/// Returns the socket to keep, the table, the change the kernel now holds and the writer.
pub(super) async fn grow_or_replace(
    nft: &Nft,
    socket: Option<NftSocket>,
    held: Held,
    first: bool,
) -> (
    Option<NftSocket>,
    Held,
    MapsChange,
    Result<(Writer, usize), ToolError>,
) {
    let (socket, held) = if first {
        (socket, held)
    } else {
        let timeout = nft.timeout;
        let (socket, held, grown) = off_thread(move || {
            let mut s = match socket.map_or_else(|| NftSocket::open(timeout), Ok) {
                Ok(s) => s,
                Err(e) => return (None, held, Err(GrowError::Socket(e))),
            };
            let grown = grow(&mut s, &held);
            let keep = !matches!(grown, Err(GrowError::Refused { .. } | GrowError::Socket(_)));
            (keep.then_some(s), held, grown)
        })
        .await;
        match grown {
            Ok((change, bytes)) => return (socket, held, change, Ok((Writer::Netlink, bytes))),
            Err(err) => {
                tracing::warn!(%err, "nftables maps: new dispatch rules not added in place; replacing the table");
                (socket, held)
            }
        }
    };
    let (socket, held, written) = write_replacement(nft, socket, held).await;
    (socket, held, MapsChange::Replace, written)
}

/// One growth batch: returns the element steps it carried and its bytes.
fn grow(socket: &mut NftSocket, held: &Held) -> Result<(MapsChange, usize), GrowError> {
    let (before, after) = (held.cache.held_skeleton(), held.cache.skeleton());
    let family = after.family;
    let chains = netlink::grown_chains(&before, &after);
    let mut handles = BTreeMap::new();
    for &chain in &chains {
        let h = socket.rule_handles(family, chain).map_err(GrowError::Read)?;
        handles.insert(chain.to_string(), h);
    }
    let change = held.cache.element_steps();
    let MapsChange::Elements { delete, add } = &change else {
        return Err(EncodeError::Chain("*".into(), "no element steps".into()).into());
    };
    let batch = netlink::encode_growth(&before, &after, &handles, delete, add, socket.next_start())?;
    socket.apply(&batch).map_err(|e| match e {
        NetlinkError::Refused { index, errno } => GrowError::Refused {
            step: netlink::growth_step(&batch, index),
            errno: std::io::Error::from_raw_os_error(errno),
        },
        other => GrowError::Socket(other),
    })?;
    tracing::info!(?chains, "nftables maps: dispatch rules added in place");
    Ok((change, batch.bytes.len()))
}
