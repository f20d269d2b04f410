//! svcnet-apiserver: an in-memory Kubernetes API stand-in for tests and the lab. A test double, not an
//! apiserver: no auth, no admission, no controllers. See README.md for what is emulated.
#![forbid(unsafe_code)]

mod cli;
mod convert;
mod discovery;
mod error;
mod http_util;
mod jsonpath;
mod kubeconfig;
mod list;
mod openapi;
mod ops;
mod patch;
mod persist;
mod protobuf;
mod resources;
mod selectors;
mod server;
mod services;
mod ssa;
mod store;
mod table;
mod time;
mod watch;
mod workloads;

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = cli::Args::parse();
    let cfg = services::ServiceConfig {
        cidrs: args.service_cidr,
        node_ports: args.nodeport_range,
    };
    let store = store::Store::open(args.state_file.clone(), cfg)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("bind {}", args.listen))?;
    let addr = listener.local_addr()?;
    if let Some(path) = &args.kubeconfig_out {
        kubeconfig::write(path, addr).with_context(|| format!("write kubeconfig {}", path.display()))?;
    }
    // Tests read this line to learn the port; it comes after the kubeconfig is in place.
    let mut out = std::io::stdout();
    writeln!(out, "listening on {addr}")?;
    out.flush()?;
    let app = server::App {
        store,
        addr,
        bookmark_every: Duration::from_millis(args.bookmark_interval_ms.max(10)),
    };
    axum::serve(listener, server::router(app))
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

/// SIGINT or SIGTERM.
async fn shutdown() {
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
        _ = term => {}
    }
}
