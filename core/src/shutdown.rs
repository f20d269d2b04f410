//! Shutdown: OS signals and a cloneable handle that tasks can await.

use tokio_util::sync::CancellationToken;

/// Resolves on the first SIGTERM or SIGINT.
///
/// If a signal handler cannot be installed (no signal support in this process), that source
/// is logged and ignored: the other one still works.
pub async fn signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(err) => {
                tracing::warn!(%err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    let interrupt = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!(%err, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
        () = interrupt => tracing::info!("SIGINT received, shutting down"),
    }
}

/// A cloneable shutdown handle: any clone can trigger it, every clone can wait for it.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle that is triggered by the first SIGTERM/SIGINT (spawns a task; needs a runtime).
    pub fn on_signal() -> Self {
        let shutdown = Self::new();
        let trigger = shutdown.clone();
        tokio::spawn(async move {
            signal().await;
            trigger.trigger();
        });
        shutdown
    }

    /// Asks every holder to stop. Idempotent.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once [`trigger`](Self::trigger) has been called (immediately if it was).
    pub async fn wait(&self) {
        self.token.cancelled().await;
    }

    /// An owned future for APIs that take `impl Future + 'static` (e.g. graceful shutdown).
    pub fn wait_owned(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.token.clone().cancelled_owned()
    }

    /// The underlying token, for code that already speaks tokio-util.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

#[cfg(test)]
mod tests;
