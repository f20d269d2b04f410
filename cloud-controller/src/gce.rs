//! The GCE I/O layer (official google-cloud-compute-v1 client): clients and rate limits, reads
//! into [`crate::objects::observed`], one call per [`crate::objects::action::Action`], operation
//! waits and error classification. It never imports planning (`lb`, `routes`, `nodes`).

mod calls;
pub mod client;
pub mod convert;
pub mod error;
pub mod exec;
pub mod lookup;
pub mod observe;
pub mod observe_ilb;
pub mod ops;
pub mod outcome;
pub mod ratelimit;
pub mod request_id;
pub mod retry;
