use super::*;

#[test]
fn names_follow_rfc1035() {
    for ok in ["a", "k8s-fw-a1b2", "a-1"] {
        assert!(name("name", ok).is_ok(), "{ok}");
    }
    let too_long = format!("a{}", "b".repeat(63));
    for bad in ["", "A", "1a", "a-", "a_b", too_long.as_str()] {
        assert_eq!(
            name("name", bad).map_err(|e| e.reason),
            Err("invalid".into()),
            "{bad}"
        );
    }
}

#[test]
fn ports_and_cidrs() {
    assert_eq!(port_range("p", "80"), Ok((80, 80)));
    assert_eq!(port_range("p", "80-90"), Ok((80, 90)));
    for bad in ["0", "90-80", "70000", "x", "1-"] {
        assert!(port_range("p", bad).is_err(), "{bad}");
    }
    assert!(cidr("c", "10.0.0.0/8").is_ok());
    assert!(cidr("c", "10.0.0.1").is_ok());
    assert!(cidr("c", "10.0.0.0/33").is_err());
    assert!(firewall_protocol("p", "tcp").is_ok());
    assert!(firewall_protocol("p", "47").is_ok());
    assert!(firewall_protocol("p", "tcpx").is_err());
}
