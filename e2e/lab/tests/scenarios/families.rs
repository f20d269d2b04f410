//! What the IPv6 and dual-stack scenarios share: a LoadBalancer Service over chosen IP families,
//! its ingress IPs, URLs of either family, forwarding rules as the fake holds them, and the check
//! that an IPv6 rule is routed to every node and reached from where it must be.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, gce_objects, wait_for};

const WAIT: Duration = Duration::from_secs(90);

/// gcloud that must succeed.
pub fn gcloud(c: &dyn Cluster, args: &[&str]) -> String {
    c.gcloud(args)
        .unwrap_or_else(|e| panic!("gcloud {}: {e}", args.join(" ")))
}

/// Creates a LoadBalancer Service `name` over the pods of `app` (TCP 80 -> 9376) with `families`
/// (both: RequireDualStack), `annotations` (none when null) and, when given, a `loadBalancerClass`.
pub fn lb_service(
    c: &dyn Cluster,
    name: &str,
    app: &str,
    families: &[&str],
    annotations: Value,
    class: Option<&str>,
) {
    let policy = if families.len() == 2 {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    let mut body = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"type": "LoadBalancer", "selector": {"app": app},
            "ipFamilyPolicy": policy, "ipFamilies": families,
            "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}});
    if !annotations.is_null() {
        body["metadata"]["annotations"] = annotations;
    }
    if let Some(class) = class {
        body["spec"]["loadBalancerClass"] = json!(class);
    }
    support::api(c, "POST", SVCS, Some(&body));
}

/// The Service's ingress IPs once it has `n`.
pub fn ingress(c: &dyn Cluster, name: &str, n: usize) -> Vec<String> {
    wait_for(&format!("{n} ingress IPs for {name}"), WAIT, || {
        let s = c.api("GET", &svc_path(name), None).ok()?;
        let ips: Vec<String> = s["status"]["loadBalancer"]["ingress"]
            .as_array()?
            .iter()
            .filter_map(|i| i["ip"].as_str().map(str::to_owned))
            .collect();
        (ips.len() == n).then_some(ips)
    })
}

/// The address a client connects to: an IPv6 rule's `ADDR/96` without its length.
pub fn bare(ip: &str) -> &str {
    ip.split('/').next().unwrap_or(ip)
}

/// `http://IP:80/` for either family (an IPv6 address in brackets, a `/96` cut off).
pub fn url(ip: &str) -> String {
    if ip.contains(':') {
        format!("http://[{}]:80/", bare(ip))
    } else {
        format!("http://{ip}:80/")
    }
}

/// The forwarding rule `name` as the fake GCE holds it.
pub fn rule(c: &dyn Cluster, name: &str) -> Option<Value> {
    gce_objects(c, "forwardingRules")
        .into_iter()
        .find(|r| r["name"] == name)
}

/// Waits until the VPC sends `ip` (an IPv6 rule's `ADDR/96`, or an IPv4 address) to every node.
pub fn routed_to_every_node(c: &dyn Cluster, ip: &str) {
    let nodes = c.nodes().len();
    wait_for(
        &format!("the VPC's route for {ip} over {nodes} nodes"),
        WAIT,
        || (c.lb_backends(ip).len() == nodes).then_some(()),
    );
}

/// Checks the IPv6 rule `<lb>-ipv6` the controller made for ingress address `v6` (`ipVersion`,
/// the `/96`, then `check` for what the LB kind adds), waits for the VPC to route it to every
/// node and for `from` to reach `pods` through it; returns the rule's `/96`.
pub fn controller_ipv6_rule(
    c: &dyn Cluster,
    lb: &str,
    v6: &str,
    from: From<'_>,
    pods: &BTreeSet<String>,
    check: impl Fn(&Value),
) -> String {
    let fr = rule(c, &format!("{lb}-ipv6")).unwrap_or_else(|| panic!("no rule {lb}-ipv6"));
    assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    assert_eq!(fr["IPAddress"], format!("{v6}/96"), "{fr}");
    check(&fr);
    let routed = fr["IPAddress"].as_str().unwrap().to_owned();
    routed_to_every_node(c, &routed);
    assert_eq!(&wait_all_answer(c, from, &url(v6), 2), pods);
    routed
}
