use super::*;
use crate::objects::{Firewall, HttpHealthCheck, TargetPool};

fn names() -> LbNames {
    LbNames::new("0c5d8a9e-1111-2222-3333-444455556666", "cid", "default/web").expect("valid names")
}

/// Only the firewalls that exist are listed, and of the two health checks only the one the pool
/// uses: the shared node check exists for other LBs but this pool is ETP=Local.
#[test]
fn external_record_lists_existing_firewalls_and_the_pools_check() {
    let n = names();
    let fw = |name: &str| {
        Some(Firewall {
            name: name.to_owned(),
            ..Firewall::default()
        })
    };
    let base = "https://compute/projects/p/global/httpHealthChecks";
    let mut obs = ObservedLb::default();
    obs.observed.firewall = fw(&n.firewall);
    obs.observed.local_health_check_firewall = fw(&n.local_health_check_firewall);
    obs.observed.nodes_health_check = Some(HttpHealthCheck::default());
    obs.observed.target_pool = Some(TargetPool {
        name: n.lb.clone(),
        health_checks: vec![format!("{base}/{}", n.local_health_check)],
        ..TargetPool::default()
    });
    let fw_link = format!("https://compute/projects/p/global/firewalls/{}", n.firewall);
    obs.self_links
        .insert(format!("firewalls/{}", n.firewall), fw_link.clone());

    let g = external_resources(&n, &obs);
    let listed = |refs: &[GceResourceRef]| refs.iter().map(|r| r.name.clone()).collect::<Vec<String>>();
    assert_eq!(
        listed(&g.firewalls),
        [n.firewall.clone(), n.local_health_check_firewall.clone()]
    );
    assert_eq!(g.firewalls[0].self_link.as_deref(), Some(fw_link.as_str()));
    assert_eq!(g.firewalls[1].self_link, None, "no selfLink observed");
    assert_eq!(listed(&g.health_checks), vec![n.local_health_check.clone()]);
    assert_eq!(g.load_balancing_scheme.as_deref(), Some("EXTERNAL"));
}

/// Without a backend (no pool or backend service yet) no health check is the LB's.
#[test]
fn no_backend_no_health_checks() {
    let n = names();
    let (firewalls, checks) = guards(
        &ObservedLb::default(),
        &n,
        [true, false, false],
        None,
        "healthChecks",
    );
    assert_eq!(firewalls.len(), 1);
    assert!(checks.is_empty());
}
