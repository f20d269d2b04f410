//! IPv6 and dual-stack load balancers end to end on a 2-node lab (issue 34): the lab's GCE network
//! delivers IPv6 forwarding rules (external and internal) built with the real gcloud, then the ones
//! svcnet's controller builds for dual-stack and IPv6-only RBS and internal Services, and the client
//! (or the VPC's VM) reaches the pods through them over each family. Named steps as in
//! `tests/lab.rs`; a failing step prints the diagnostics, and the lab is torn down on every path.
//!
//! Local: needs root (network namespaces): prints SKIPPED outside CI, fails under CI=true.
#![allow(clippy::unwrap_used)]

mod scenarios;
mod support;

use scenarios::{ipv6, ipv6_ilb, ipv6_rbs, lifecycle};
use support::{Feature, Scenario};

#[test]
fn ipv6_and_dual_stack_load_balancers_end_to_end() {
    let Some(cluster) = support::cluster() else {
        return;
    };
    let mut s = Scenario::new(cluster);
    println!("cluster: {}", s.c.kind());
    s.step_needing(
        Feature::Gcloud,
        "dual-stack LB by gcloud: the client reaches the pods over IPv4 and IPv6",
        ipv6::dual_stack_by_gcloud,
    );
    s.step_needing(
        Feature::Gcloud,
        "IPv6-only LBs by gcloud: external from the client, internal from the VM only; all deleted",
        ipv6::ipv6_only_by_gcloud,
    );
    s.step_needing(
        Feature::Gcloud,
        "IPv6 RBS NetLBs by svcnet's controller: dual-stack and IPv6-only reached over IPv6",
        ipv6_rbs::controller_ipv6,
    );
    s.step_needing(
        Feature::Gcloud,
        "IPv6 internal LBs by svcnet's controller: dual-stack and IPv6-only reached from the VM over IPv6",
        ipv6_ilb::controller_internal_ipv6,
    );
    s.step(
        "leak check: every Service deleted, no GCE LB object left",
        lifecycle::leak_check,
    );
    s.c.down();
    println!("e2e on {} took {:.1}s", s.c.kind(), s.total().as_secs_f64());
    for skipped in &s.skipped {
        println!("SKIPPED: {skipped}");
    }
}
