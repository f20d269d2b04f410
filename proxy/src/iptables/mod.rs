//! The iptables mode (`--proxy-mode iptables`, upstream's pkg/proxy/iptables): [`render`] (pure:
//! the KUBE-* chains and their iptables-restore payloads), `sync` (one family's sync: full or
//! partial, batch by batch), the kernel writers (`tools`: the iptables binaries of one family,
//! `backend`: nft or legacy; `apply`: jump rules and restores), `cleanup` (removing the
//! mode's rules) and [`nfacct`] (the counters only these rules feed). What both modes use lives in
//! `crate::sync`, `crate::exec` and below; the modes are peers (checked by testing/layers.py):
//!
//! Never imports: crate::nftables, crate::offline, crate::daemon, crate::cleanup.

mod apply;
mod backend;
pub(crate) mod cleanup;
pub mod nfacct;
pub mod render;
pub(crate) mod sync;
mod tools;

pub(crate) use backend::{Backend, detect_backend};
pub(crate) use sync::FamilySync;
pub(crate) use tools::{Iptables, saved_chains, split_rule};
