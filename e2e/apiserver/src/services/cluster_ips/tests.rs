//! Dual-stack ClusterIP allocation through the service admission entry point.

use serde_json::{Value, json};

use crate::services::{Allocations, ServiceConfig, admit};

fn cfg(cidrs: &str) -> ServiceConfig {
    ServiceConfig {
        cidrs: cidrs.parse().unwrap(),
        node_ports: (30000, 30010),
    }
}

fn single() -> ServiceConfig {
    cfg("10.0.0.0/24")
}

fn dual() -> ServiceConfig {
    cfg("10.0.0.0/24,fd00::/120")
}

fn svc(spec: Value) -> Value {
    let mut s = json!({"spec": spec});
    if s["spec"].get("ports").is_none() {
        s["spec"]["ports"] = json!([{"port": 80}]);
    }
    s
}

/// Admits a create and returns the spec's (clusterIP, clusterIPs, ipFamilies, ipFamilyPolicy).
fn create(cfg: &ServiceConfig, alloc: &Allocations, spec: Value) -> Value {
    let mut s = svc(spec);
    admit(cfg, alloc, &mut s, None).unwrap_or_else(|c| panic!("{c:?}"));
    s
}

fn ips(s: &Value) -> (String, Vec<String>, Vec<String>, String) {
    let spec = &s["spec"];
    let strings = |k: &str| -> Vec<String> {
        spec[k]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    (
        spec["clusterIP"].as_str().unwrap_or("").to_string(),
        strings("clusterIPs"),
        strings("ipFamilies"),
        spec["ipFamilyPolicy"].as_str().unwrap_or("").to_string(),
    )
}

/// The (field, message) causes of a refused create or update.
fn refused(
    cfg: &ServiceConfig,
    alloc: &Allocations,
    mut s: Value,
    old: Option<&Value>,
) -> Vec<(String, String)> {
    admit(cfg, alloc, &mut s, old).expect_err("must be refused")
}

fn has(causes: &[(String, String)], field: &str, text: &str) -> bool {
    causes.iter().any(|(f, m)| f == field && m.contains(text))
}

#[test]
fn single_stack_cluster_defaults_and_refuses_require_dual_stack() {
    let alloc = Allocations::default();
    let c = single();
    let s = create(&c, &alloc, json!({}));
    assert_eq!(
        ips(&s),
        (
            "10.0.0.17".into(),
            vec!["10.0.0.17".into()],
            vec!["IPv4".into()],
            "SingleStack".into()
        )
    );
    // PreferDualStack settles for what the cluster has.
    let s = create(&c, &alloc, json!({"ipFamilyPolicy": "PreferDualStack"}));
    assert_eq!(ips(&s).2, ["IPv4"]);
    assert_eq!(ips(&s).1.len(), 1);
    let causes = refused(
        &c,
        &alloc,
        svc(json!({"ipFamilyPolicy": "RequireDualStack"})),
        None,
    );
    assert!(
        has(
            &causes,
            "spec.ipFamilyPolicy",
            "this cluster is not configured for dual-stack services"
        ),
        "{causes:?}"
    );
    let causes = refused(&c, &alloc, svc(json!({"ipFamilies": ["IPv6"]})), None);
    assert!(
        has(&causes, "spec.ipFamilies[0]", "not configured on this cluster"),
        "{causes:?}"
    );
    let causes = refused(&c, &alloc, svc(json!({"clusterIP": "fd00::5"})), None);
    assert!(
        has(
            &causes,
            "spec.clusterIPs[0]",
            "IPv6 is not configured on this cluster"
        ),
        "{causes:?}"
    );
    let causes = refused(&c, &alloc, svc(json!({"ipFamilyPolicy": "Sometimes"})), None);
    assert!(
        has(&causes, "spec.ipFamilyPolicy", "Unsupported value"),
        "{causes:?}"
    );
}

#[test]
fn dual_stack_cluster_allocates_per_policy_and_requested_families() {
    let alloc = Allocations::default();
    let c = dual();
    // Without a policy a Service stays single-stack in the primary family.
    let s = create(&c, &alloc, json!({}));
    assert_eq!(ips(&s).1, ["10.0.0.17"]);
    assert_eq!(ips(&s).3, "SingleStack");
    let s = create(&c, &alloc, json!({"ipFamilyPolicy": "PreferDualStack"}));
    assert_eq!(
        ips(&s),
        (
            "10.0.0.17".into(),
            vec!["10.0.0.17".into(), "fd00::11".into()],
            vec!["IPv4".into(), "IPv6".into()],
            "PreferDualStack".into()
        )
    );
    // Families in the requested order; clusterIP is always clusterIPs[0].
    let s = create(
        &c,
        &alloc,
        json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv6"]}),
    );
    assert_eq!(ips(&s).0, "fd00::11");
    assert_eq!(ips(&s).1, ["fd00::11", "10.0.0.17"]);
    assert_eq!(ips(&s).2, ["IPv6", "IPv4"]);
    let s = create(&c, &alloc, json!({"ipFamilies": ["IPv6"]}));
    assert_eq!(ips(&s).1, ["fd00::11"]);
    assert_eq!(ips(&s).3, "SingleStack");
    // An IPv6-first cluster defaults to IPv6.
    let v6 = cfg("fd00::/120,10.0.0.0/24");
    let s = create(&v6, &alloc, json!({}));
    assert_eq!(ips(&s).1, ["fd00::11"]);
    assert_eq!(ips(&s).2, ["IPv6"]);
}

#[test]
fn requested_ips_are_checked_against_their_familys_range() {
    let mut alloc = Allocations::default();
    let c = dual();
    // Families follow the requested IPs.
    let a = create(
        &c,
        &alloc,
        json!({"ipFamilyPolicy": "RequireDualStack", "clusterIP": "10.0.0.50", "clusterIPs": ["10.0.0.50", "fd00::50"]}),
    );
    assert_eq!(ips(&a).1, ["10.0.0.50", "fd00::50"]);
    assert_eq!(ips(&a).2, ["IPv4", "IPv6"]);
    alloc.track(None, Some(&a));
    let dual_req = |v4: &str, v6: &str| {
        svc(json!({"ipFamilyPolicy": "RequireDualStack", "clusterIP": v4, "clusterIPs": [v4, v6]}))
    };
    let causes = refused(&c, &alloc, dual_req("10.0.0.51", "fd00::50"), None);
    assert!(
        has(&causes, "spec.clusterIPs[1]", "provided IP is already allocated"),
        "{causes:?}"
    );
    let causes = refused(&c, &alloc, dual_req("10.0.0.51", "fd00::1:1"), None);
    assert!(
        has(
            &causes,
            "spec.clusterIPs[1]",
            "provided IP is not in the valid range. The range of valid IPs is fd00::/120"
        ),
        "{causes:?}"
    );
    let causes = refused(&c, &alloc, dual_req("10.0.0.51", "10.0.0.52"), None);
    assert!(
        has(
            &causes,
            "spec.clusterIPs",
            "no more than one IP for each IP family"
        ),
        "{causes:?}"
    );
    let causes = refused(
        &c,
        &alloc,
        svc(json!({"clusterIP": "10.0.0.51", "clusterIPs": ["10.0.0.52"]})),
        None,
    );
    assert!(
        has(&causes, "spec.clusterIPs", "first value must match `clusterIP`"),
        "{causes:?}"
    );
    let causes = refused(&c, &alloc, svc(json!({"clusterIPs": ["10.0.0.52"]})), None);
    assert!(
        has(
            &causes,
            "spec.clusterIPs",
            "must be empty when `clusterIP` is not specified"
        ),
        "{causes:?}"
    );
    let causes = refused(
        &c,
        &alloc,
        svc(json!({"clusterIP": "fd00::52", "ipFamilies": ["IPv4"]})),
        None,
    );
    assert!(
        has(
            &causes,
            "spec.clusterIPs[0]",
            "expected an IPv4 value as indicated by `ipFamilies[0]`"
        ),
        "{causes:?}"
    );
    let mut single_two = dual_req("10.0.0.51", "fd00::51");
    single_two["spec"]["ipFamilyPolicy"] = json!("SingleStack");
    let causes = refused(&c, &alloc, single_two, None);
    assert!(
        has(
            &causes,
            "spec.ipFamilyPolicy",
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"
        ),
        "{causes:?}"
    );
    // Dynamic allocation skips what is taken in each family; deleting releases both.
    let b = create(&c, &alloc, json!({"ipFamilyPolicy": "PreferDualStack"}));
    alloc.track(None, Some(&b));
    let next = create(&c, &alloc, json!({"ipFamilyPolicy": "PreferDualStack"}));
    assert_eq!(ips(&next).1, ["10.0.0.18", "fd00::12"]);
    alloc.track(Some(&b), None);
    alloc.track(Some(&a), None);
    let again = create(&c, &alloc, json!({"ipFamilyPolicy": "PreferDualStack"}));
    assert_eq!(ips(&again).1, ["10.0.0.17", "fd00::11"]);
    // The released addresses can be requested again.
    create(
        &c,
        &alloc,
        json!({"ipFamilyPolicy": "RequireDualStack", "clusterIP": "10.0.0.50", "clusterIPs": ["10.0.0.50", "fd00::50"]}),
    );
}

#[test]
fn headless_keeps_families_and_gets_no_address() {
    let alloc = Allocations::default();
    let s = create(
        &dual(),
        &alloc,
        json!({"clusterIP": "None", "selector": {"app": "x"}, "ipFamilyPolicy": "PreferDualStack"}),
    );
    assert_eq!(
        ips(&s),
        (
            "None".into(),
            vec!["None".into()],
            vec!["IPv4".into(), "IPv6".into()],
            "PreferDualStack".into()
        )
    );
    // Headless without selector: both families, even on a single-stack cluster (as upstream).
    let s = create(&single(), &alloc, json!({"clusterIP": "None"}));
    assert_eq!(ips(&s).2, ["IPv4", "IPv6"]);
    assert_eq!(ips(&s).3, "RequireDualStack");
    let s = create(
        &single(),
        &alloc,
        json!({"clusterIP": "None", "selector": {"app": "x"}}),
    );
    assert_eq!(ips(&s).2, ["IPv4"]);
    assert_eq!(ips(&s).3, "SingleStack");
}

/// `old` with `change` merged into its spec (what a merge patch sends).
fn patched(old: &Value, change: Value) -> Value {
    let mut new = old.clone();
    for (k, v) in change.as_object().unwrap() {
        new["spec"][k] = v.clone();
    }
    new
}

#[test]
fn upgrade_and_downgrade_on_update() {
    let mut alloc = Allocations::default();
    let c = dual();
    let old = create(&c, &alloc, json!({}));
    alloc.track(None, Some(&old));
    // Upgrade: only the secondary family is allocated, the primary stays.
    let mut up = patched(&old, json!({"ipFamilyPolicy": "PreferDualStack"}));
    admit(&c, &alloc, &mut up, Some(&old)).unwrap();
    assert_eq!(ips(&up).1, ["10.0.0.17", "fd00::11"]);
    assert_eq!(ips(&up).2, ["IPv4", "IPv6"]);
    alloc.track(Some(&old), Some(&up));
    // Resubmitting the same object changes nothing (and finds its own IPs taken by itself).
    let mut same = up.clone();
    admit(&c, &alloc, &mut same, Some(&up)).unwrap();
    assert_eq!(ips(&same), ips(&up));
    // An update that leaves the IP fields out keeps them.
    let mut bare = up.clone();
    for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        bare["spec"].as_object_mut().unwrap().remove(k);
    }
    admit(&c, &alloc, &mut bare, Some(&up)).unwrap();
    assert_eq!(ips(&bare), ips(&up));
    // Dropping the secondary IP needs SingleStack.
    let causes = refused(
        &c,
        &alloc,
        patched(&up, json!({"clusterIPs": ["10.0.0.17"]})),
        Some(&up),
    );
    assert!(has(&causes, "spec.ipFamilyPolicy", "'SingleStack'"), "{causes:?}");
    // Existing IPs and families are immutable.
    let causes = refused(
        &c,
        &alloc,
        patched(&up, json!({"clusterIPs": ["10.0.0.17", "fd00::99"]})),
        Some(&up),
    );
    assert!(
        has(&causes, "spec.clusterIPs[1]", "may not change once set"),
        "{causes:?}"
    );
    let causes = refused(
        &c,
        &alloc,
        patched(&up, json!({"clusterIP": "10.0.0.99"})),
        Some(&up),
    );
    assert!(
        has(&causes, "spec.clusterIPs[0]", "may not change once set"),
        "{causes:?}"
    );
    let causes = refused(
        &c,
        &alloc,
        patched(&up, json!({"ipFamilies": ["IPv6", "IPv4"]})),
        Some(&up),
    );
    assert!(
        has(&causes, "spec.ipFamilies[0]", "may not change once set"),
        "{causes:?}"
    );
    // Downgrade: SingleStack with unchanged fields drops the secondary, which is released.
    let mut down = patched(&up, json!({"ipFamilyPolicy": "SingleStack"}));
    admit(&c, &alloc, &mut down, Some(&up)).unwrap();
    assert_eq!(ips(&down).1, ["10.0.0.17"]);
    assert_eq!(ips(&down).2, ["IPv4"]);
    alloc.track(Some(&up), Some(&down));
    let other = create(&c, &alloc, json!({"ipFamilyPolicy": "RequireDualStack"}));
    assert_eq!(ips(&other).1, ["10.0.0.18", "fd00::11"]);
    // Upgrade with a requested secondary IP.
    let mut up2 = patched(
        &down,
        json!({"ipFamilyPolicy": "RequireDualStack", "clusterIPs": ["10.0.0.17", "fd00::77"]}),
    );
    admit(&c, &alloc, &mut up2, Some(&down)).unwrap();
    assert_eq!(ips(&up2).1, ["10.0.0.17", "fd00::77"]);
}

#[test]
fn prefer_dual_stack_is_not_upgraded_behind_the_users_back() {
    let alloc = Allocations::default();
    // Created while the cluster was single-stack ...
    let old = create(&single(), &alloc, json!({"ipFamilyPolicy": "PreferDualStack"}));
    assert_eq!(ips(&old).1.len(), 1);
    // ... and updated unchanged after the cluster became dual-stack: still one family.
    let mut same = old.clone();
    admit(&dual(), &alloc, &mut same, Some(&old)).unwrap();
    assert_eq!(ips(&same), ips(&old));
}

#[test]
fn external_name_to_cluster_ip_allocates_like_a_create() {
    let alloc = Allocations::default();
    let c = dual();
    let mut old = svc(json!({"type": "ExternalName", "externalName": "example.com"}));
    admit(&c, &alloc, &mut old, None).unwrap();
    assert!(old["spec"].get("clusterIPs").is_none());
    let mut new = svc(json!({"type": "ClusterIP", "ipFamilyPolicy": "RequireDualStack"}));
    admit(&c, &alloc, &mut new, Some(&old)).unwrap();
    assert_eq!(ips(&new).1, ["10.0.0.17", "fd00::11"]);
}
