//! What the IPv6 LB tests (`lb_internal_ipv6`, `lb_rbs_ipv6`) share: the IPv6 subnetwork, a
//! dual-stack Service, and the two scenarios both LB kinds go through (dual stack in both orders
//! and IPv6 only, read back with one gcloud start per collection, a no-op resync, dual -> IPv4,
//! deletion; a subnetwork without an IPv6 range). What differs per kind is a [`Kind`].

use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::gcloud::{Collection, ReadBack};
use super::l4::{Rig, annotations, delete_and_wait, everything};
use super::{FakeGce, PROJECT, REGION, WAIT, eventually, lb_name, warnings};

pub const RULE_V6: &str = "service.kubernetes.io/tcp-forwarding-rule-ipv6";
pub const FW_V6: &str = "service.kubernetes.io/firewall-rule-ipv6";
pub const HC_FW_V6: &str = "service.kubernetes.io/firewall-rule-for-hc-ipv6";

/// One LB kind's IPv6 expectations (ingress-gce's, cited by each test file).
pub struct Kind {
    /// The annotation (key, value) that asks for this kind.
    pub asks: (&'static str, &'static str),
    /// The annotation naming the Service's subnetwork.
    pub subnet_annotation: &'static str,
    /// The IPv6 subnetwork made for the test and its `ipv6AccessType`.
    pub subnet: &'static str,
    pub access: &'static str,
    /// The backend service the IPv6 rule points at.
    pub backend: fn(&Service) -> String,
    /// The IPv4 traffic firewall.
    pub v4_firewall: fn(&Service) -> String,
    /// The health-check probers' IPv6 range.
    pub probers: &'static str,
    /// The kind's own checks of the IPv6 rule, nodes firewall and check firewall.
    pub check_half: fn(&Service, &Value, &Value, &Value),
    /// Annotations an IPv6-only Service must not have.
    pub not_on_ipv6_only: &'static [&'static str],
    /// What the Warning about a subnetwork without an IPv6 range contains.
    pub no_range_note: &'static [&'static str],
}

pub fn v6_subnet(gce: &FakeGce, kind: &Kind) {
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/subnetworks"),
        Some(&json!({
            "name": kind.subnet, "network": "default", "ipCidrRange": "10.60.0.0/24",
            "stackType": "IPV4_IPV6", "ipv6AccessType": kind.access
        })),
    );
    assert_eq!(s, 200, "{body}");
}

/// A Service of `kind` on port 80 (in `subnet` when given), with `families`.
pub fn service(name: &str, families: &[&str], kind: &Kind, subnet: Option<&str>) -> Service {
    let mut ann = json!({ kind.asks.0: kind.asks.1 });
    if let Some(sub) = subnet {
        ann[kind.subnet_annotation] = json!(sub);
    }
    let policy = if families.len() == 2 {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "annotations": ann},
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ipFamilies": families,
            "ipFamilyPolicy": policy,
            "loadBalancerSourceRanges": ["10.0.0.0/8", "2001:db8::/32"],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    }))
    .unwrap()
}

pub fn ingress_ips(svc: &Service) -> Vec<String> {
    let ingress = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref());
    ingress
        .into_iter()
        .flatten()
        .filter_map(|i| i.ip.clone())
        .collect()
}

/// The Service once it has `n` ingress IPs and its `-ipv6` rule annotation.
async fn wait_ips(rig: &Rig, name: &str, n: usize) -> Service {
    let services = &rig.services;
    eventually(&format!("{name} with {n} ingress IPs"), WAIT, || async move {
        let s = services.get(name).await.ok()?;
        let ok = ingress_ips(&s).len() == n && annotations(&s).contains_key(RULE_V6);
        ok.then_some(s)
    })
    .await
}

/// Checks the IPv6 rule, nodes firewall and health-check firewall of `svc` as read back.
fn check_ipv6_half(rb: &ReadBack, svc: &Service, v6: &str, kind: &Kind) {
    let a = annotations(svc);
    let rule_name = &a[RULE_V6];
    assert_eq!(*rule_name, format!("{}-ipv6", lb_name(svc)));
    let fr = rb.get(Collection::ForwardingRules, rule_name);
    assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    assert_eq!(fr["IPAddress"], format!("{v6}/96"), "{fr}");
    let subnet = format!("/subnetworks/{}", kind.subnet);
    assert!(fr["subnetwork"].as_str().unwrap().ends_with(&subnet), "{fr}");
    let backend = format!("/backendServices/{}", (kind.backend)(svc));
    assert!(fr["backendService"].as_str().unwrap().ends_with(&backend), "{fr}");
    assert_eq!(fr["IPProtocol"], "TCP", "{fr}");
    let name = svc.metadata.name.clone().unwrap();
    assert_eq!(
        fr["description"],
        format!("{{\"networking.gke.io/service-name\":\"default/{name}\"}}")
    );

    let fw = rb.get(Collection::Firewalls, &a[FW_V6]);
    assert_eq!(fw["sourceRanges"], json!(["2001:db8::/32"]), "{fw}");
    assert_eq!(fw["destinationRanges"], json!([v6]), "{fw}");

    let hc_fw = rb.get(Collection::Firewalls, &a[HC_FW_V6]);
    assert_eq!(hc_fw["sourceRanges"], json!([kind.probers]), "{hc_fw}");
    assert_eq!(hc_fw["allowed"][0]["ports"], json!(["10256"]), "{hc_fw}");
    (kind.check_half)(svc, fr, fw, hc_fw);
}

