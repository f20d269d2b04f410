//! Subnetworks over HTTP: the default one, insert with IPv4 ranges and IPv6 prefixes, GCE's
//! refusals (overlaps, a missing subnetwork referenced by an address or forwarding rule), and
//! IPv6 addresses and forwarding rules allocated from a dual-stack subnetwork.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Fake, REGION, ZONE_B, reason};
use serde_json::{Value, json};

fn ilb_backend(fake: &Fake) {
    let hcs = fake.api("global/healthChecks");
    fake.mutate_ok("POST", &hcs, &json!({"name": "hc", "type": "HTTP"}));
    let igs = fake.api(&format!("zones/{ZONE_B}/instanceGroups"));
    fake.mutate_ok("POST", &igs, &json!({"name": "ig"}));
    let bss = fake.api(&format!("regions/{REGION}/backendServices"));
    for (name, scheme, hc) in [
        ("bs", "INTERNAL", fake.link("global/healthChecks/hc")),
        (
            "xbs",
            "EXTERNAL",
            fake.link(&format!("regions/{REGION}/healthChecks/rhc")),
        ),
    ] {
        if scheme == "EXTERNAL" {
            fake.mutate_ok(
                "POST",
                &fake.api(&format!("regions/{REGION}/healthChecks")),
                &json!({"name": "rhc", "type": "HTTP"}),
            );
        }
        fake.mutate_ok(
            "POST",
            &bss,
            &json!({"name": name, "loadBalancingScheme": scheme, "protocol": "TCP",
                    "healthChecks": [hc],
                    "backends": [{"group": fake.link(&format!("zones/{ZONE_B}/instanceGroups/ig"))}]}),
        );
    }
}

fn prefix_contains(prefix: &str, ip: &str) -> bool {
    let p: ipnet::Ipv6Net = prefix.parse().expect("prefix");
    let ip: std::net::Ipv6Addr = ip.split('/').next().unwrap().parse().expect("ipv6");
    p.contains(&ip)
}

#[test]
fn default_subnetwork_insert_overlap_and_delete() {
    let fake = Fake::start(&[]);
    let subs = fake.api(&format!("regions/{REGION}/subnetworks"));
    let (s, d) = fake.get(&format!("{subs}/default"));
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["kind"], "compute#subnetwork");
    assert_eq!(d["ipCidrRange"], "10.128.0.0/20");
    assert_eq!(d["gatewayAddress"], "10.128.0.1");
    assert_eq!(d["stackType"], "IPV4_ONLY");
    assert_eq!(d["network"], fake.link("global/networks/default"));
    assert_eq!(d["region"], fake.link(&format!("regions/{REGION}")));

    // Overlapping the default range in the same network: refused.
    let (s, e) = fake.post(
        &subs,
        &json!({"name": "clash", "network": "global/networks/default", "ipCidrRange": "10.128.8.0/24"}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("conflicts with existing subnetwork 'default'")
    );
    // Host bits, a missing network, IPv6 access type on an IPv4-only subnet, dual stack without
    // an access type: refused.
    for body in [
        json!({"name": "a", "network": "global/networks/default", "ipCidrRange": "10.1.0.1/24"}),
        json!({"name": "a", "network": "global/networks/default", "ipCidrRange": "10.1.0.0/24", "ipv6AccessType": "EXTERNAL"}),
        json!({"name": "a", "network": "global/networks/default", "ipCidrRange": "10.1.0.0/24", "stackType": "IPV4_IPV6", "ipv6AccessType": "BOTH"}),
    ] {
        let (s, e) = fake.post(&subs, &body);
        assert_eq!((s, reason(&e)), (400, "invalid"), "{body}: {e}");
    }
    let (s, e) = fake.post(
        &subs,
        &json!({"name": "a", "network": "global/networks/default", "ipCidrRange": "10.1.0.0/24", "stackType": "IPV4_IPV6"}),
    );
    assert_eq!((s, reason(&e)), (400, "required"), "{e}");
    let (s, _) = fake.post(
        &subs,
        &json!({"name": "a", "network": "global/networks/nope", "ipCidrRange": "10.1.0.0/24"}),
    );
    assert_eq!(s, 404);

    // Two dual-stack subnets: distinct /64s from the external and internal pools.
    fake.mutate_ok(
        "POST",
        &subs,
        &json!({"name": "ext6", "network": "global/networks/default", "ipCidrRange": "10.1.0.0/24",
                "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL"}),
    );
    fake.mutate_ok(
        "POST",
        &subs,
        &json!({"name": "int6", "network": "global/networks/default", "ipCidrRange": "10.2.0.0/24",
                "stackType": "IPV4_IPV6", "ipv6AccessType": "INTERNAL"}),
    );
    let ext = fake.get(&format!("{subs}/ext6")).1;
    let int = fake.get(&format!("{subs}/int6")).1;
    assert_eq!(ext["externalIpv6Prefix"], "2001:db8:4000::/64", "{ext}");
    assert!(ext.get("internalIpv6Prefix").is_none(), "{ext}");
    assert_eq!(int["internalIpv6Prefix"], "fd20:0:1::/64", "{int}");
    assert_eq!(int["ipv6AccessType"], "INTERNAL");

    // Listed in the region and in the aggregated list; the network is now in use.
    let list = fake.get(&subs).1;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "ext6", "int6"]);
    let agg = fake.get(&fake.api("aggregated/subnetworks")).1;
    assert_eq!(
        agg["items"][format!("regions/{REGION}")]["subnetworks"]
            .as_array()
            .map(Vec::len),
        Some(3),
        "{agg}"
    );
    let (s, e) = fake.call("DELETE", &fake.api("global/networks/default"), None);
    assert_eq!((s, reason(&e)), (400, "resourceInUseByAnotherResource"), "{e}");

    // An address in ext6 holds it; once released the subnet can go.
    let addrs = fake.api(&format!("regions/{REGION}/addresses"));
    fake.mutate_ok(
        "POST",
        &addrs,
        &json!({"name": "a6", "ipVersion": "IPV6", "subnetwork": "ext6"}),
    );
    let a6 = fake.get(&format!("{addrs}/a6")).1;
    assert_eq!(a6["prefixLength"], 96, "{a6}");
    assert!(
        prefix_contains("2001:db8:4000::/64", a6["address"].as_str().unwrap()),
        "{a6}"
    );
    let (s, e) = fake.call("DELETE", &format!("{subs}/ext6"), None);
    assert_eq!((s, reason(&e)), (400, "resourceInUseByAnotherResource"), "{e}");
    fake.mutate_ok("DELETE", &format!("{addrs}/a6"), &Value::Null);
    fake.mutate_ok("DELETE", &format!("{subs}/ext6"), &Value::Null);
    assert_eq!(fake.get(&format!("{subs}/ext6")).0, 404);
}

