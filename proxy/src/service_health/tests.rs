use super::*;
use crate::model::{Endpoint, Protocol, ServicePort, ServicePortName};

fn port(name: &str, port: &str, hc: Option<u16>, local: bool) -> ServicePort {
    ServicePort {
        name: ServicePortName {
            namespace: "default".into(),
            name: name.into(),
            port: port.into(),
            protocol: Protocol::Tcp,
        },
        cluster_ip: "10.96.0.5".parse().expect("ip"),
        port: 80,
        node_port: Some(30080),
        external_ips: vec![],
        load_balancer_vips: vec![],
        source_ranges: None,
        health_check_node_port: hc,
        session_affinity: None,
        external_policy_local: local,
        internal_policy_local: false,
    }
}

fn ep(ip: &str, node: &str, ready: bool) -> Endpoint {
    Endpoint {
        ip: ip.parse().expect("ip"),
        port: 8080,
        ready,
        serving: ready,
        terminating: false,
        node_name: Some(node.into()),
        hints: None,
    }
}

#[test]
fn desired_counts_ready_local_endpoints_of_local_policy_services() {
    let mut s = ProxyState::default();
    for (svc, p, hc, local, eps) in [
        (
            "web",
            "http",
            Some(31000),
            true,
            vec![
                ep("10.0.0.1", "me", true),
                ep("10.0.0.2", "other", true),
                ep("10.0.0.3", "me", false),
            ],
        ),
        ("web", "https", Some(31000), true, vec![]),
        (
            "cluster",
            "",
            Some(31001),
            false,
            vec![ep("10.0.0.4", "me", true)],
        ),
        ("empty", "", Some(31002), true, vec![]),
    ] {
        let sp = port(svc, p, hc, local);
        s.endpoints.insert(sp.name.clone(), eps.into());
        s.services.insert(sp.name.clone(), sp.into());
    }
    let d = desired(&[&s], "me");
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[&("default".to_string(), "web".to_string())], (31000, 1));
    assert_eq!(d[&("default".to_string(), "empty".to_string())], (31002, 0));
}

/// Status, headers and body as kube-proxy's server answers (pkg/proxy/healthcheck: 200 only with a
/// local endpoint and a healthy proxy; `X-Load-Balancing-Endpoint-Weight` is the local count).
#[tokio::test]
async fn answer_carries_status_weight_header_and_body() {
    let svc: ServiceName = ("ns".into(), "web".into());
    for (local, healthy, code) in [(3, true, 200), (0, true, 503), (2, false, 503)] {
        let r = answer(&svc, local, healthy);
        assert_eq!(r.status().as_u16(), code, "local {local} healthy {healthy}");
        let h = r.headers();
        assert_eq!(h["x-load-balancing-endpoint-weight"], local.to_string().as_str());
        assert_eq!(h["content-type"], "application/json");
        assert_eq!(h["x-content-type-options"], "nosniff");
        let body = axum::body::to_bytes(r.into_body(), 4096).await.expect("body");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json body");
        assert_eq!(
            v,
            json!({"service": {"namespace": "ns", "name": "web"},
                "localEndpoints": local, "serviceProxyHealthy": healthy})
        );
    }
}
