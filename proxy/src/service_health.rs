//! healthCheckNodePort servers: one HTTP server per externalTrafficPolicy=Local service, on its
//! healthCheckNodePort, answering (as upstream)
//! `{"service":{"namespace","name"},"localEndpoints":N,"serviceProxyHealthy":bool}` and the weight
//! header, with 200 when this node has a ready local endpoint and the proxy is healthy, else 503. The cloud load balancer's health
//! check uses it to send traffic only to nodes that can serve it locally. Servers are started and
//! stopped after each sync as services come and go.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, PoisonError, RwLock};

use axum::Router;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::health::Health;
use crate::model::ProxyState;

/// `(namespace, name)` of a Service.
pub(crate) type ServiceName = (String, String);

/// healthCheckNodePort of each ETP=Local service and its ready local endpoint count, from the states
/// of every family.
pub(crate) fn desired(states: &[&ProxyState], node: &str) -> BTreeMap<ServiceName, (u16, usize)> {
    let mut out: BTreeMap<ServiceName, (u16, usize)> = BTreeMap::new();
    for state in states {
        for (name, svc) in &state.services {
            let Some(port) = svc.health_check_node_port.filter(|_| svc.external_policy_local) else {
                continue;
            };
            let local = state
                .endpoints
                .get(name)
                .into_iter()
                .flat_map(|e| e.iter())
                .filter(|e| e.ready && e.is_local(node))
                .count();
            let entry = out
                .entry((name.namespace.clone(), name.name.clone()))
                .or_insert((port, 0));
            entry.0 = port;
            entry.1 = entry.1.max(local);
        }
    }
    out
}

#[derive(Debug)]
struct Server {
    service: ServiceName,
    stop: CancellationToken,
}

/// The running servers, keyed by port.
#[derive(Debug)]
pub(crate) struct ServiceHealth {
    counts: Arc<RwLock<BTreeMap<ServiceName, usize>>>,
    servers: BTreeMap<u16, Server>,
    health: Arc<Health>,
    parent: CancellationToken,
}

impl ServiceHealth {
    pub(crate) fn new(health: Arc<Health>, parent: CancellationToken) -> ServiceHealth {
        ServiceHealth {
            counts: Arc::default(),
            servers: BTreeMap::new(),
            health,
            parent,
        }
    }

    /// Starts, stops and updates servers to match `want`.
    pub(crate) async fn sync(&mut self, want: &BTreeMap<ServiceName, (u16, usize)>) {
        {
            let mut counts = self.counts.write().unwrap_or_else(PoisonError::into_inner);
            *counts = want.iter().map(|(k, (_, n))| (k.clone(), *n)).collect();
        }
        let by_port: BTreeMap<u16, &ServiceName> = want.iter().map(|(k, (p, _))| (*p, k)).collect();
        let stale: Vec<u16> = self
            .servers
            .iter()
            .filter(|(p, s)| by_port.get(p).is_none_or(|svc| **svc != s.service))
            .map(|(p, _)| *p)
            .collect();
        for p in stale {
            if let Some(s) = self.servers.remove(&p) {
                tracing::info!(port = p, service = ?s.service, "stopping health check server");
                s.stop.cancel();
            }
        }
        for (port, svc) in by_port {
            if self.servers.contains_key(&port) {
                continue;
            }
            match self.start(port, svc.clone()).await {
                Ok(stop) => {
                    tracing::info!(port, service = ?svc, "health check server started");
                    self.servers.insert(
                        port,
                        Server {
                            service: svc.clone(),
                            stop,
                        },
                    );
                }
                // Retried after the next sync (the port may be held by a server being stopped).
                Err(err) => tracing::warn!(port, %err, "cannot start health check server"),
            }
        }
    }

    async fn start(&self, port: u16, svc: ServiceName) -> Result<CancellationToken, svcnet_core::CoreError> {
        let listener = svcnet_core::http::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port))).await?;
        let stop = self.parent.child_token();
        let counts = Arc::clone(&self.counts);
        let health = Arc::clone(&self.health);
        let router = Router::new().fallback(move || {
            let n = counts
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&svc)
                .copied()
                .unwrap_or(0);
            let healthy = health.healthy();
            let response = answer(&svc, n, healthy);
            async move { response }
        });
        let token = stop.clone();
        tokio::spawn(async move {
            if let Err(err) =
                svcnet_core::http::serve_listener(listener, router, token.cancelled_owned()).await
            {
                tracing::warn!(port, %err, "health check server failed");
            }
        });
        Ok(stop)
    }
}

/// One health check's answer, as upstream's: 200 with a ready local endpoint and a healthy proxy,
/// else 503; the local endpoint count in the body and in `X-Load-Balancing-Endpoint-Weight`, the
/// header a weighted load balancer (GKE's `pods-per-node`) reads as this node's weight.
fn answer(svc: &ServiceName, local: usize, healthy: bool) -> axum::response::Response {
    let body = json!({
        "service": {"namespace": svc.0, "name": svc.1},
        "localEndpoints": local,
        "serviceProxyHealthy": healthy,
    });
    let code = if local > 0 && healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (WEIGHT_HEADER, HeaderValue::from(local)),
    ];
    (code, headers, body.to_string()).into_response()
}

/// The weight header upstream's health check server sends.
const WEIGHT_HEADER: HeaderName = HeaderName::from_static("x-load-balancing-endpoint-weight");

#[cfg(test)]
mod tests;
