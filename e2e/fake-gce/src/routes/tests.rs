use super::*;

fn cfg() -> Config {
    Config {
        listen: "127.0.0.1:0".into(),
        project: "p".into(),
        region: "r1".into(),
        zones: vec!["r1-a".into()],
        external_range: "203.0.113.0/24".parse().expect("net"),
        internal_range: "10.128.0.0/20".parse().expect("net"),
        external_ipv6_range: "2001:db8:4000::/48".parse().expect("net"),
        internal_ipv6_range: "fd20:0:1::/48".parse().expect("net"),
        op_latency_ms: 0,
        state_file: None,
        base_url: None,
    }
}

#[test]
fn routes_resources_and_operations() {
    let c = cfg();
    let p = |m: &str, path: &str| parse(&c, m, path);
    assert_eq!(
        p("GET", "/compute/v1/projects/p/global/firewalls"),
        Ok(Route::List(Kind::Firewall, Scope::Global))
    );
    assert_eq!(
        p(
            "POST",
            "/compute/v1/projects/p/regions/r1/targetPools/tp/addInstance"
        ),
        Ok(Route::Verb(
            Kind::TargetPool,
            Scope::Region("r1".into()),
            "tp".into(),
            "addInstance".into()
        ))
    );
    assert_eq!(
        p("POST", "/compute/v1/projects/p/zones/r1-a/operations/op1/wait"),
        Ok(Route::OpWait(Scope::Zone("r1-a".into()), "op1".into()))
    );
    assert_eq!(
        p("GET", "/compute/v1/projects/p/aggregated/addresses"),
        Ok(Route::Aggregated(Kind::Address))
    );
}

#[test]
fn rejects_other_projects_regions_and_misplaced_collections() {
    let c = cfg();
    let code = |m: &str, path: &str| parse(&c, m, path).map_err(|e| e.code);
    assert_eq!(code("GET", "/compute/v1/projects/q/global/firewalls"), Err(404));
    assert_eq!(
        code("GET", "/compute/v1/projects/p/regions/r2/targetPools"),
        Err(404)
    );
    assert_eq!(code("GET", "/compute/v1/projects/p/global/targetPools"), Err(404));
    assert_eq!(
        code("GET", "/compute/v1/projects/p/aggregated/firewalls"),
        Err(404)
    );
    assert_eq!(code("PATCH", "/compute/v1/projects/p/global/firewalls"), Err(405));
}
