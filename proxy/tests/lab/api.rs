//! Writes to the API stand-in from inside the node namespace (the stand-in listens on the node's
//! loopback, which the test process in the root namespace cannot reach), with the helper's HTTP client.

use serde_json::{Value, json};

use super::{API_PORT, NODE, Netns, POD_PORT};

pub struct Api<'a> {
    pub ns: &'a Netns,
}

/// One endpoint of a slice: (pod ip, ready, node name).
pub type Ep<'a> = (&'a str, bool, &'a str);

impl Api<'_> {
    /// One request with a JSON (or patch) body; returns (HTTP status, parsed body).
    pub fn call(&self, method: &str, path: &str, content_type: &str, body: Option<&Value>) -> (u16, Value) {
        let url = format!("http://127.0.0.1:{API_PORT}{path}");
        let text = body.map(Value::to_string).unwrap_or_default();
        let (code, reply) = super::helper::http(self.ns, method, &url, content_type, &text);
        (code, serde_json::from_str(&reply).unwrap_or(Value::Null))
    }

    fn must(&self, method: &str, path: &str, content_type: &str, body: &Value) -> Value {
        let (code, v) = self.call(method, path, content_type, Some(body));
        assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
        v
    }

    pub fn create(&self, path: &str, body: &Value) -> Value {
        self.must("POST", path, "application/json", body)
    }

    pub fn put(&self, path: &str, body: &Value) -> Value {
        self.must("PUT", path, "application/json", body)
    }

    pub fn merge_patch(&self, path: &str, body: &Value) -> Value {
        self.must("PATCH", path, "application/merge-patch+json", body)
    }

    pub fn delete(&self, path: &str) {
        let (code, v) = self.call("DELETE", path, "application/json", None);
        assert!((200..300).contains(&code), "DELETE {path}: {code} {v}");
    }

    pub fn create_node(&self, name: &str, ip: &str) {
        self.create(
            "/api/v1/nodes",
            &json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
                "status": {"addresses": [{"type": "InternalIP", "address": ip}]}
            }),
        );
    }

    /// A dual-stack Node: both InternalIPs, both pod CIDRs (the bridge's subnets).
    pub fn create_dual_stack_node(&self, name: &str, ip: &str, ip6: &str) {
        self.create(
            "/api/v1/nodes",
            &json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24", "fd00:10:244:1::/64"]},
                "status": {"addresses": [
                    {"type": "InternalIP", "address": ip},
                    {"type": "InternalIP", "address": ip6}
                ]}
            }),
        );
    }

    /// Creates a Service in `default` from a spec; returns the stored object (allocated IPs/ports).
    pub fn service(&self, name: &str, spec: Value) -> Value {
        self.create(
            "/api/v1/namespaces/default/services",
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}),
        )
    }

    pub fn delete_service(&self, name: &str) {
        self.delete(&format!("/api/v1/namespaces/default/services/{name}"));
    }

    /// Sets `status.loadBalancer.ingress` (what the cloud controller does).
    pub fn set_lb_ingress(&self, name: &str, ip: &str) {
        self.merge_patch(
            &format!("/api/v1/namespaces/default/services/{name}/status"),
            &json!({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}}),
        );
    }

    fn slice_body(
        service: &str,
        slice: &str,
        address_type: &str,
        ports: &[(&str, &str)],
        eps: &[Ep<'_>],
    ) -> Value {
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": slice, "namespace": "default",
                "labels": {"kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": "svcnet-test"},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": now_rfc3339()}
            },
            "addressType": address_type,
            "endpoints": eps.iter().map(|(ip, ready, node)| json!({
                "addresses": [ip],
                "conditions": {"ready": ready, "serving": ready, "terminating": false},
                "nodeName": node
            })).collect::<Vec<_>>(),
            "ports": ports.iter().map(|(name, proto)| json!({"name": name, "port": POD_PORT, "protocol": proto})).collect::<Vec<_>>()
        })
    }

    /// Creates the EndpointSlice `<service>-1` for `service` with `ports` (name, protocol) on 8080.
    pub fn slice(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-1");
        self.create(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            &Self::slice_body(service, &slice, "IPv4", ports, eps),
        );
    }

    /// Replaces the endpoints of `<service>-1`.
    pub fn update_slice(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-1");
        self.put(
            &format!("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/{slice}"),
            &Self::slice_body(service, &slice, "IPv4", ports, eps),
        );
    }

    /// Creates the IPv6 EndpointSlice `<service>-v6` (the endpoint-slice controller writes one slice per
    /// address family).
    pub fn slice_v6(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-v6");
        self.create(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            &Self::slice_body(service, &slice, "IPv6", ports, eps),
        );
    }

    /// Replaces the endpoints of `<service>-v6`.
    pub fn update_slice_v6(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-v6");
        self.put(
            &format!("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/{slice}"),
            &Self::slice_body(service, &slice, "IPv6", ports, eps),
        );
    }
}

/// Shorthand for a ready local endpoint.
pub fn local(ip: &str) -> Ep<'_> {
    (ip, true, NODE)
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

/// The ClusterIP of a created Service.
pub fn cluster_ip(svc: &Value) -> String {
    svc["spec"]["clusterIP"].as_str().expect("clusterIP").to_string()
}

/// `clusterIPs[i]` of a created Service.
pub fn cluster_ip_at(svc: &Value, i: usize) -> String {
    svc["spec"]["clusterIPs"][i]
        .as_str()
        .expect("clusterIPs[i]")
        .to_string()
}

/// The nodePort of the first port of a created Service.
pub fn node_port(svc: &Value) -> u16 {
    svc["spec"]["ports"][0]["nodePort"].as_u64().expect("nodePort") as u16
}
