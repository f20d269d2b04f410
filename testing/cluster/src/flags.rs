//! The command lines of etcd, kube-apiserver and kube-controller-manager for one instance (pure: paths
//! and options in, arguments out).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::certs::Pki;

pub const ETCD_CLIENT_PORT: u16 = 2379;
pub const ETCD_PEER_PORT: u16 = 2380;
pub const APISERVER_PORT: u16 = 6443;
pub const CONTROLLER_MANAGER_PORT: u16 = 10257;

/// The issuer of ServiceAccount tokens, as kubeadm sets it.
pub const SA_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The kube-controller-manager controllers a cluster running svcnet needs: workloads (deployment,
/// replicaset), Services' backends (endpointslice, endpoints), pod CIDRs as on GKE (node-ipam),
/// namespace deletion, owner-reference garbage collection, and ServiceAccounts with their tokens and
/// root CA ConfigMap (needed before Pods are admitted and for per-controller credentials).
pub const CONTROLLERS: &[&str] = &[
    "deployment-controller",
    "replicaset-controller",
    "endpointslice-controller",
    "endpoints-controller",
    "node-ipam-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
];

/// The controller that judges node health from Leases and Ready conditions ([`Options::node_lifecycle`]).
pub const NODE_LIFECYCLE: &str = "node-lifecycle-controller";

/// What differs between instances.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--service-cluster-ip-range`.
    pub service_cidr: String,
    /// `--service-node-port-range`.
    pub node_port_range: String,
    /// `--cluster-cidr` nodeipam hands node podCIDRs out of: one CIDR, or an IPv4 and an IPv6 one
    /// separated by a comma (dual-stack: every Node gets a podCIDR of each family).
    pub cluster_cidr: String,
    /// `--node-cidr-mask-size` (`--node-cidr-mask-size-ipv4` when `cluster_cidr` is dual-stack).
    pub node_cidr_mask_size: u8,
    /// `--node-cidr-mask-size-ipv6`, only passed when `cluster_cidr` is dual-stack.
    pub node_cidr_mask_size_ipv6: u8,
    /// Start kube-controller-manager (false: only etcd + kube-apiserver, a faster start for tests that
    /// need no controllers).
    pub controller_manager: bool,
    /// Also run the node lifecycle controller ([`NODE_LIFECYCLE`]): it lifts the
    /// `node.kubernetes.io/not-ready` taint the API server puts on every new Node once the Node reports
    /// Ready, and marks a node whose kubelet stops renewing its Lease NotReady and taints it. For clusters
    /// with kubelets (the lab's agent plays them); off by default, since tests that create bare Nodes have
    /// none and would see them tainted unreachable.
    pub node_lifecycle: bool,
    /// Run every process inside this network namespace (`ip netns exec`), as the lab does with its `vpc`
    /// namespace; None: the machine's own namespace.
    pub netns: Option<String>,
    /// The address to listen on. None: a random unused 127.a.b.c outside a namespace, 127.0.0.1 inside
    /// one (the namespace's loopback is its own).
    pub ip: Option<IpAddr>,
}

impl Default for Options {
    /// kubeadm's service range and node ports; the lab's pod range (nodes get 10.64.N.0/24).
    fn default() -> Self {
        Options {
            service_cidr: "10.96.0.0/16".into(),
            node_port_range: "30000-32767".into(),
            cluster_cidr: "10.64.0.0/14".into(),
            node_cidr_mask_size: 24,
            node_cidr_mask_size_ipv6: 64,
            controller_manager: true,
            node_lifecycle: false,
            netns: None,
            ip: None,
        }
    }
}

/// Where one instance listens and keeps its files.
#[derive(Clone, Debug)]
pub struct Layout {
    pub dir: PathBuf,
    pub ip: IpAddr,
    pub netns: Option<String>,
}

impl Layout {
    /// `program args` as started: behind `ip netns exec <ns>` when the instance has a namespace.
    pub fn wrap(&self, program: &Path, args: Vec<String>) -> (PathBuf, Vec<String>) {
        match &self.netns {
            Some(ns) => {
                let mut all = vec!["netns".to_owned(), "exec".to_owned(), ns.clone(), p(program)];
                all.extend(args);
                (PathBuf::from("ip"), all)
            }
            None => (program.to_path_buf(), args),
        }
    }

