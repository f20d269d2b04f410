//! HTTP front: binds, prints `listening on ADDR`, and sends each request to the compute API,
//! the batch endpoint, the admin API or the metadata server.
use std::io::Write;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::serve::ListenerExt;

use crate::app::App;
use std::net::SocketAddr;

use crate::Error;
use crate::config::Config;

const MAX_BODY: usize = 32 * 1024 * 1024;

/// A fake serving in the background of the current tokio runtime. Dropping it stops it.
pub struct Running {
    pub addr: SocketAddr,
    /// selfLink prefix, e.g. `http://127.0.0.1:PORT/compute/v1/`.
    pub base_url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The endpoint to give clients (`with_endpoint`, `api_endpoint`): `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops serving and waits until the listener is closed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Binds, loads the state file (if any) and serves in a background task.
pub async fn start(cfg: Config) -> Result<Running, Error> {
    cfg.validate()?;
    let listener = tokio::net::TcpListener::bind(&cfg.listen)
        .await
        .map_err(|source| Error::Bind {
            addr: cfg.listen.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: cfg.listen.clone(),
        source,
    })?;
    let base = cfg
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}/compute/v1/"));
    let data = match &cfg.state_file {
        Some(f) if f.exists() => crate::persist::load(f, &base).map_err(|message| Error::StateFile {
            path: f.display().to_string(),
            message,
        })?,
        _ => crate::store::Data::default(),
    };
    let app = Arc::new(App::new(cfg, base.clone(), data));
    {
        let mut inner = app.lock();
        crate::admin::seed(&app, &mut inner);
    }
    let router = Router::new().fallback(handle).with_state(app);
    // TCP_NODELAY: without it clients stall ~40 ms per call on delayed ACKs.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "set_nodelay failed");
        }
    });
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let serve = axum::serve(listener, router).with_graceful_shutdown(async {
            let _ = rx.await;
        });
        if let Err(e) = serve.await {
            tracing::error!(error = %e, "server stopped");
        }
    });
    Ok(Running {
        addr,
        base_url: base,
        shutdown: Some(tx),
        task: Some(task),
    })
}

/// The binary: start, print `listening on ADDR` (tests read it), serve until Ctrl-C/SIGTERM.
pub async fn run(cfg: Config) -> Result<(), Error> {
    let running = start(cfg).await?;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "listening on {}", running.addr);
    let _ = out.flush();
    shutdown_signal().await;
    running.stop().await;
    Ok(())
}

/// Ctrl-C or SIGTERM (the lab stops its processes with SIGTERM).
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

fn respond(status: u16, content_type: &str, body: Vec<u8>) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

const JSON: &str = "application/json; charset=UTF-8";

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = match to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            let err = crate::errors::ApiError::new(400, "badRequest", format!("cannot read body: {e}"));
            return respond(400, JSON, err.to_json().to_string().into_bytes());
        }
    };
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    let method = parts.method.as_str();
    let header_str = |h: &str| parts.headers.get(h).and_then(|v| v.to_str().ok());
    if path.starts_with("/compute/v1/") {
        let reply = crate::api::call(&app, method, path, query, &bytes, false).await;
        let body = reply.body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        return respond(reply.status, JSON, body);
    }
    if path.starts_with("/batch/") {
        let r = crate::batch::handle(&app, header_str("content-type").unwrap_or(""), &bytes).await;
        return respond(r.status, &r.content_type, r.body);
    }
    if path.starts_with("/_fake/") {
        let r = crate::admin::handle(&app, method, path, query, &bytes);
        return respond(r.status, JSON, r.body.to_string().into_bytes());
    }
    if path == "/" || path.starts_with("/computeMetadata") {
        let r = crate::metadata::handle(&app, path, header_str("metadata-flavor"));
        let mut resp = respond(r.status, r.content_type, r.body.into_bytes());
        resp.headers_mut()
            .insert("metadata-flavor", HeaderValue::from_static("Google"));
        return resp;
    }
    let err = crate::errors::ApiError::not_found(path);
    respond(404, JSON, err.to_json().to_string().into_bytes())
}
