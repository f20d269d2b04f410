use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn parses_one_or_two_ranges_of_different_families() {
    let one: ServiceCidrs = "10.96.0.0/16".parse().unwrap();
    assert_eq!(one, ServiceCidrs::default());
    assert!(!one.dual_stack());
    let two: ServiceCidrs = "fd00:10:96::/108, 10.96.0.0/16".parse().unwrap();
    assert!(two.dual_stack());
    assert_eq!(two.default_family(), IpFamily::V6);
    assert_eq!(two.to_string(), "fd00:10:96::/108,10.96.0.0/16");
    assert!("10.0.0.0/24,10.1.0.0/24".parse::<ServiceCidrs>().is_err());
    assert!(
        "10.0.0.0/24,fd00::/120,fd01::/120"
            .parse::<ServiceCidrs>()
            .is_err()
    );
    let big = "fd00::/64".parse::<ServiceCidrs>().unwrap_err();
    assert!(big.contains("the mask must be >= 108"), "{big}");
    assert!("10.0.0.0/8".parse::<ServiceCidrs>().is_err());
    assert!("nonsense".parse::<ServiceCidrs>().is_err());
}

#[test]
fn v4_skips_network_and_broadcast_and_starts_above_the_band() {
    let r = ServiceRange {
        cidr: "10.0.0.0/24".parse().unwrap(),
    };
    assert!(!r.contains(&ip("10.0.0.0")) && !r.contains(&ip("10.0.0.255")));
    assert!(r.contains(&ip("10.0.0.1")) && r.contains(&ip("10.0.0.254")));
    assert!(!r.contains(&ip("10.0.1.1")) && !r.contains(&ip("fd00::1")));
    let mut taken = HashSet::new();
    assert_eq!(r.allocate(&taken), Some(ip("10.0.0.17")));
    // Once the upper part is full, the band below is used.
    taken.extend((17..=254).map(|i| ip(&format!("10.0.0.{i}"))));
    assert_eq!(r.allocate(&taken), Some(ip("10.0.0.1")));
}

#[test]
fn v6_has_no_broadcast_and_at_most_65536_addresses() {
    let r = ServiceRange {
        cidr: "fd00:10:96::/108".parse().unwrap(),
    };
    assert!(!r.contains(&ip("fd00:10:96::")));
    assert!(r.contains(&ip("fd00:10:96::1")) && r.contains(&ip("fd00:10:96::ffff")));
    // Beyond the bitmap upstream keeps for an IPv6 range.
    assert!(!r.contains(&ip("fd00:10:96::1:0")));
    assert!(!r.contains(&ip("10.96.0.1")));
    // 2^20 addresses: the band is capped at 256.
    assert_eq!(r.allocate(&HashSet::new()), Some(ip("fd00:10:96::101")));
    let small = ServiceRange {
        cidr: "fd00::/124".parse().unwrap(),
    };
    assert_eq!(small.allocate(&HashSet::new()), Some(ip("fd00::1")));
    assert!(small.contains(&ip("fd00::f")));
}
