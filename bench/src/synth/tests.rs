use super::*;

#[test]
fn cluster_ips_are_distinct_in_range_and_seeded() {
    let a = cluster_ips(5000, 7);
    assert_eq!(a.len(), 5000);
    let set: HashSet<_> = a.iter().collect();
    assert_eq!(set.len(), a.len());
    let net: ipnet::Ipv4Net = "10.96.0.0/12".parse().unwrap();
    assert!(a.iter().all(|ip| net.contains(ip) && *ip != net.network()));
    assert_eq!(a, cluster_ips(5000, 7));
    assert_ne!(a, cluster_ips(5000, 8));
}

#[test]
fn state_has_requested_shape_and_name_order() {
    let ips = cluster_ips(12, 1);
    let st = state(&ips, 3);
    assert_eq!(st.services.len(), 12);
    assert_eq!(st.endpoints.values().map(|e| e.len()).sum::<usize>(), 36);
    // Names sort in creation order: the last key is service 11 with ips[11].
    let (last, svc) = st.services.iter().next_back().unwrap();
    assert_eq!(*last, service_name(11));
    assert_eq!(svc.cluster_ip, IpAddr::V4(ips[11]));
    let all: HashSet<_> = st
        .endpoints
        .values()
        .flat_map(|e| e.iter())
        .map(|e| e.ip)
        .collect();
    assert_eq!(all.len(), 36, "endpoint IPs must be distinct");
}

#[test]
fn api_objects_convert_to_the_same_state() {
    let ips = cluster_ips(7, 3);
    let (services, slices) = k8s_objects(&ips, 4);
    let st = ProxyState::from_k8s(
        services.iter().map(AsRef::as_ref),
        slices.iter().map(AsRef::as_ref),
        svcnet_proxy::model::Family::V4,
    );
    assert!(st.errors.is_empty(), "{:?}", st.errors);
    let mut want = state(&ips, 4);
    assert_eq!(st.services, want.services);
    // The model orders endpoints by their "ip:port" text, as upstream does.
    for eps in want.endpoints.values_mut() {
        std::sync::Arc::make_mut(eps).sort_by_key(|e| e.addr());
    }
    assert_eq!(st.endpoints, want.endpoints);
}
