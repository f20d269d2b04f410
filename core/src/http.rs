//! A small axum server helper: bind first (to learn the port), then serve until shutdown.

use crate::CoreError;
use axum::Router;
use axum::serve::ListenerExt;
use std::future::Future;
use std::net::SocketAddr;
use tokio::net::TcpListener;

/// Binds `addr` (port 0 picks a free port; read it back with `local_addr`).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, CoreError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| CoreError::Bind { addr, source })
}

/// Serves `router` on an already bound listener until `shutdown` resolves.
///
/// Every accepted connection gets TCP_NODELAY: replies written in several pieces otherwise
/// stall clients for 40 ms (Nagle + delayed ACK).
pub async fn serve_listener(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), CoreError> {
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(%err, "setting TCP_NODELAY failed");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(CoreError::Serve)
}

/// Binds `addr` and serves `router` until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), CoreError> {
    let listener = bind(addr).await?;
    serve_listener(listener, router, shutdown).await
}

#[cfg(test)]
mod tests;
