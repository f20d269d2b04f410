//! End to end on the lab made by [`support::cluster`] (`svcnet-lab` with 2 nodes on the real control
//! plane). One scenario of named steps; a failing step
//! prints its name and the cluster's diagnostics (every node's iptables-save, the fake GCE's state, the
//! components' log tails) and everything is torn down on every path.
//!
//! Local: needs root (network namespaces): prints SKIPPED outside CI, fails under CI=true. The other
//! binaries are built once into this test's target dir (same profile), next to `svcnet-lab`.
#![allow(clippy::unwrap_used)]

mod scenarios;
mod support;

use scenarios::{basics, internal, internal_mixed, lifecycle, rbs, rbs_mixed, takeover};
use support::{Feature, Scenario};

#[test]
fn services_load_balancers_and_failures_end_to_end() {
    let Some(cluster) = support::cluster() else {
        return;
    };
    let mut s = Scenario::new(cluster);
    println!("cluster: {}", s.c.kind());

    s.step(
        "identities: the proxy and the controller run as their ServiceAccounts under their RBAC",
        basics::identities,
    );
    let h = s.step(
        "ClusterIP: node-1 reaches both pods, one via the GCE route",
        |c| basics::cluster_ip_across_nodes(c),
    );
    s.step_needing(
        Feature::GceFirewall,
        "NodePort: closed from outside until a GCE firewall rule allows it",
        |c| basics::nodeport_behind_firewall(c, &h),
    );
    let ip = s.step("LoadBalancer: the client reaches a pod through the LB IP", |c| {
        basics::load_balancer(c, &h)
    });
    s.step(
        "kubectl get cloudloadbalancers -A: Ready row with IP and node count",
        |c| basics::cloudloadbalancer_row(c, "hostnames", &ip),
    );
    s.step("UDP through the ClusterIP and the LB IP", |c| basics::udp(c, &h));
    s.step("sessionAffinity ClientIP: same client, same pod", |c| {
        basics::session_affinity(c, &h, &ip)
    });
    let ranged = s.step(
        "loadBalancerSourceRanges: client inside passes, client outside is dropped",
        |c| basics::source_ranges(c, &ip),
    );
    s.step_needing(
        Feature::NodeLifecycle,
        "node add and remove: route, proxy, target pool and LB traffic follow",
        |c| {
            let node = lifecycle::node_add(c, &h.cluster_ip, &ip);
            lifecycle::node_remove(c, &node, &ip);
        },
    );
    s.step(
        "cloud-controller killed mid-creation: LB keeps working, no duplicates, changes reconciled",
        |c| lifecycle::controller_crash(c, &ip, &ranged),
    );
    s.step(
        "kube-apiserver restart and etcd compaction (410 Gone) during churn: no update lost",
        |c| lifecycle::apiserver_restart_and_compaction(c, &ip),
    );
    s.step(
        "injected GCE faults (503s, a failed operation): the LB converges",
        lifecycle::gce_faults,
    );
    s.step(
        "takeover: kube-proxy -> svcnet-proxy and back on a live node, no connection lost",
        |c| takeover::takeover(c, &h, &ip),
    );
    s.step_needing(
        Feature::HealthCheckedLb,
        "externalTrafficPolicy Local: LB traffic only to the pod's node",
        |c| basics::etp_local(c, &ip),
    );
    s.step(
        "RBS NetLB (--rbs-netlb): built, reachable, switched to a target pool and back, deleted without leaks",
        rbs::rbs_netlb,
    );
    s.step(
        "mixed protocols: a TCP+UDP RBS Service answers on both through one L3_DEFAULT rule",
        rbs_mixed::mixed_protocols,
    );
    s.step_needing(
        Feature::HealthCheckedLb,
        "weighted LB (pods-per-node): 1000 connections split 1:3 like the pods per node",
        rbs_mixed::weighted,
    );
    s.step(
        "internal LB: a VPC VM reaches it, the internet client does not",
        internal::internal_lb,
    );
    s.step(
        "mixed protocols on an internal LB: TCP and UDP from the VM through one L3_DEFAULT rule, read back with gcloud, no leftovers",
        internal_mixed::internal_mixed,
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
