//! IPv6 and dual-stack internal LBs end to end (real controller, an API server serving
//! dual-stack Services, the fake GCE; every IPv6 object read back with the real gcloud when
//! installed, else from the fake). Expectations follow ingress-gce's L4 ILB:
//! pkg/loadbalancers/forwarding_rules_ipv6.go `buildExpectedIPv6ForwardingRule` (`-ipv6` name,
//! `ipVersion: IPV6`, INTERNAL, the IPv4 rule's ports and backend service, the subnetwork of
//! `networking.gke.io/internal-load-balancer-subnet`, Premium tier, a description naming the
//! Service only; GCE stores the address as `ADDR/96`), l4.go (an INTERNAL IPv6 reservation held
//! while the rule is made, released after), l4ipv6.go `ensureIPv6NodesFirewall` with
//! utils/sourceranges.go (IPv6 source ranges, else `0::0/0`; the IPv4 entries only in the IPv4
//! firewall), healthchecksl4 (ILB IPv6 probers `2600:2d00:1:b029::/64`), l4ipv6.go's `-ipv6`
//! annotations and `serviceSubnetHasInternalIPv6Range`'s user error.
#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::{Gcloud, have_gcloud};
use common::l4::*;
use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const SUBNET_ANN: &str = "networking.gke.io/internal-load-balancer-subnet";
const V6_SUBNET: &str = "v6-internal";
const RULE_V6: &str = "service.kubernetes.io/tcp-forwarding-rule-ipv6";

fn v6_subnet(gce: &FakeGce) {
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/subnetworks"),
        Some(&json!({
            "name": V6_SUBNET, "network": "default", "ipCidrRange": "10.60.0.0/24",
            "stackType": "IPV4_IPV6", "ipv6AccessType": "INTERNAL"
        })),
    );
    assert_eq!(s, 200, "{body}");
}

