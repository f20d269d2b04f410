//! The container images, built the way `make images` builds them on a machine without a registry
//! (testing/engine/images.sh, local way) and run in the project's own Docker engine
//! (testing/engine/dockerd.sh): both binaries start in their images, the images hold what they run,
//! the proxy image programs a throwaway namespace's rules through the backend that namespace already
//! uses (nft, then legacy), against the real kube-apiserver, and the controller image runs as 65532
//! against the fake GCE. The engine never adds bridges or rules to the root namespace.
//!
//! The images carry the debug binaries `cargo test` has built already (a release build would add
//! minutes); `make images` puts release ones in. Needs root (SKIPPED outside CI otherwise).

use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use svcnet_images::Engine;
use svcnet_testcluster::{Cluster, Component, Options, announce};

const PREFIX: &str = "svcnet-imagetest";
const TAG: &str = "test";
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn image(name: &str) -> String {
    format!("{PREFIX}/{name}:{TAG}")
}

/// One engine and one build for the tests of this process that run at the same time (the engine's
/// data root serves one engine at a time); stopped when the last of them ends.
struct Shared {
    engine: Engine,
    built: String,
    bins: PathBuf,
}

fn shared() -> Option<Arc<Shared>> {
    static CELL: Mutex<Weak<Shared>> = Mutex::new(Weak::new());
    let mut cell = CELL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = cell.upgrade() {
        return Some(s);
    }
    // Root check: a namespace must be possible (SKIPPED outside CI, a failure under CI).
    drop(svcnet_netns::netns_or_skip("img-probe")?);
    svcnet_netns::sweep_dead();
    svcnet_images::sweep().expect("sweep engines of dead owners");
    let bins =
        svcnet_testcluster::siblings::build(&["svcnet-proxy", "svcnet-cloud-controller", "svcnet-fake-gce"])
            .expect("building the binaries");
    let t0 = Instant::now();
    let engine = Engine::start().expect("starting the engine (testing/engine/dockerd.sh)");
    eprintln!("engine {} up in {:.1?}", engine.name(), t0.elapsed());
    let t0 = Instant::now();
    let built = engine
        .build_images(&bins, PREFIX, TAG)
        .expect("building the images (testing/engine/images.sh)");
    eprintln!("images built in {:.1?}:\n{built}", t0.elapsed());
    let s = Arc::new(Shared { engine, built, bins });
    *cell = Arc::downgrade(&s);
    Some(s)
}

/// A container removed (`docker rm -f`) on drop; its log printed when a test fails.
struct Container {
    id: String,
    shared: Arc<Shared>,
}

impl Container {
    fn run(shared: &Arc<Shared>, args: &[&str]) -> Container {
        let mut all = vec!["run", "-d"];
        all.extend_from_slice(args);
        let id = shared
            .engine
            .docker_ok(&all)
            .expect("docker run")
            .trim()
            .to_owned();
        Container {
            id,
            shared: shared.clone(),
        }
    }

    fn inspect(&self, format: &str) -> String {
        self.shared
            .engine
            .docker_ok(&["inspect", "-f", format, &self.id])
            .expect("docker inspect")
            .trim()
            .to_owned()
    }

    fn running(&self) -> bool {
        self.inspect("{{.State.Running}}") == "true"
    }

    fn logs(&self) -> String {
        let out = self
            .shared
            .engine
            .docker(&["logs", &self.id])
            .output()
            .expect("docker logs");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("---- container {} ----\n{}", self.id, self.logs());
        }
        let _ = self.shared.engine.docker_ok(&["rm", "-f", &self.id]);
    }
}

/// A throwaway network namespace made by the engine (a container of the proxy image sleeping with
/// `--network none`) and named `svcnet-t-<tag>-<pid>-<n>` by `ip netns attach`, so that processes
/// outside the engine (the control plane, the fake GCE) run in it like in any test namespace and a
/// dead-pid sweep finds it; other containers join it with `--network container:<id>`. On drop the
/// container is removed and the name deleted.
struct NodeNs {
    name: String,
    holder: Container,
}