#[test]
fn references_to_missing_subnetworks_are_refused() {
    let fake = Fake::start(&[]);
    ilb_backend(&fake);
    let want = format!("projects/{}/regions/{REGION}/subnetworks/missing", fake.project);
    let check = |e: &Value| {
        let msg = e["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains(&want) && msg.contains("The referenced subnetwork resource cannot be found."),
            "{e}"
        );
    };
    let addrs = fake.api(&format!("regions/{REGION}/addresses"));
    let (s, e) = fake.post(
        &addrs,
        &json!({"name": "a", "addressType": "INTERNAL", "subnetwork": "missing"}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    check(&e);
    let frs = fake.api(&format!("regions/{REGION}/forwardingRules"));
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "INTERNAL", "backendService": "bs", "ports": ["80"],
                "subnetwork": fake.link(&format!("regions/{REGION}/subnetworks/missing"))}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    check(&e);
    assert!(fake.get(&frs).1.get("items").is_none(), "nothing created");

    // A subnet that exists: the internal address and the rule's IP come from its range.
    let subs = fake.api(&format!("regions/{REGION}/subnetworks"));
    fake.mutate_ok(
        "POST",
        &subs,
        &json!({"name": "ilb", "network": "default", "ipCidrRange": "10.40.0.0/24"}),
    );
    fake.mutate_ok(
        "POST",
        &addrs,
        &json!({"name": "a", "addressType": "INTERNAL", "subnetwork": "ilb"}),
    );
    assert_eq!(fake.get(&format!("{addrs}/a")).1["address"], "10.40.0.2");
    fake.mutate_ok(
        "POST",
        &frs,
        &json!({"name": "fr", "loadBalancingScheme": "INTERNAL", "backendService": "bs", "ports": ["80"],
                "subnetwork": "ilb"}),
    );
    let fr = fake.get(&format!("{frs}/fr")).1;
    assert_eq!(fr["IPAddress"], "10.40.0.3", "{fr}");
    assert_eq!(
        fr["subnetwork"],
        fake.link(&format!("regions/{REGION}/subnetworks/ilb"))
    );
}

#[test]
fn ipv6_forwarding_rules_from_dual_stack_subnetworks() {
    let fake = Fake::start(&[]);
    ilb_backend(&fake);
    let subs = fake.api(&format!("regions/{REGION}/subnetworks"));
    for (name, range, access) in [
        ("ext6", "10.1.0.0/24", "EXTERNAL"),
        ("int6", "10.2.0.0/24", "INTERNAL"),
    ] {
        fake.mutate_ok(
            "POST",
            &subs,
            &json!({"name": name, "network": "default", "ipCidrRange": range,
                    "stackType": "IPV4_IPV6", "ipv6AccessType": access}),
        );
    }
    let frs = fake.api(&format!("regions/{REGION}/forwardingRules"));
    // Target pools are IPv4-only.
    fake.mutate_ok(
        "POST",
        &fake.api(&format!("regions/{REGION}/targetPools")),
        &json!({"name": "tp"}),
    );
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "tp6", "ipVersion": "IPV6", "target": "tp", "portRange": "80", "subnetwork": "ext6"}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("IPv4 forwarding rules only"),
        "{e}"
    );
    // External IPv6: needs a subnetwork with an EXTERNAL prefix.
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "x6", "ipVersion": "IPV6", "backendService": "xbs", "portRange": "80"}),
    );
    assert_eq!((s, reason(&e)), (400, "required"), "{e}");
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "x6", "ipVersion": "IPV6", "backendService": "xbs", "portRange": "80", "subnetwork": "default"}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "IPv4-only subnet: {e}");
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "x6", "ipVersion": "IPV6", "backendService": "xbs", "portRange": "80", "subnetwork": "int6"}),
    );
    assert_eq!(
        (s, reason(&e)),
        (400, "invalid"),
        "internal prefix for an external rule: {e}"
    );
    fake.mutate_ok(
        "POST",
        &frs,
        &json!({"name": "x6", "ipVersion": "IPV6", "backendService": "xbs", "portRange": "80", "subnetwork": "ext6"}),
    );
    let x6 = fake.get(&format!("{frs}/x6")).1;
    let ip = x6["IPAddress"].as_str().unwrap();
    assert!(
        ip.ends_with("/96") && prefix_contains("2001:db8:4000::/64", ip),
        "{x6}"
    );
    assert_eq!(x6["ipVersion"], "IPV6");

    // Internal IPv6 from the INTERNAL prefix; a requested address outside it is refused.
    let (s, e) = fake.post(
        &frs,
        &json!({"name": "i6", "loadBalancingScheme": "INTERNAL", "ipVersion": "IPV6", "backendService": "bs",
                "ports": ["80"], "subnetwork": "int6", "IPAddress": "2001:db8:9::1"}),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    fake.mutate_ok(
        "POST",
        &frs,
        &json!({"name": "i6", "loadBalancingScheme": "INTERNAL", "ipVersion": "IPV6", "backendService": "bs",
                "ports": ["80"], "subnetwork": "int6"}),
    );
    let i6 = fake.get(&format!("{frs}/i6")).1;
    assert!(
        prefix_contains("fd20:0:1::/64", i6["IPAddress"].as_str().unwrap()),
        "{i6}"
    );

    // A reserved IPv6 address used by a rule: IN_USE with the rule as user, whatever the /96.
    let addrs = fake.api(&format!("regions/{REGION}/addresses"));
    fake.mutate_ok(
        "POST",
        &addrs,
        &json!({"name": "r6", "ipVersion": "IPV6", "subnetwork": "ext6"}),
    );
    let r6 = fake.get(&format!("{addrs}/r6")).1;
    let addr = r6["address"].as_str().unwrap().to_owned();
    assert_ne!(format!("{addr}/96"), ip, "a fresh /96, not the rule's");
    fake.mutate_ok(
        "POST",
        &frs,
        &json!({"name": "x6b", "ipVersion": "IPV6", "backendService": "xbs", "portRange": "81",
                "subnetwork": "ext6", "IPAddress": format!("{addr}/96")}),
    );
    let r6 = fake.get(&format!("{addrs}/r6")).1;
    assert_eq!(r6["status"], "IN_USE", "{r6}");
    assert_eq!(
        r6["users"][0],
        fake.link(&format!("regions/{REGION}/forwardingRules/x6b"))
    );
}