/// A dual-stack (IPv4 first), an IPv6-first dual-stack and an IPv6-only Service of `kind` in its
/// IPv6 subnetwork: both halves as ingress-gce builds them, a no-op resync, dual -> IPv4 only,
/// and nothing left once they are deleted.
pub async fn dual_stack_and_ipv6_only(rig: &Rig, kind: &Kind) {
    let (gce, services) = (&rig.gce, &rig.services);
    v6_subnet(gce, kind);
    let pp = PostParams::default();
    for (name, families) in [
        ("dual", &["IPv4", "IPv6"][..]),
        ("six", &["IPv6"][..]),
        ("sixfirst", &["IPv6", "IPv4"][..]),
    ] {
        services
            .create(&pp, &service(name, families, kind, Some(kind.subnet)))
            .await
            .unwrap();
    }
    let dual = wait_ips(rig, "dual", 2).await;
    let first = wait_ips(rig, "sixfirst", 2).await;
    let six = wait_ips(rig, "six", 1).await;
    // The three LBs' objects, one gcloud start per collection.
    let rb = ReadBack::new(gce, &[Collection::ForwardingRules, Collection::Firewalls]);

    // Dual stack, IPv4 primary: [v4, v6]; both halves, source ranges split by family.
    let ips = ingress_ips(&dual);
    assert!(!ips[0].contains(':') && ips[1].contains(':'), "{ips:?}");
    check_ipv6_half(&rb, &dual, &ips[1], kind);
    let v4_fw = rb.get(Collection::Firewalls, &(kind.v4_firewall)(&dual));
    assert_eq!(v4_fw["sourceRanges"], json!(["10.0.0.0/8"]), "{v4_fw}");
    assert_eq!(v4_fw["destinationRanges"], json!([ips[0]]), "{v4_fw}");
    let v4_rule = rb.get(Collection::ForwardingRules, &lb_name(&dual));
    assert_eq!(v4_rule["IPAddress"], ips[0], "{v4_rule}");

    // IPv6 primary: [v6, v4].
    let ips6 = ingress_ips(&first);
    assert!(ips6[0].contains(':') && !ips6[1].contains(':'), "{ips6:?}");
    check_ipv6_half(&rb, &first, &ips6[0], kind);

    // IPv6 only: one IPv6 ingress IP, no IPv4 rule or traffic firewall.
    let ip6 = ingress_ips(&six)[0].clone();
    assert!(ip6.contains(':'), "{ip6}");
    check_ipv6_half(&rb, &six, &ip6, kind);
    assert!(gce.find("forwardingRules", &lb_name(&six)).is_none());
    assert!(gce.find("firewalls", &(kind.v4_firewall)(&six)).is_none());
    for key in kind.not_on_ipv6_only {
        assert!(!annotations(&six).contains_key(*key), "{key}");
    }
    // Every reservation was released once its rule held the IP.
    assert_eq!(gce.names("addresses"), Vec::<String>::new());

    // A sync of converged dual-stack and IPv6-only LBs changes nothing in GCE.
    gce.clear_calls();
    for name in ["dual", "six"] {
        let touch = json!({"metadata": {"annotations": {"svcnet.test/touch": "1"}}});
        services
            .patch(name, &PatchParams::default(), &Patch::Merge(&touch))
            .await
            .unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(gce.mutating_calls(), Vec::<String>::new());
    assert!(gce.calls().0 > 0, "the touched Services were not synced");

    // Dual stack -> IPv4 only: the IPv6 rule, nodes firewall and annotations go; the IPv4 half stays.
    let v6_rule = &format!("{}-ipv6", lb_name(&dual));
    let v6_fw = annotations(&dual)[FW_V6].clone();
    let to_v4 = json!({"spec": {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}});
    services
        .patch("dual", &PatchParams::default(), &Patch::Merge(&to_v4))
        .await
        .unwrap();
    let dual = eventually("dual without its IPv6 half", WAIT, || async move {
        let s = services.get("dual").await.ok()?;
        let gone = gce.find("forwardingRules", v6_rule).is_none()
            && ingress_ips(&s).len() == 1
            && !annotations(&s).contains_key(RULE_V6);
        gone.then_some(s)
    })
    .await;
    assert_eq!(ingress_ips(&dual), [ips[0].clone()]);
    assert!(gce.find("firewalls", &v6_fw).is_none());
    assert!(gce.find("forwardingRules", &lb_name(&dual)).is_some());
    let left: Vec<String> = annotations(&dual)
        .into_keys()
        .filter(|k| k.ends_with("-ipv6"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    delete_and_wait(services, &["dual", "six", "sixfirst"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
}

/// An IPv6-only Service of `kind` on the cluster's subnetwork, which has no IPv6 range: a Warning
/// (not the API server's own about the Service: its ClusterIP repair names "IPv6"), no IP, rule
/// or address; deleted, nothing left.
pub async fn no_ipv6_range(rig: &Rig, kind: &Kind) {
    let (gce, services) = (&rig.gce, &rig.services);
    services
        .create(&PostParams::default(), &service("nov6", &["IPv6"], kind, None))
        .await
        .unwrap();
    let client = &rig.client;
    let note = eventually("a Warning about the IPv6 range", WAIT, || async move {
        warnings(client, "nov6")
            .await
            .into_iter()
            .find(|n| n.contains("IPv6 ranges"))
    })
    .await;
    for part in kind.no_range_note {
        assert!(note.contains(part), "{part}: {note}");
    }
    let svc = services.get("nov6").await.unwrap();
    assert!(ingress_ips(&svc).is_empty());
    assert!(
        gce.names("forwardingRules").is_empty(),
        "{:?}",
        gce.names("forwardingRules")
    );
    assert!(gce.names("addresses").is_empty(), "{:?}", gce.names("addresses"));
    delete_and_wait(services, &["nov6"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
}
