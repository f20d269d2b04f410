//! The GCE I/O layer (official google-cloud-compute-v1 client): clients and rate limits, reads
//! into [`crate::objects::observed`], one call per [`crate::objects::action::Action`], operation
//! waits and error classification. It never imports planning (`lb`, `routes`, `nodes`).
//!
//! Never imports: crate::lb, crate::routes, crate::nodes, crate::controllers.

mod calls;
pub(crate) mod client;
pub(crate) mod convert;
pub(crate) mod error;
pub(crate) mod exec;
pub(crate) mod lookup;
pub(crate) mod observe;
pub(crate) mod observe_groups;
pub(crate) mod observe_ilb;
pub(crate) mod observe_rbs;
pub(crate) mod ops;
pub(crate) mod outcome;
pub(crate) mod ratelimit;
pub(crate) mod read;
pub(crate) mod request_id;
pub(crate) mod retry;
