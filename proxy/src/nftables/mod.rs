//! The nftables mode (`--proxy-mode nftables`, upstream's pkg/proxy/nftables): [`render`] (pure: the
//! `kube-proxy` table as plain data and the transaction from what the kernel holds to it), `sync`
//! (one family's sync: full or partial), and the kernel writers ([`kernel`]: a transaction into the
//! table, [`netlink`]: encoded as one nf_tables batch, [`socket`]: sent over netlink). What both
//! modes use lives in `crate::sync`, `crate::exec` and below; the modes are peers (checked by
//! testing/layers.py):
//!
//! Never imports: crate::iptables, crate::offline, crate::daemon, crate::cleanup.

pub mod kernel;
mod maps_sync;
pub mod netlink;
pub mod render;
pub mod socket;
pub(crate) mod sync;

pub(crate) use sync::NftFamilySync;
