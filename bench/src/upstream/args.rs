//! Part U's command-line flags (flattened into `svcnet-bench`'s) and their defaults.

use std::time::Duration;

use super::{Backend, Proxy, UParams};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct UArgs {
    /// U: state SERVICESxENDPOINTS_PER_SERVICE; default 10000x10 (quick: 200x5).
    #[arg(long, value_parser = crate::p4::parse_size)]
    pub up_size: Option<(usize, usize)>,
    /// U: proxies to run, in order; default five (kube-proxy iptables and nftables, svcnet tree,
    /// flat and nftables); `svcnet-maps` (nftables maps layout) only when named.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub up_proxies: Option<Vec<Proxy>>,
    /// U: timed changes of each kind per proxy; default 10 (quick: 3).
    #[arg(long)]
    pub up_changes: Option<usize>,
    /// U: pause after each timed change, ms; default 2000 (quick: 1200). Above the 1 s
    /// min-sync-period, so each change meets an idle proxy.
    #[arg(long)]
    pub up_gap_ms: Option<u64>,
    /// U: endpoint changes of the CPU figure; default 1000 (quick: 40).
    #[arg(long)]
    pub up_churn: Option<usize>,
    /// U: churn rate, changes per second; default 50 (quick: 20).
    #[arg(long)]
    pub up_churn_rate: Option<f64>,
    /// U: connects per added Service for the first-packet figure; default 100 (quick: 20).
    #[arg(long)]
    pub up_connects: Option<usize>,
    /// U: give up waiting for a full sync or a change after this many seconds (kube-proxy's
    /// iptables mode at 10k/100k does not finish its first sync in this time with iptables-nft 1.8.9).
    #[arg(long, default_value_t = 600)]
    pub up_limit_s: u64,
    /// U: the iptables of the iptables-mode proxies: `nft` (this machine's `iptables`) or `legacy`
    /// (kube-proxy finds `iptables*` -> iptables-legacy first on its PATH; svcnet runs with
    /// `--iptables-backend legacy`). GKE's Container-Optimized OS nodes run legacy.
    #[arg(long, value_enum, default_value_t = Backend::Nft)]
    pub up_iptables: Backend,
}

impl UArgs {
    pub fn params(&self, quick: bool) -> UParams {
        let pick = |v: Option<usize>, full: usize, q: usize| v.unwrap_or(if quick { q } else { full });
        let (services, endpoints) = self
            .up_size
            .unwrap_or(if quick { (200, 5) } else { (10_000, 10) });
        UParams {
            services,
            endpoints,
            proxies: self.up_proxies.clone().unwrap_or_else(|| Proxy::ALL.to_vec()),
            changes: pick(self.up_changes, 10, 3),
            gap: Duration::from_millis(self.up_gap_ms.unwrap_or(if quick { 1200 } else { 2000 })),
            churn: pick(self.up_churn, 1000, 40),
            churn_per_s: self.up_churn_rate.unwrap_or(if quick { 20.0 } else { 50.0 }),
            connects: pick(self.up_connects, 100, 20),
            limit: Duration::from_secs(self.up_limit_s),
            iptables: self.up_iptables,
        }
    }
}
