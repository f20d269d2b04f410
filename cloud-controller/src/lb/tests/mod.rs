//! Scenario tests of the load balancer planner against the in-memory GCE, and property tests.

mod class;
mod errors;
mod hosts;
mod prop;
mod scenarios;
mod shared_usage;
