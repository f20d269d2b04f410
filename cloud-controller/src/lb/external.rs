//! External (target pool) load balancers: Service -> desired GCE objects -> ordered calls.
//!
//! Flow per sync: [`ensure::lb_names`] (what to GET) -> I/O fills
//! [`Observed`](crate::objects::observed::Observed) -> [`ensure::ensure`] (validate, resolve IP,
//! build [`desired::DesiredLb`], diff in [`plan`]) -> I/O executes the
//! [`Action`](crate::objects::action::Action)s stage by stage. On Service deletion:
//! [`delete::plan_delete`].
//!
//! Never imports: crate::lb::internal, crate::lb::rbs.

pub(crate) mod address;
pub(crate) mod delete;
pub(crate) mod desired;
pub(crate) mod ensure;
pub(crate) mod plan;
