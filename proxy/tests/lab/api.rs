//! Writes to the real API server as admin, with the real kubectl run inside the node namespace (the
//! control plane listens on the node's loopback, which the test process in the root namespace cannot
//! reach). Every call is one kubectl run; a failure panics with kubectl's stderr.

use serde_json::{Value, json};
use svcnet_testcluster::Kubectl;

use super::{NODE, POD_PORT};

pub struct Api {
    pub kubectl: Kubectl,
}

/// One endpoint of a slice: (pod ip, ready, node name).
pub type Ep<'a> = (&'a str, bool, &'a str);

/// Who the test's EndpointSlices say manages them: not the EndpointSlice controller (which owns the
/// slices of Services with a selector; these Services have none).
const MANAGED_BY: &str = "svcnet-test";

impl Api {
    fn run(&self, args: &[&str], stdin: Option<&Value>) -> String {
        let out = match stdin {
            Some(body) => self.kubectl.ok_stdin(args, &body.to_string()),
            None => self.kubectl.ok(args),
        };
        out.unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
    }

    fn json(&self, args: &[&str], stdin: Option<&Value>) -> Value {
        let out = self.run(args, stdin);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {}: {e}: {out}", args.join(" ")))
    }

    /// Creates any object (JSON manifest; namespaced kinds default to `default`); returns it as stored.
    pub fn create(&self, body: &Value) -> Value {
        self.json(&["create", "-f", "-", "-o", "json"], Some(body))
    }

    /// Replaces an object (PUT without a resourceVersion: unconditional).
    pub fn replace(&self, body: &Value) -> Value {
        self.json(&["replace", "-f", "-", "-o", "json"], Some(body))
    }

    /// JSON merge patch of `kind/name` (`kind` as kubectl spells it, e.g. `node`).
    pub fn merge_patch(&self, kind: &str, name: &str, patch: &Value) -> Value {
        let p = patch.to_string();
        self.json(
            &["patch", kind, name, "--type=merge", "-p", &p, "-o", "json"],
            None,
        )
    }

    pub fn delete(&self, kind: &str, name: &str) {
        self.run(&["delete", kind, name, "--wait=false"], None);
    }

    /// A ConfigMap write: moves etcd's revision on without touching anything the proxy watches.
    pub fn bump_revision(&self, name: &str) {
        self.run(
            &[
                "create",
                "configmap",
                name,
                &format!("--from-literal=at={}", now_rfc3339()),
            ],
            None,
        );
    }

    fn create_node_object(&self, name: &str, pod_cidrs: &[&str], addresses: &[&str]) {
        let addresses: Vec<Value> = addresses
            .iter()
            .map(|a| json!({"type": "InternalIP", "address": a}))
            .collect();
        self.create(&json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"podCIDR": pod_cidrs[0], "podCIDRs": pod_cidrs},
        }));
        // Status is the kubelet's to write, through the status subresource.
        let status = json!({"status": {"addresses": addresses}}).to_string();
        self.run(
            &[
                "patch",
                "node",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                &status,
            ],
            None,
        );
    }

    pub fn create_node(&self, name: &str, ip: &str) {
        self.create_node_object(name, &["10.244.1.0/24"], &[ip]);
    }

    /// A dual-stack Node: both InternalIPs, both pod CIDRs (the bridge's subnets).
    pub fn create_dual_stack_node(&self, name: &str, ip: &str, ip6: &str) {
        self.create_node_object(name, &["10.244.1.0/24", "fd00:10:244:1::/64"], &[ip, ip6]);
    }

    /// Creates a Service in `default` from a spec (selector-less, so its EndpointSlices are the
    /// test's); returns the stored object (allocated IPs/ports).
    pub fn service(&self, name: &str, spec: Value) -> Value {
        assert!(
            spec.get("selector").is_none(),
            "the test writes the slices itself"
        );
        self.create(&json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}))
    }

    pub fn delete_service(&self, name: &str) {
        self.delete("service", name);
    }

    /// Sets `status.loadBalancer.ingress` (what the cloud controller does).
    pub fn set_lb_ingress(&self, name: &str, ip: &str) {
        let patch =
            json!({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}}).to_string();
        self.run(
            &[
                "patch",
                "service",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch,
            ],
            None,
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
                "labels": {"kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
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
        self.create(&Self::slice_body(service, &slice, "IPv4", ports, eps));
    }

    /// Replaces the endpoints of `<service>-1`.
    pub fn update_slice(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-1");
        self.replace(&Self::slice_body(service, &slice, "IPv4", ports, eps));
    }

    /// Creates the IPv6 EndpointSlice `<service>-v6` (the endpoint-slice controller writes one slice per
    /// address family).
    pub fn slice_v6(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-v6");
        self.create(&Self::slice_body(service, &slice, "IPv6", ports, eps));
    }

    /// Replaces the endpoints of `<service>-v6`.
    pub fn update_slice_v6(&self, service: &str, ports: &[(&str, &str)], eps: &[Ep<'_>]) {
        let slice = format!("{service}-v6");
        self.replace(&Self::slice_body(service, &slice, "IPv6", ports, eps));
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