#[test]
fn patch_turns_a_subnetwork_dual_stack_and_keeps_its_prefix() {
    let fake = Fake::start(&[]);
    let sub = fake.api(&format!("regions/{REGION}/subnetworks/default"));
    let fp = fake.get(&sub).1["fingerprint"].clone();
    let (s, e) = fake.call(
        "PATCH",
        &sub,
        Some(&json!({"fingerprint": "stale", "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL"})),
    );
    assert_eq!((s, reason(&e)), (412, "conditionNotMet"), "{e}");
    let (s, e) = fake.call(
        "PATCH",
        &sub,
        Some(&json!({"fingerprint": fp, "ipCidrRange": "10.128.0.0/16"})),
    );
    assert_eq!((s, reason(&e)), (400, "invalid"), "{e}");
    fake.mutate_ok(
        "PATCH",
        &sub,
        &json!({"fingerprint": fp, "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL"}),
    );
    let d = fake.get(&sub).1;
    assert_eq!(d["stackType"], "IPV4_IPV6");
    assert_eq!(d["externalIpv6Prefix"], "2001:db8:4000::/64", "{d}");
    assert_ne!(d["fingerprint"], fp, "a new fingerprint per write");
    // Another field changed: the prefix stays.
    fake.mutate_ok(
        "PATCH",
        &sub,
        &json!({"fingerprint": d["fingerprint"], "privateIpGoogleAccess": true}),
    );
    let d2 = fake.get(&sub).1;
    assert_eq!(d2["externalIpv6Prefix"], d["externalIpv6Prefix"]);
    assert_eq!(d2["privateIpGoogleAccess"], true);
    // Back to IPv4 only: the prefix and the access type go.
    fake.mutate_ok(
        "PATCH",
        &sub,
        &json!({"fingerprint": d2["fingerprint"], "stackType": "IPV4_ONLY"}),
    );
    let d3 = fake.get(&sub).1;
    assert!(
        d3.get("externalIpv6Prefix").is_none() && d3.get("ipv6AccessType").is_none(),
        "{d3}"
    );
}
