//! `/metrics` in the OpenMetrics text format.

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The content type prometheus-client's text encoder produces.
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A router serving `GET /metrics` from `registry`.
pub fn metrics_router(registry: Arc<Registry>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let registry = Arc::clone(&registry);
            async move { render(&registry) }
        }),
    )
}

/// Like [`metrics_router`], but awaits `refresh` before each scrape: for values the kernel holds and
/// that are read when asked for, as upstream's custom collectors do.
pub fn metrics_router_with_refresh<F, Fut>(registry: Arc<Registry>, refresh: F) -> Router
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    Router::new().route(
        "/metrics",
        get(move || {
            let registry = Arc::clone(&registry);
            let refresh = refresh.clone();
            async move {
                refresh().await;
                render(&registry)
            }
        }),
    )
}

fn render(registry: &Registry) -> Response {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, registry) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], body).into_response(),
        Err(err) => {
            tracing::warn!(%err, "encoding metrics failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "encoding metrics failed\n").into_response()
        }
    }
}
