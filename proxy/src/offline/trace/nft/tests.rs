//! The nftables tracer on upstream's own expected ruleset shapes (rendered by our renderer, which
//! `tests/upstream_nft.rs` checks against upstream's goldens) and on the kernel's listing form.

use std::net::IpAddr;

use super::parse::{elements, tokens};
use super::*;
use crate::offline::trace::{Hook, Proto, Verdict};

/// A small table in `nft -f` form: one service with two endpoints, masquerading, a rejected one.
const TABLE: &str = r#"add table ip kube-proxy { comment "rules for kube-proxy" ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy nat-output { type nat hook output priority -100 ; }
add chain ip kube-proxy nat-postrouting { type nat hook postrouting priority 100 ; }
add chain ip kube-proxy filter-forward { type filter hook forward priority 0 ; }
add chain ip kube-proxy services
add chain ip kube-proxy masquerading
add chain ip kube-proxy mark-for-masquerade
add chain ip kube-proxy service-endpoints-check
add chain ip kube-proxy reject-chain { comment "helper" ; }
add chain ip kube-proxy service-AAAA-ns/svc/tcp/http
add chain ip kube-proxy endpoint-BBBB-ns/svc/tcp/http__10.180.0.1/80
add chain ip kube-proxy endpoint-CCCC-ns/svc/tcp/http__10.180.0.2/80
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }
add map ip kube-proxy no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; }
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy nat-output jump services
add rule ip kube-proxy nat-postrouting jump masquerading
add rule ip kube-proxy filter-forward ct state new jump service-endpoints-check
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy masquerading mark and 0x4000 == 0 return
add rule ip kube-proxy masquerading mark set mark xor 0x4000
add rule ip kube-proxy masquerading masquerade fully-random
add rule ip kube-proxy mark-for-masquerade mark set mark or 0x4000
add rule ip kube-proxy service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
add rule ip kube-proxy reject-chain reject
add rule ip kube-proxy service-AAAA-ns/svc/tcp/http ip daddr 172.30.0.41 tcp dport 80 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ip kube-proxy service-AAAA-ns/svc/tcp/http numgen random mod 2 vmap { 0 : goto endpoint-BBBB-ns/svc/tcp/http__10.180.0.1/80 , 1 : goto endpoint-CCCC-ns/svc/tcp/http__10.180.0.2/80 }
add rule ip kube-proxy endpoint-BBBB-ns/svc/tcp/http__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
add rule ip kube-proxy endpoint-BBBB-ns/svc/tcp/http__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
add rule ip kube-proxy endpoint-CCCC-ns/svc/tcp/http__10.180.0.2/80 ip saddr 10.180.0.2 jump mark-for-masquerade
add rule ip kube-proxy endpoint-CCCC-ns/svc/tcp/http__10.180.0.2/80 meta l4proto tcp dnat to 10.180.0.2:80
add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 : goto service-AAAA-ns/svc/tcp/http }
add element ip kube-proxy no-endpoint-services { 172.30.0.46 . tcp . 80 comment "ns/none:http" : goto reject-chain }
"#;

fn packet(src: &str, dst: &str, dport: u16) -> Packet {
    Packet {
        src: src.parse().expect("literal"),
        dst: dst.parse().expect("literal"),
        dport,
        proto: Proto::Tcp,
        in_iface: Some("eth0".into()),
    }
}

fn opts(hook: Hook) -> TraceOptions {
    TraceOptions {
        node_ips: vec!["192.168.0.2".parse::<IpAddr>().expect("literal")],
        hook,
    }
}

#[test]
fn a_cluster_ip_goes_to_each_endpoint_half_the_time_and_outsiders_are_masqueraded() {
    let rs = parse(TABLE).expect("parse");
    let t = trace(
        &rs,
        &packet("203.0.113.9", "172.30.0.41", 80),
        &opts(Hook::Prerouting),
    );
    let s = t.summary();
    assert_eq!(s.len(), 2, "{t}");
    for (v, masq, p) in &s {
        assert!(matches!(v, Verdict::Dnat(a) if a.port() == 80), "{t}");
        assert!(*masq, "traffic from outside the cluster CIDR is masqueraded: {t}");
        assert!((p - 0.5).abs() < 1e-9, "{t}");
    }
    // From a pod of the cluster CIDR: no masquerade.
    let t = trace(
        &rs,
        &packet("10.0.5.5", "172.30.0.41", 80),
        &opts(Hook::Prerouting),
    );
    assert!(t.summary().iter().all(|(_, masq, _)| !masq), "{t}");
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert!(!t.no_service_rule(), "{t}");
    assert!(!t.to_string().contains("no Kubernetes service rule"), "{t}");
}

