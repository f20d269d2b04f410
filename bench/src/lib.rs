//! svcnet-bench: the proxy rule engine and the kernel rules it produces, measured side by side in
//! one run (`make bench`). See docs/BENCHMARKS.md for what each figure means and recorded results.
#![forbid(unsafe_code)]

pub mod agent;
pub mod chunked;
pub mod error;
pub mod lab;
pub mod netns;
pub mod p1;
pub mod p2;
pub mod phases;
pub mod report;
pub mod stats;
pub mod synth;
pub mod walk;

pub use error::BenchError;
