//! The GCE I/O layer (official google-cloud-compute-v1 client): clients and rate limits, reads
//! into [`crate::objects::observed`], one call per [`crate::objects::action::Action`], operation
//! waits and error classification. It never imports planning (`lb`, `routes`, `nodes`).

pub mod client;
pub mod convert;
pub mod error;
pub mod exec;
pub mod observe;
pub mod ops;
pub mod ratelimit;
pub mod request_id;
