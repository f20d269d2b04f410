//! The node's conntrack sysctls, set at start from the KubeProxyConfiguration `conntrack` section (or the
//! `--conntrack-*` flags) as kube-proxy does: the table size scaled by cores with a floor, capped at
//! 1,048,576 (1.36), and left alone when it is already at least that large (1.37); the TCP and UDP
//! timeouts; tcp_be_liberal. A value already in place is not written. `plan` is pure; `apply` writes.
//!
//! nf_conntrack_max and the hash size are global to the kernel and writable only from the initial
//! network namespace; elsewhere (a container, a test namespace) the write fails and svcnet says so and
//! goes on, where kube-proxy would exit: the rules matter more than the table size.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

/// The most nf_conntrack_max kube-proxy 1.36+ asks for, however many cores (kubernetes#137002).
pub(crate) const MAX_CAP: u64 = 1 << 20;

const NETFILTER: &str = "/proc/sys/net/netfilter";
const HASHSIZE: &str = "/sys/module/nf_conntrack/parameters/hashsize";

/// Flags as kube-proxy's; `--config`'s `conntrack` section wins over them.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ConntrackArgs {
    /// Conntrack entries per CPU core (0: leave nf_conntrack_max as it is and ignore --conntrack-min).
    #[arg(long, default_value_t = 32768)]
    pub conntrack_max_per_core: u64,
    /// Floor of nf_conntrack_max, whatever the core count.
    #[arg(long, default_value_t = 131072)]
    pub conntrack_min: u64,
    /// Idle timeout of established TCP connections (0: leave as is).
    #[arg(long, default_value = "24h", value_parser = duration_arg)]
    pub conntrack_tcp_timeout_established: Duration,
    /// NAT timeout of TCP connections in CLOSE_WAIT (0: leave as is).
    #[arg(long, default_value = "1h", value_parser = duration_arg)]
    pub conntrack_tcp_timeout_close_wait: Duration,
    /// Mark only out-of-window RST segments INVALID (and so write no INVALID drop rule).
    #[arg(long)]
    pub conntrack_tcp_be_liberal: bool,
    /// Idle timeout of UDP flows seen in one direction (0: leave as is).
    #[arg(long, default_value = "0s", value_parser = duration_arg)]
    pub conntrack_udp_timeout: Duration,
    /// Idle timeout of UDP flows seen in both directions (0: leave as is).
    #[arg(long, default_value = "0s", value_parser = duration_arg)]
    pub conntrack_udp_timeout_stream: Duration,
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    crate::config_file::parse_duration(s)
}

/// One sysctl to write: its file and the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Write {
    pub path: PathBuf,
    pub value: u64,
}

/// nf_conntrack_max as kube-proxy computes it: cores x per-core, at least `min`, at most [`MAX_CAP`];
/// `None` when per-core is 0 (leave it).
pub(crate) fn desired_max(args: &ConntrackArgs, cores: u64) -> Option<u64> {
    if args.conntrack_max_per_core == 0 {
        return None;
    }
    let scaled = args.conntrack_max_per_core.saturating_mul(cores);
    Some(scaled.max(args.conntrack_min).min(MAX_CAP))
}

/// The writes that bring the node to `args`; `read` gives a sysctl's current value (`None`: unreadable,
/// written anyway so the failure is seen). nf_conntrack_max is only raised, never lowered.
pub(crate) fn plan(args: &ConntrackArgs, cores: u64, read: impl Fn(&Path) -> Option<u64>) -> Vec<Write> {
    let mut out = Vec::new();
    let mut want = |path: PathBuf, value: u64, only_raise: bool| {
        let current = read(&path);
        let needed = match current {
            Some(c) if only_raise => c < value,
            Some(c) => c != value,
            None => true,
        };
        if needed {
            out.push(Write { path, value });
        }
    };
    let nf = Path::new(NETFILTER);
    if let Some(max) = desired_max(args, cores) {
        want(nf.join("nf_conntrack_max"), max, true);
    }
    for (name, d) in [
        (
            "nf_conntrack_tcp_timeout_established",
            args.conntrack_tcp_timeout_established,
        ),
        (
            "nf_conntrack_tcp_timeout_close_wait",
            args.conntrack_tcp_timeout_close_wait,
        ),
        ("nf_conntrack_udp_timeout", args.conntrack_udp_timeout),
        (
            "nf_conntrack_udp_timeout_stream",
            args.conntrack_udp_timeout_stream,
        ),
    ] {
        if !d.is_zero() {
            want(nf.join(name), d.as_secs(), false);
        }
    }
    if args.conntrack_tcp_be_liberal {
        want(nf.join("nf_conntrack_tcp_be_liberal"), 1, false);
    }
    out
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Writes the plan; each failure is logged with its sysctl and the rest still written. After a larger
/// nf_conntrack_max the hash size follows (max / 4) when it is smaller, as kube-proxy does.
pub(crate) fn apply(args: &ConntrackArgs) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    for w in plan(args, cores, read_u64) {
        match std::fs::write(&w.path, w.value.to_string()) {
            Ok(()) => {
                tracing::info!(sysctl = %w.path.display(), value = w.value, "set conntrack sysctl");
                if w.path.ends_with("nf_conntrack_max") {
                    raise_hashsize(w.value / 4);
                }
            }
            Err(error) => tracing::warn!(
                sysctl = %w.path.display(),
                value = w.value,
                %error,
                "cannot set conntrack sysctl (read-only here?); left as it is"
            ),
        }
    }
}

fn raise_hashsize(want: u64) {
    let path = Path::new(HASHSIZE);
    if read_u64(path).is_some_and(|h| h >= want) {
        return;
    }
    if let Err(error) = std::fs::write(path, want.to_string()) {
        tracing::warn!(%error, want, "cannot set the conntrack hash size");
    }
}

#[cfg(test)]
mod tests;
