//! Throwaway network namespaces for tests and the lab, in one place.
//!
//! - [`Netns`]: a guard over a namespace named `svcnet-t-<tag>-<pid>-<n>`, with only its own `lo` (up)
//!   and never linked to the root namespace; dropping it (also while a panic unwinds) kills what still
//!   runs inside and deletes it.
//! - [`exec`], [`run`], [`command`]: run a program (inside a namespace), stdin in, stdout and stderr out.
//! - [`netns_or_skip`] / [`skip_or_panic`]: a missing capability prints `SKIPPED: reason` outside CI
//!   and panics under `CI=true`, so a skip never passes for a green CI run.
//! - [`link`]: the wiring harnesses build their topologies from (veth pairs between two namespaces,
//!   bridges, addresses, routes, forwarding), over namespace names so guards and persistent namespaces
//!   share it; [`add`] makes a namespace without a guard.
//! - [`sweep_dead`]: a test process killed by a signal never drops its guards; the next run deletes the
//!   namespaces whose embedded pid no longer exists.
#![forbid(unsafe_code)]

mod error;
mod exec;
mod guard;
pub mod link;
mod name;
mod skip;
mod sweep;

pub use error::NetnsError;
pub use exec::{Ran, command, exec, run};
pub use guard::Netns;
pub use name::{PREFIX, owner_pid};
pub use skip::{in_ci, netns_or_skip, skip_or_panic};
pub use sweep::{add, delete, list, sweep_dead};
