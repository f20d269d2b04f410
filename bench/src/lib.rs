//! svcnet-bench: the proxy rule engine and the kernel rules it produces, the proxy's memory and the
//! cloud controller's GCE calls and concurrency, measured side by side in one run
//! (`make bench`). See docs/BENCHMARKS.md for what each figure means and recorded results.
#![forbid(unsafe_code)]

pub mod agent;
pub mod c1;
pub mod c2;
pub mod c3;
pub mod cluster;
pub mod error;
pub mod gcecalls;
pub mod http;
pub mod lab;
pub mod netns;
pub mod p1;
pub mod p2;
pub mod p4;
pub mod phases;
pub mod procs;
pub mod report;
pub mod report_c;
pub mod report_u;
pub mod stats;
pub mod synth;
pub mod upstream;
pub mod walk;

pub use error::BenchError;