#[test]
fn wrong_port_and_no_endpoints() {
    let rs = parse(TABLE).expect("parse");
    let t = trace(
        &rs,
        &packet("10.0.5.5", "172.30.0.41", 81),
        &opts(Hook::Prerouting),
    );
    assert_eq!(t.summary(), vec![(Verdict::Accept, false, 1.0)], "{t}");
    // Only plumbing matched (the hooks' jumps, a lookup that found nothing).
    assert!(t.no_service_rule(), "{t}");
    let t = trace(
        &rs,
        &packet("10.0.5.5", "172.30.0.46", 80),
        &opts(Hook::Prerouting),
    );
    assert_eq!(t.summary(), vec![(Verdict::Reject, false, 1.0)], "{t}");
    assert!(!t.no_service_rule(), "{t}");
    // The step that decided it is the element's verdict map rule.
    let steps: Vec<&str> = t.outcomes[0].steps.iter().map(|s| s.chain.as_str()).collect();
    assert_eq!(
        steps,
        [
            "nat-prerouting",
            "filter-forward",
            "service-endpoints-check",
            "reject-chain"
        ],
        "{t}"
    );
}

#[test]
fn the_kernel_listing_form_traces_the_same() {
    // What `nft list table ip kube-proxy` prints for a part of TABLE (multi-line elements, no
    // commas between verdict map elements, symbolic priorities, canonical mark statements).
    let listing = r#"table ip kube-proxy {
	comment "rules for kube-proxy"
	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 172.30.0.41 . tcp . 80 : goto service-AAAA-ns/svc/tcp/http
			     172.30.0.99 . tcp . 80 : goto service-AAAA-ns/svc/tcp/http }
	}
	chain nat-prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		jump services
	}
	chain nat-postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		jump masquerading
	}
	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
	}
	chain masquerading {
		meta mark & 0x00004000 == 0x00000000 return
		meta mark set meta mark ^ 0x00004000
		masquerade fully-random
	}
	chain mark-for-masquerade {
		meta mark set meta mark | 0x00004000
	}
	chain service-AAAA-ns/svc/tcp/http {
		ip daddr 172.30.0.41 tcp dport 80 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
		numgen random mod 2 vmap { 0 : goto endpoint-BBBB-ns/svc/tcp/http__10.180.0.1/80, 1 : goto endpoint-CCCC-ns/svc/tcp/http__10.180.0.2/80 }
	}
	chain endpoint-BBBB-ns/svc/tcp/http__10.180.0.1/80 {
		ip saddr 10.180.0.1 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.1:80
	}
	chain endpoint-CCCC-ns/svc/tcp/http__10.180.0.2/80 {
		ip saddr 10.180.0.2 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.2:80
	}
}
"#;
    assert!(is_nft(listing));
    let listed = parse(listing).expect("parse listing");
    assert_eq!(listed.sets["service-ips"].elements.len(), 2);
    assert_eq!(
        listed.chains["nat-prerouting"].hook,
        Some(("prerouting".to_string(), -100))
    );
    let commands = parse(TABLE).expect("parse");
    for src in ["203.0.113.9", "10.0.5.5", "10.180.0.1"] {
        let p = packet(src, "172.30.0.41", 80);
        let (a, b) = (
            trace(&listed, &p, &opts(Hook::Prerouting)),
            trace(&commands, &p, &opts(Hook::Prerouting)),
        );
        assert!(a.same_outcomes(&b, 1e-9), "{src}:\nlisting:\n{a}\ncommands:\n{b}");
    }
    // The hairpin: an endpoint reaching its own service is masqueraded.
    let t = trace(
        &listed,
        &packet("10.180.0.1", "172.30.0.41", 80),
        &opts(Hook::Prerouting),
    );
    let to_self = t
        .outcomes
        .iter()
        .find(|o| o.verdict == Verdict::Dnat("10.180.0.1:80".parse().expect("literal")))
        .expect("an outcome to 10.180.0.1");
    assert!(to_self.masquerade, "{t}");
}

#[test]
fn words_and_elements() {
    assert_eq!(
        tokens(r#"a{b, "c d" ;}"#),
        ["a", "{", "b", ",", "\"c d\"", ";", "}"]
    );
    let w = tokens(r#"1.2.3.4 . tcp . 80 comment "x, y" : goto c1 5.6.7.8 . udp . 53 : drop"#);
    let e = elements(&w);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0].0, ["1.2.3.4", "tcp", "80"]);
    assert_eq!(
        e[0].1.as_deref(),
        Some(&["goto".to_string(), "c1".to_string()][..])
    );
    assert_eq!(e[1].1.as_deref(), Some(&["drop".to_string()][..]));
}
