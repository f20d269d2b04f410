//! svcnet-fake-gce: a Compute Engine API test double (see README.md). Not a cloud.
//!
//! Use it as a binary (`svcnet-fake-gce --listen 127.0.0.1:0 ...`) or in-process from tests:
//! `let fake = svcnet_fake_gce::start(Config::new("p", "us-central1", &["us-central1-b"])).await?;`
//! then point clients at `fake.endpoint()` and drive the admin API under `/_fake/` over HTTP.
#![forbid(unsafe_code)]

mod admin;
mod api;
mod app;
mod batch;
mod calls;
mod clock;
pub mod config;
mod crud;
mod errors;
mod faults;
mod filter;
mod kind;
mod lists;
mod metadata;
mod operations;
mod paging;
mod persist;
mod query;
mod resources;
mod routes;
mod scope;
mod scopes;
mod server;
mod store;
mod urls;
mod validate;

pub use config::Config;
pub use server::{Running, run, start};

/// Why the fake could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("state file {path}: {message}")]
    StateFile { path: String, message: String },
}