    pub fn etcd_url(&self) -> String {
        url("http", self.ip, ETCD_CLIENT_PORT)
    }
    pub fn server(&self) -> String {
        url("https", self.ip, APISERVER_PORT)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn url(scheme: &str, ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{scheme}://{v4}:{port}"),
        IpAddr::V6(v6) => format!("{scheme}://[{v6}]:{port}"),
    }
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// etcd: one member, plain HTTP (it listens on this instance's own address only and holds test data),
/// no fsync (test data dies with the test; fsync would dominate start-up on a shared disk).
pub fn etcd(l: &Layout) -> Vec<String> {
    let peer = url("http", l.ip, ETCD_PEER_PORT);
    vec![
        "--name=svcnet-test".into(),
        format!("--data-dir={}", p(&l.path("etcd"))),
        format!("--listen-client-urls={}", l.etcd_url()),
        format!("--advertise-client-urls={}", l.etcd_url()),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=svcnet-test={peer}"),
        "--unsafe-no-fsync".into(),
        "--log-level=warn".into(),
    ]
}

/// kube-apiserver with client-certificate and ServiceAccount-token authentication and Node,RBAC
/// authorization, as kubeadm configures it.
pub fn apiserver(l: &Layout, pki: &Pki, o: &Options) -> Vec<String> {
    // The endpoint reconciler publishes the advertise address in the `kubernetes` Service's
    // EndpointSlice, and validation rejects loopback addresses there: on loopback it is turned off.
    let reconciler = if l.ip.is_loopback() { "none" } else { "lease" };
    vec![
        format!("--etcd-servers={}", l.etcd_url()),
        format!("--bind-address={}", l.ip),
        format!("--advertise-address={}", l.ip),
        format!("--secure-port={APISERVER_PORT}"),
        format!("--cert-dir={}", p(&l.path("apiserver-certs"))),
        format!("--tls-cert-file={}", p(&pki.apiserver.cert)),
        format!("--tls-private-key-file={}", p(&pki.apiserver.key)),
        format!("--client-ca-file={}", p(&pki.ca.cert)),
        format!("--service-account-issuer={SA_ISSUER}"),
        format!("--service-account-key-file={}", p(&pki.sa_pub)),
        format!("--service-account-signing-key-file={}", p(&pki.sa_key)),
        format!("--service-cluster-ip-range={}", o.service_cidr),
        format!("--service-node-port-range={}", o.node_port_range),
        "--authorization-mode=Node,RBAC".into(),
        "--enable-admission-plugins=NodeRestriction".into(),
        "--allow-privileged=true".into(),
        format!("--endpoint-reconciler-type={reconciler}"),
        "--profiling=false".into(),
    ]
}

/// [`CONTROLLERS`], plus [`NODE_LIFECYCLE`] when the options ask for it.
pub fn controllers(o: &Options) -> Vec<&'static str> {
    let mut c = CONTROLLERS.to_vec();
    if o.node_lifecycle {
        c.push(NODE_LIFECYCLE);
    }
    c
}

/// kube-controller-manager as a cloud-provider-external cluster runs it: each controller under its own
/// ServiceAccount (so the bootstrap RBAC roles apply), node IPAM allocating pod CIDRs.
pub fn controller_manager(l: &Layout, pki: &Pki, o: &Options) -> Vec<String> {
    let kubeconfig = p(&l.path("controller-manager.kubeconfig"));
    let mut args = vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        format!("--bind-address={}", l.ip),
        format!("--secure-port={CONTROLLER_MANAGER_PORT}"),
        format!("--cert-dir={}", p(&l.path("controller-manager-certs"))),
        format!("--controllers={}", controllers(o).join(",")),
        "--use-service-account-credentials=true".into(),
        format!("--service-account-private-key-file={}", p(&pki.sa_key)),
        format!("--root-ca-file={}", p(&pki.ca.cert)),
        "--allocate-node-cidrs=true".into(),
        format!("--cluster-cidr={}", o.cluster_cidr),
    ];
    args.extend(node_cidr_mask_sizes(o));
    args.extend([
        format!("--service-cluster-ip-range={}", o.service_cidr),
        "--cloud-provider=external".into(),
        // One instance per cluster: no election to wait for.
        "--leader-elect=false".into(),
        "--profiling=false".into(),
    ]);
    args
}

/// kube-controller-manager refuses `--node-cidr-mask-size` for a dual-stack cluster CIDR and wants
/// one mask per family instead.
fn node_cidr_mask_sizes(o: &Options) -> Vec<String> {
    if o.cluster_cidr.contains(',') {
        vec![
            format!("--node-cidr-mask-size-ipv4={}", o.node_cidr_mask_size),
            format!("--node-cidr-mask-size-ipv6={}", o.node_cidr_mask_size_ipv6),
        ]
    } else {
        vec![format!("--node-cidr-mask-size={}", o.node_cidr_mask_size)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lifecycle_is_added_only_on_request() {
        let off = Options::default();
        assert_eq!(controllers(&off), CONTROLLERS.to_vec());
        let on = Options {
            node_lifecycle: true,
            ..Options::default()
        };
        let c = controllers(&on);
        assert_eq!(c.last(), Some(&NODE_LIFECYCLE));
        assert_eq!(c.len(), CONTROLLERS.len() + 1);
    }

    #[test]
    fn dual_stack_cluster_cidr_gets_a_mask_per_family() {
        let single = Options::default();
        assert_eq!(node_cidr_mask_sizes(&single), vec!["--node-cidr-mask-size=24"]);
        let dual = Options {
            cluster_cidr: "10.64.0.0/14,fd00:10:64::/56".into(),
            ..Options::default()
        };
        assert_eq!(
            node_cidr_mask_sizes(&dual),
            vec!["--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"]
        );
    }
}
