//! Which iptables backend (nft or legacy) the node uses.
//!
//! Backend choice follows upstream's iptables-wrapper: use the backend that already holds the node's
//! rules (kubelet's KUBE-IPTABLES-HINT / KUBE-KUBELET-CANARY chains first, else whichever has more
//! rules; nft on a tie), because mixing both on one node silently splits the ruleset.

use crate::exec::{exec, on_path};

/// Which iptables flavour the binaries are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `iptables-nft*`.
    Nft,
    /// `iptables-legacy*`.
    Legacy,
    /// Only the plain `iptables*` names exist: use whatever they point to.
    Plain,
}

impl Backend {
    /// The most chains one iptables-restore call should carry, given `--iptables-restore-max-chains`.
    /// iptables-legacy reads and rewrites whole tables at every call, so more calls only cost more
    /// (docs/BENCHMARKS.md, "U on iptables-legacy"); batching is for iptables-nft, whose restore
    /// slows quadratically with the chains of one call.
    pub(crate) fn restore_max_chains(self, configured: usize) -> usize {
        match self {
            Backend::Legacy => crate::iptables::render::UNBATCHED,
            Backend::Nft | Backend::Plain => configured,
        }
    }

    pub(super) fn suffix(self) -> &'static str {
        match self {
            Backend::Nft => "-nft",
            Backend::Legacy => "-legacy",
            Backend::Plain => "",
        }
    }
}

/// Counts rule lines in iptables-save output and notices kubelet's hint chains.
pub(super) fn save_facts(save_output: &str) -> (usize, bool) {
    let rules = save_output.lines().filter(|l| l.starts_with('-')).count();
    let hint = save_output
        .lines()
        .any(|l| l.starts_with(":KUBE-IPTABLES-HINT") || l.starts_with(":KUBE-KUBELET-CANARY"));
    (rules, hint)
}

/// Upstream iptables-wrapper's decision from (rules, hint) of legacy and nft.
pub(super) fn choose_backend(legacy: (usize, bool), nft: (usize, bool)) -> Backend {
    if nft.1 {
        Backend::Nft
    } else if legacy.1 || legacy.0 > nft.0 {
        Backend::Legacy
    } else {
        Backend::Nft
    }
}

async fn save_all(suffix: &str) -> (usize, bool) {
    let mut total = (0, false);
    for tool in ["iptables", "ip6tables"] {
        let program = format!("{tool}{suffix}-save");
        if !on_path(&program) {
            continue;
        }
        if let Ok(out) = exec(&program, &[], None).await {
            let (n, hint) = save_facts(&out.stdout);
            total.0 += n;
            total.1 |= hint;
        }
    }
    total
}

/// Picks the backend (see the module docs). `forced` comes from `--iptables-backend`.
pub(crate) async fn detect_backend(forced: Option<Backend>) -> Backend {
    if let Some(b) = forced {
        return b;
    }
    let nft = on_path("iptables-nft-restore");
    let legacy = on_path("iptables-legacy-restore");
    match (nft, legacy) {
        (true, true) => choose_backend(save_all("-legacy").await, save_all("-nft").await),
        (true, false) => Backend::Nft,
        (false, true) => Backend::Legacy,
        (false, false) => Backend::Plain,
    }
}