impl NodeNs {
    fn new(shared: &Arc<Shared>, tag: &str) -> NodeNs {
        static N: AtomicU64 = AtomicU64::new(0);
        let holder = Container::run(
            shared,
            &[
                "--network",
                "none",
                "--entrypoint",
                "sleep",
                &image("svcnet-proxy"),
                "infinity",
            ],
        );
        let pid = holder.inspect("{{.State.Pid}}");
        let name = format!(
            "{}{tag}-{}-{}",
            svcnet_netns::PREFIX,
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        svcnet_netns::run(&["ip", "netns", "attach", &name, &pid], None)
            .and_then(|r| r.stdout_if_ok())
            .expect("ip netns attach");
        let ns = NodeNs { name, holder };
        ns.ok(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    fn ok(&self, args: &[&str]) -> String {
        svcnet_netns::exec(&self.name, args, None)
            .and_then(|r| r.stdout_if_ok())
            .unwrap_or_else(|e| panic!("in {}: {args:?}: {e}", self.name))
    }

    fn network(&self) -> String {
        format!("container:{}", self.holder.id)
    }
}

impl Drop for NodeNs {
    fn drop(&mut self) {
        let _ = self
            .holder
            .shared
            .engine
            .docker_ok(&["rm", "-f", &self.holder.id]);
        svcnet_netns::delete(&self.name);
    }
}

/// A child process killed and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    svcnet_testcluster::wait::wait_for(what, Duration::from_secs(secs), Duration::from_millis(250), f)
}

/// The kubeconfig of `component` copied where any user in a container can read it (the controller
/// runs as 65532): returns the directory to mount.
fn readable_kubeconfig(cluster: &Cluster, component: Component) -> tempfile_dir::Dir {
    use std::os::unix::fs::PermissionsExt;
    let src = cluster
        .component_kubeconfig(component)
        .expect("component kubeconfig");
    let dir = tempfile_dir::Dir::create();
    let dst = dir.path.join("kubeconfig");
    std::fs::copy(&src, &dst).expect("copy kubeconfig");
    std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    dir
}

/// A directory removed on drop (the kubeconfig copies), without a dependency for it.
mod tempfile_dir {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub struct Dir {
        pub path: PathBuf,
    }

    impl Dir {
        pub fn create() -> Dir {
            static N: AtomicU64 = AtomicU64::new(0);
            let path = std::env::temp_dir().join(format!(
                "svcnet-imagetest-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).expect("temp dir");
            Dir { path }
        }

        pub fn mount(&self) -> String {
            format!("{}:/etc/svcnet:ro", self.path.display())
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[test]
fn both_images_start_and_hold_what_they_run() {
    let Some(s) = shared() else { return };
    let docker = |args: &[&str]| s.engine.docker_ok(args).expect("docker");
    // make images' script names both images with a size.
    for name in ["svcnet-proxy", "svcnet-cloud-controller"] {
        let line = s
            .built
            .lines()
            .find(|l| l.starts_with(&format!("{} ", image(name))))
            .unwrap_or_else(|| panic!("{name} not reported:\n{}", s.built));
        assert!(line.ends_with(" MB"), "{line}");
    }

    let v = docker(&["run", "--rm", &image("svcnet-proxy"), "--version"]);
    assert_eq!(v.trim(), format!("svcnet-proxy {VERSION}"));
    let v = docker(&["run", "--rm", &image("svcnet-cloud-controller"), "--version"]);
    assert_eq!(v.trim(), format!("svcnet-cloud-controller {VERSION}"));

    // The proxy image: both iptables backends and every tool the proxy (or an operator) runs.
    let tools = "iptables-nft-restore iptables-nft-save iptables-legacy-restore iptables-legacy-save \
                 ip6tables-nft-restore ip6tables-legacy-restore nft conntrack nfacct ip modprobe";
    let missing = docker(&[
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        &image("svcnet-proxy"),
        "-c",
        &format!("for t in {tools}; do command -v $t >/dev/null || echo $t; done"),
    ]);
    assert_eq!(missing.trim(), "", "missing from the proxy image");

    // The controller image: user 65532 by default, CA certificates, no tools it does not run.
    let img = image("svcnet-cloud-controller");
    assert_eq!(
        docker(&["image", "inspect", "-f", "{{.Config.User}}", &img]).trim(),
        "65532:65532"
    );
    let id = docker(&["run", "--rm", "--entrypoint", "id", &img, "-u"]);
    assert_eq!(id.trim(), "65532");
    docker(&[
        "run",
        "--rm",
        "--entrypoint",
        "test",
        &img,
        "-s",
        "/etc/ssl/certs/ca-certificates.crt",
    ]);
    for img in [image("svcnet-proxy"), image("svcnet-cloud-controller")] {
        let extra = docker(&[
            "run",
            "--rm",
            "--user",
            "0",
            "--entrypoint",
            "sh",
            &img,
            "-c",
            "ls /var/lib/apt/lists; for t in iptables cargo rustc gcc cc; do command -v $t || true; done",
        ]);
        let extra: Vec<&str> = extra
            .lines()
            .filter(|l| *l != "lock" && *l != "partial")
            .collect();
        let expected: &[&str] = if img.contains("svcnet-proxy") {
            &["/usr/sbin/iptables"]
        } else {
            &[]
        };
        assert_eq!(extra, expected, "{img}: apt lists or build tools left in");
        let labels = docker(&["image", "inspect", "-f", "{{json .Config.Labels}}", &img]);
        let labels: serde_json::Value = serde_json::from_str(&labels).expect("labels");
        assert_eq!(
            labels["org.opencontainers.image.licenses"], "Apache-2.0",
            "{labels}"
        );
        assert_eq!(labels["org.opencontainers.image.version"], VERSION, "{labels}");
    }
}

#[test]
fn the_engine_adds_nothing_to_the_root_namespace() {
    let Some(s) = shared() else { return };
    // A container on the engine's default network, running while we look.
    let c = Container::run(&s, &["--entrypoint", "sleep", &image("svcnet-proxy"), "60"]);
    assert!(c.running(), "{}", c.logs());
    let pid = s.engine.dockerd_pid().expect("dockerd pid");
    let ns_of = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/net")).expect("ns link");
    assert_ne!(
        ns_of(&pid.to_string()),
        ns_of("self"),
        "dockerd runs in the root namespace"
    );
    let root = |args: &[&str]| {
        svcnet_netns::run(args, None)
            .and_then(|r| r.stdout_if_ok())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let links = root(&["ip", "-o", "link", "show"]);
    for bad in ["docker0", "br-", "veth"] {
        assert!(!links.contains(bad), "{bad} in the root namespace:\n{links}");
    }
    // Reading only: nothing is ever written to the root namespace's tables.
    let rules = root(&["iptables-save"]);
    assert!(!rules.to_ascii_uppercase().contains("DOCKER"), "{rules}");
    let tables = root(&["nft", "list", "tables"]);
    assert!(!tables.contains("docker"), "{tables}");
}

/// An engine whose owner died (a test or make killed by SIGKILL never stops it) is stopped by the next
/// sweep: dockerd and its containers gone, namespace, cgroups and state deleted.
#[test]
fn an_engine_whose_owner_died_is_swept() {
    // The shared build leaves the controller's base as a tarball in the cache: a small image to run.
    let Some(_s) = shared() else { return };
    let cache = std::env::var("SVCNET_BASE_CACHE").unwrap_or_else(|_| "/var/cache/svcnet/base".into());
    let base = std::fs::read_dir(&cache)
        .expect("base cache")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("controller-") && name.ends_with(".tar")
        })
        .expect("the controller base tarball");
    let owner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("spawn the owner");
    let mut owner = Proc(owner);
    // A data root of its own: the machine's cache is locked by the other tests' engine.
    let data = tempfile_dir::Dir::create();
    let engine = Engine::start_with(owner.0.id(), Some(&data.path)).expect("start an engine");
    let dockerd = engine.dockerd_pid().expect("dockerd pid");
    let base = base.to_str().expect("utf-8 path");
    engine
        .docker_ok(&["import", base, "swept:t"])
        .expect("docker import");
    let id = engine
        .docker_ok(&["run", "-d", "--network", "none", "swept:t", "sleep", "600"])
        .expect("docker run");
    let sleeper = engine
        .docker_ok(&["inspect", "-f", "{{.State.Pid}}", id.trim()])
        .expect("docker inspect");
    let alive = |pid: &str| std::path::Path::new(&format!("/proc/{}", pid.trim())).exists();
    assert!(svcnet_netns::list().iter().any(|n| n == engine.name()));
    // Not swept while its owner lives.
    svcnet_images::sweep().expect("sweep");
    assert!(alive(&dockerd.to_string()) && alive(&sleeper));
    let _ = owner.0.kill();
    let _ = owner.0.wait();
    let out = svcnet_images::sweep().expect("sweep");
    for (what, pid) in [("dockerd", dockerd.to_string()), ("the container", sleeper)] {
        assert!(!alive(&pid), "{what} ({}) survived the sweep: {out}", pid.trim());
    }
    assert!(!svcnet_netns::list().iter().any(|n| n == engine.name()));
    let cgroups = std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|d| d.path().join(engine.name()).exists())
        .count();
    assert_eq!(cgroups, 0, "cgroups of {} left", engine.name());
    let socket = engine.host().trim_start_matches("unix://").to_owned();
    assert!(!std::path::Path::new(&socket).exists(), "{socket} left");
}

/// The proxy image, privileged on a throwaway namespace whose rules are in `backend` (a hint chain
/// made there first, as kubelet makes it), against a real kube-apiserver in that namespace: the
/// Service reaches that backend's tables and not the other's, chosen by `--iptables-backend auto`.
fn proxy_programs_the_backend_in_use(backend: &str) {
    let other = if backend == "nft" { "legacy" } else { "nft" };
    let Some(s) = shared() else { return };
    let ns = NodeNs::new(&s, &format!("imgpx-{backend}"));
    ns.ok(&[
        &format!("iptables-{backend}"),
        "-t",
        "mangle",
        "-N",
        "KUBE-IPTABLES-HINT",
    ]);
    let cluster = Cluster::start_with(Options {
        netns: Some(ns.name.clone()),
        controller_manager: false,
        ..Options::default()
    })
    .expect("control plane in the node namespace");
    let kc = readable_kubeconfig(&cluster, Component::Proxy);
    cluster
        .apply(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\nspec: {podCIDR: 10.244.1.0/24}\n---\n\
             apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\n\
             spec: {ports: [{port: 80, targetPort: 8080, protocol: TCP}]}\n---\n\
             apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {name: web-1, namespace: default, labels: {kubernetes.io/service-name: web, \
             endpointslice.kubernetes.io/managed-by: svcnet-test}}\naddressType: IPv4\n\
             ports: [{port: 8080, protocol: TCP}]\n\
             endpoints: [{addresses: [10.244.1.10], conditions: {ready: true}, nodeName: node-a}]\n",
        )
        .expect("apply");
    let proxy = Container::run(
        &s,
        &[
            "--privileged",
            "--network",
            &ns.network(),
            "-v",
            &kc.mount(),
            &image("svcnet-proxy"),
            "run",
            "--kubeconfig",
            "/etc/svcnet/kubeconfig",
            "--hostname-override",
            "node-a",
            "--cluster-cidr",
            "10.244.0.0/16",
        ],
    );
    let save = |b: &str| ns.ok(&[&format!("iptables-{b}-save")]);
    wait_for(&format!("default/web in iptables-{backend}"), 60, || {
        assert!(proxy.running(), "the proxy exited:\n{}", proxy.logs());
        save(backend).contains("default/web").then_some(())
    });
    let rules = save(backend);
    assert!(rules.contains(":KUBE-SERVICES"), "{rules}");
    assert!(rules.contains("10.244.1.10:8080"), "{rules}");
    let others = save(other);
    assert!(
        !others.contains("KUBE-SERVICES"),
        "rules also written with iptables-{other}:\n{others}"
    );
    let logs = proxy.logs();
    let detected = logs
        .lines()
        .find(|l| l.contains("iptables detected"))
        .unwrap_or_default();
    let want = if backend == "nft" { "Nft" } else { "Legacy" };
    assert!(detected.contains(want), "{detected}\n{logs}");
    drop(proxy);
    drop(cluster);
}

#[test]
fn proxy_image_programs_a_namespace_using_iptables_nft() {
    proxy_programs_the_backend_in_use("nft");
}

#[test]
fn proxy_image_programs_a_namespace_using_iptables_legacy() {
    proxy_programs_the_backend_in_use("legacy");
}

#[test]
fn controller_image_runs_as_65532_against_the_fake_gce() {
    let Some(s) = shared() else { return };
    let ns = NodeNs::new(&s, "imgcc");
    let fake = s.bins.join("svcnet-fake-gce");
    let fake = fake.to_str().expect("utf-8 path");
    let (child, addr) = announce::spawn(
        &mut svcnet_netns::command(
            &ns.name,
            &[
                fake,
                "--listen",
                "127.0.0.1:0",
                "--project",
                "img-project",
                "--region",
                "us-central1",
                "--zones",
                "us-central1-b",
            ],
        ),
        announce::FAKE_GCE,
    )
    .expect("fake GCE in the node namespace");
    let _fake = Proc(child);
    // The instance behind the Node, made through the fake's admin API from inside the namespace.
    ns.ok(&[
        "curl",
        "-sSf",
        "-X",
        "POST",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"name": "node-a", "zone": "us-central1-b", "tags": ["img-node"], "machineType": "e2-medium"}"#,
        &format!("http://{addr}/_fake/instances"),
    ]);
    let cluster = Cluster::start_with(Options {
        netns: Some(ns.name.clone()),
        controller_manager: false,
        ..Options::default()
    })
    .expect("control plane in the node namespace");
    let kc = readable_kubeconfig(&cluster, Component::CloudController);
    cluster
        .apply(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\nspec:\n  taints:\n  \
             - {key: node.cloudprovider.kubernetes.io/uninitialized, value: 'true', effect: NoSchedule}\n",
        )
        .expect("apply node");
    let endpoint = format!("http://{addr}");
    let controller = Container::run(
        &s,
        &[
            "--network",
            &ns.network(),
            "-v",
            &kc.mount(),
            &image("svcnet-cloud-controller"),
            "--kubeconfig",
            "/etc/svcnet/kubeconfig",
            "--project",
            "img-project",
            "--region",
            "us-central1",
            "--zones",
            "us-central1-b",
            "--network",
            "default",
            "--cluster-name",
            "imgtest",
            "--node-tags",
            "img-node",
            "--gce-endpoint",
            &endpoint,
            "--controllers",
            "node",
        ],
    );
    let provider = wait_for("the node initialised by the controller", 60, || {
        assert!(
            controller.running(),
            "the controller exited:\n{}",
            controller.logs()
        );
        let id = cluster
            .kubectl_ok(&["get", "node", "node-a", "-o", "jsonpath={.spec.providerID}"])
            .expect("kubectl get node");
        (!id.trim().is_empty()).then(|| id.trim().to_owned())
    });
    assert_eq!(provider, "gce://img-project/us-central1-b/node-a");
    // The process itself, seen from the host: user and group 65532.
    let pid = controller.inspect("{{.State.Pid}}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    for key in ["Uid:", "Gid:"] {
        let ids: Vec<&str> = status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(ids, ["65532"; 4], "{key} of the controller");
    }
    drop(controller);
    drop(cluster);
}
