use super::*;

#[test]
fn slice_with_first_moves_only_the_first_endpoint() {
    let ip = Ipv4Addr::new(10, 201, 0, 1);
    let s = slice_with_first(3, 4, ip);
    let eps = s["endpoints"].as_array().expect("endpoints");
    assert_eq!(eps.len(), 4);
    assert_eq!(eps[0]["addresses"], json!(["10.201.0.1"]));
    assert_eq!(
        eps[1]["addresses"],
        json!([p4::endpoint_ip(3 * 4 + 1).to_string()])
    );
    assert_eq!(s["metadata"]["name"], "svc-00003-bench");
}

#[test]
fn churn_addresses_are_new_and_distinct() {
    let mut seen = std::collections::HashSet::new();
    for round in 0..4 {
        for k in 0..1000 {
            let ip = churn_ip(round, k);
            assert!(seen.insert(ip), "{ip} repeated");
            let o = ip.octets();
            assert_eq!(o[0], 10);
            // Inside the endpoint range 10.128.0.0/9 but above what p4 loads.
            assert!((160..192).contains(&o[1]), "{ip}");
        }
    }
    assert!(u32::from(p4::endpoint_ip(1_000_000)) < u32::from(churn_ip(0, 0)));
}

#[test]
fn added_service_slice_points_at_its_service() {
    let (svc, slice) = one_endpoint_service("up-x-1", Ipv4Addr::new(10, 201, 0, 1));
    assert_eq!(svc["metadata"]["name"], "up-x-1");
    assert!(
        svc["spec"].get("clusterIP").is_none(),
        "the API server allocates it"
    );
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "up-x-1"
    );
    assert_eq!(slice["ports"][0]["port"], json!(ENDPOINT_PORT));
}

#[test]
fn requests_reject_missing_words() {
    assert!(replace("127.0.0.1:1", &["1", "2"]).is_err());
    assert!(add("127.0.0.1:1", &[]).is_err());
    assert!(probe(&["10.0.0.1:80"]).is_err());
    assert!(churn("127.0.0.1:1", &["0", "0", "1", "1", "1"]).is_err());
}

#[test]
fn probe_finds_a_listener_and_gives_up_on_a_closed_port() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    assert_eq!(probe_until_live(addr, Duration::from_millis(100)), Ok(1));
    // A port bound but not listening refuses connections, and holding it keeps other processes
    // (parallel tests) and this test's own source port from taking it, unlike a dropped listener's.
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind");
    let closed = held
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("bound address");
    let e = probe_until_live(closed, Duration::from_millis(20)).expect_err("closed port is not live");
    assert!(e.contains("not live"), "{e}");
}