/// An internal Service on port 80 (in `subnet` when given), with `families`.
fn service(name: &str, families: &[&str], subnet: Option<&str>) -> Service {
    let mut ann = json!({ "networking.gke.io/load-balancer-type": "Internal" });
    if let Some(sub) = subnet {
        ann[SUBNET_ANN] = json!(sub);
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

fn ingress_ips(svc: &Service) -> Vec<String> {
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

/// A regional (`region`) or global object as gcloud describes it, else as the fake holds it.
fn describe(gce: &FakeGce, what: &str, kind: &str, name: &str, region: bool) -> Value {
    if have_gcloud("the gcloud read-back of the IPv6 objects") {
        let mut args = vec!["compute", what, "describe", name];
        if region {
            args.extend(["--region", REGION]);
        }
        Gcloud::new(gce).value(&args)
    } else {
        gce.find(kind, name).unwrap()
    }
}

/// Checks the IPv6 rule, nodes firewall and health-check firewall of `svc` against ingress-gce's.
fn check_ipv6_half(gce: &FakeGce, svc: &Service, v6: &str) {
    let a = annotations(svc);
    let lb = lb_name(svc);
    let rule_name = &a[RULE_V6];
    assert_eq!(*rule_name, format!("{lb}-ipv6"));
    let fr = describe(gce, "forwarding-rules", "forwardingRules", rule_name, true);
    assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    assert_eq!(fr["IPAddress"], format!("{v6}/96"), "{fr}");
    assert!(
        fr["subnetwork"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/subnetworks/{V6_SUBNET}")),
        "{fr}"
    );
    assert!(
        fr["network"].as_str().unwrap().ends_with("/networks/default"),
        "{fr}"
    );
    assert!(
        fr["backendService"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/backendServices/{lb}")),
        "{fr}"
    );
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL", "{fr}");
    assert_eq!(fr["ports"], json!(["80"]), "{fr}");
    assert_eq!(fr["IPProtocol"], "TCP", "{fr}");
    // svcnet sends PREMIUM as ingress-gce does; the fake GCE does not echo an internal rule's
    // tier, so absent passes and any other tier fails.
    assert!(fr.get("networkTier").is_none_or(|t| t == "PREMIUM"), "{fr}");
    assert!(fr.get("allowGlobalAccess").is_none_or(|v| v == false), "{fr}");
    let name = svc.metadata.name.clone().unwrap();
    assert_eq!(
        fr["description"],
        format!("{{\"networking.gke.io/service-name\":\"default/{name}\"}}")
    );

    let fw_name = &a["service.kubernetes.io/firewall-rule-ipv6"];
    assert_eq!(*fw_name, format!("k8s-fw-{lb}-ipv6"));
    let fw = describe(gce, "firewall-rules", "firewalls", fw_name, false);
    assert_eq!(fw["sourceRanges"], json!(["2001:db8::/32"]), "{fw}");
    assert_eq!(fw["destinationRanges"], json!([v6]), "{fw}");
    assert_eq!(
        fw["allowed"],
        json!([{"IPProtocol": "tcp", "ports": ["80"]}]),
        "{fw}"
    );

    let hc_fw_name = &a["service.kubernetes.io/firewall-rule-for-hc-ipv6"];
    assert!(
        hc_fw_name.starts_with("k8s-") && hc_fw_name.ends_with("-node-hc-ipv6"),
        "{hc_fw_name}"
    );
    let hc_fw = describe(gce, "firewall-rules", "firewalls", hc_fw_name, false);
    assert_eq!(hc_fw["sourceRanges"], json!(["2600:2d00:1:b029::/64"]), "{hc_fw}");
    assert_eq!(hc_fw["allowed"][0]["ports"], json!(["10256"]), "{hc_fw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_and_ipv6_only_internal_lbs() {
    let rig = Rig::start_dual_stack(&[ZONE], &[]).await;
    let (gce, services) = (&rig.gce, &rig.services);
    v6_subnet(gce);
    let pp = PostParams::default();
    for (name, families) in [
        ("dual", &["IPv4", "IPv6"][..]),
        ("six", &["IPv6"][..]),
        ("sixfirst", &["IPv6", "IPv4"][..]),
    ] {
        services
            .create(&pp, &service(name, families, Some(V6_SUBNET)))
            .await
            .unwrap();
    }

    // Dual stack, IPv4 primary: [v4, v6]; both halves, source ranges split by family.
    let dual = wait_ips(&rig, "dual", 2).await;
    let ips = ingress_ips(&dual);
    assert!(!ips[0].contains(':') && ips[1].contains(':'), "{ips:?}");
    check_ipv6_half(gce, &dual, &ips[1]);
    let v4_fw = describe(
        gce,
        "firewall-rules",
        "firewalls",
        &format!("k8s-fw-{}", lb_name(&dual)),
        false,
    );
    assert_eq!(v4_fw["sourceRanges"], json!(["10.0.0.0/8"]), "{v4_fw}");
    assert_eq!(v4_fw["destinationRanges"], json!([ips[0]]), "{v4_fw}");
    let v4_rule = describe(gce, "forwarding-rules", "forwardingRules", &lb_name(&dual), true);
    assert_eq!(v4_rule["IPAddress"], ips[0], "{v4_rule}");

    // IPv6 primary: [v6, v4].
    let first = wait_ips(&rig, "sixfirst", 2).await;
    let ips6 = ingress_ips(&first);
    assert!(ips6[0].contains(':') && !ips6[1].contains(':'), "{ips6:?}");
    check_ipv6_half(gce, &first, &ips6[0]);

    // IPv6 only: one IPv6 ingress IP, no IPv4 rule or traffic firewall.
    let six = wait_ips(&rig, "six", 1).await;
    let ip6 = ingress_ips(&six)[0].clone();
    assert!(ip6.contains(':'), "{ip6}");
    check_ipv6_half(gce, &six, &ip6);
    assert!(gce.find("forwardingRules", &lb_name(&six)).is_none());
    assert!(
        gce.find("firewalls", &format!("k8s-fw-{}", lb_name(&six)))
            .is_none()
    );
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
    assert!(
        gce.find("firewalls", &format!("k8s-fw-{}-ipv6", lb_name(&dual)))
            .is_none()
    );
    assert!(gce.find("forwardingRules", &lb_name(&dual)).is_some());
    let left: Vec<String> = annotations(&dual)
        .into_keys()
        .filter(|k| k.ends_with("-ipv6"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    delete_and_wait(services, &["dual", "six", "sixfirst"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
    if have_gcloud("the gcloud check that nothing is left") {
        let g = Gcloud::new(gce);
        assert_eq!(g.value(&["compute", "forwarding-rules", "list"]), json!([]));
        assert_eq!(g.value(&["compute", "firewall-rules", "list"]), json!([]));
        assert_eq!(g.value(&["compute", "addresses", "list"]), json!([]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subnet_without_an_internal_ipv6_range_is_a_warning_naming_the_service_and_field() {
    let rig = Rig::start_dual_stack(&[ZONE], &[]).await;
    let (gce, services) = (&rig.gce, &rig.services);
    // No subnet annotation: the cluster's subnetwork, which has no IPv6 range.
    services
        .create(&PostParams::default(), &service("nov6", &["IPv6"], None))
        .await
        .unwrap();
    let client = &rig.client;
    let note = eventually("a Warning about the IPv6 range", WAIT, || async move {
        warnings(client, "nov6")
            .await
            .into_iter()
            // Not the API server's own Warnings about the Service (its ClusterIP repair names "IPv6").
            .find(|n| n.contains("IPv6 ranges"))
    })
    .await;
    assert!(
        note.contains("Service default/nov6: spec.ipFamilies: subnet")
            && note.contains("does not have internal IPv6 ranges")
            && note.contains(SUBNET_ANN),
        "{note}"
    );
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
