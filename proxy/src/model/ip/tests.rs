//! Cases from upstream's sloppy parsers (k8s.io/utils/net) and kube-proxy's TestBadIPs inputs.

use super::*;

fn ip(s: &str) -> Option<String> {
    parse_ip_sloppy(s).map(|i| i.to_string())
}

fn cidr(s: &str) -> Option<String> {
    parse_cidr_sloppy(s).map(|n| n.to_string())
}

#[test]
fn leading_zeros_are_decimal_and_print_canonically() {
    assert_eq!(ip("172.30.0.041").as_deref(), Some("172.30.0.41"));
    assert_eq!(ip("10.180.00.001").as_deref(), Some("10.180.0.1"));
    assert_eq!(ip("010.000.001.001").as_deref(), Some("10.0.1.1"));
    assert_eq!(ip("192.168.099.011").as_deref(), Some("192.168.99.11"));
    // Octal would make this 8; upstream reads decimal.
    assert_eq!(ip("0.0.0.010").as_deref(), Some("0.0.0.10"));
    assert_eq!(ip("000000001.2.3.4").as_deref(), Some("1.2.3.4"));
}

#[test]
fn plain_forms_still_parse() {
    assert_eq!(ip("10.0.0.1").as_deref(), Some("10.0.0.1"));
    assert_eq!(ip("2001:db8::1").as_deref(), Some("2001:db8::1"));
    assert_eq!(ip("2001:DB8:0:0::1").as_deref(), Some("2001:db8::1"));
}

#[test]
fn ipv4_mapped_counts_as_ipv4() {
    assert_eq!(ip("::ffff:10.0.0.1").as_deref(), Some("10.0.0.1"));
    assert_eq!(ip("::ffff:010.000.000.001").as_deref(), Some("10.0.0.1"));
}

#[test]
fn garbage_is_refused() {
    for bad in [
        "",
        "1.2.3",
        "1.2.3.4.5",
        "256.0.0.1",
        "1.2.3.0256",
        "1.2.3.-1",
        "1.2.3.+1",
        " 1.2.3.4",
        "1.2.3.4 ",
        "1..3.4",
        "a.b.c.d",
        "1.2.3.4/32",
        "bogus",
        "::g",
        "1.2.3.4\" -j ACCEPT",
    ] {
        assert_eq!(ip(bad), None, "{bad:?}");
    }
}

#[test]
fn cidrs() {
    assert_eq!(cidr("203.0.113.000/025").as_deref(), Some("203.0.113.0/25"));
    assert_eq!(cidr("10.0.0.0/8").as_deref(), Some("10.0.0.0/8"));
    // Host bits are cleared, as Go's IPNet.
    assert_eq!(cidr("203.0.113.130/25").as_deref(), Some("203.0.113.128/25"));
    assert_eq!(cidr("fd00:10::/064").as_deref(), Some("fd00:10::/64"));
    for bad in [
        "10.0.0.0/33",
        "10.0.0.0",
        "10.0.0.0/",
        "10.0.0.0/-1",
        "x/8",
        "fd00::/129",
        "10.0.0.0/8/8",
    ] {
        assert_eq!(cidr(bad), None, "{bad:?}");
    }
}
