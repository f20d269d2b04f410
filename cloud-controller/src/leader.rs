//! Leader election with kube-lease-manager: a `coordination.k8s.io` Lease (default
//! `kube-system/svcnet-cloud-controller`). Controllers start only once this replica holds the
//! lease; losing it stops the process (as upstream's OnStoppedLeading), so two replicas never act
//! on GCE at once. On shutdown the lease is released so the next replica takes over at once.

use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Elect a leader before acting (disable only for a single replica).
    #[arg(long = "leader-elect", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,
    #[arg(long = "leader-elect-resource-namespace", default_value = "kube-system")]
    pub namespace: String,
    #[arg(
        long = "leader-elect-resource-name",
        default_value = "svcnet-cloud-controller"
    )]
    pub lease_name: String,
    /// Holder identity; default `<hostname>_<random>`.
    #[arg(long = "leader-elect-identity")]
    pub identity: Option<String>,
    /// Lease duration: how long a dead leader blocks the others.
    #[arg(long = "leader-elect-lease-duration-seconds", default_value_t = 15)]
    pub duration: u64,
    /// Renew this long before the lease expires (must be < duration).
    #[arg(long = "leader-elect-grace-seconds", default_value_t = 5)]
    pub grace: u64,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum LeaderError {
    #[error("leader election: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    #[error("leader election: invalid timing: grace ({grace}s) must be > 0 and < duration ({duration}s)")]
    Timing { duration: u64, grace: u64 },
    #[error("leader election: the lease watcher stopped")]
    Stopped,
}

pub(crate) fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "svcnet".to_owned());
    format!("{host}_{}", &crate::clusterid::random_id()[..8])
}

/// A held lease. Dropping it releases the lease (the watcher task sees the channel close).
pub(crate) struct Leadership {
    rx: watch::Receiver<bool>,
    handle: JoinHandle<Result<kube_lease_manager::LeaseManager, kube_lease_manager::LeaseManagerError>>,
    pub identity: String,
}

impl Leadership {
    /// Resolves when the lease is lost (or its watcher died).
    pub(crate) async fn lost(&mut self) {
        loop {
            if !*self.rx.borrow_and_update() {
                return;
            }
            if self.rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Gives the lease up and waits for the release to be written.
    pub(crate) async fn release(self) {
        drop(self.rx);
        match self.handle.await {
            Ok(Ok(_)) => tracing::info!("lease released"),
            Ok(Err(err)) => tracing::warn!(%err, "releasing the lease failed"),
            Err(err) => tracing::warn!(%err, "lease watcher task failed"),
        }
    }
}

/// Blocks until this replica holds the lease.
pub(crate) async fn acquire(client: kube::Client, args: &LeaderArgs) -> Result<Leadership, LeaderError> {
    if args.grace == 0 || args.grace >= args.duration {
        return Err(LeaderError::Timing {
            duration: args.duration,
            grace: args.grace,
        });
    }
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let manager = LeaseManagerBuilder::new(client, &args.lease_name)
        .with_namespace(&args.namespace)
        .with_identity(&identity)
        .with_duration(args.duration)
        .with_grace(args.grace)
        .build()
        .await?;
    let (mut rx, handle) = manager.watch().await;
    tracing::info!(%identity, lease = %format!("{}/{}", args.namespace, args.lease_name), "waiting for leadership");
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return Err(LeaderError::Stopped);
        }
    }
    tracing::info!(%identity, "became leader");
    Ok(Leadership { rx, handle, identity })
}
