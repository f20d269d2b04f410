//! The local cluster: `svcnet-lab` (network namespaces, the real control plane, the fake GCE, the real
//! proxy and controller, the agent as kubelets). Everything lives in the lab's own uniquely named
//! namespaces; `down` runs on drop, so every path (assertion failures included) removes them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use svcnet_netns::link;

use super::{Cluster, Component, Feature, From, IMAGE, LoadRun, Proxy, wait_for};

pub fn lab_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svcnet-lab"))
}

/// Builds the other binaries into this test's target dir (same profile), next to svcnet-lab. The
/// package set is `make demo`'s (and `make e2e`'s first build), so features unify the same way and
/// this build finds everything fresh instead of rebuilding the binaries with other features.
pub fn build_siblings() {
    // `make e2e` has just built them (same package set, same profile) and says so: even an up-to-date
    // check costs a Cargo run per test process.
    if std::env::var_os("SVCNET_LAB_PREBUILT").is_some() {
        return;
    }
    svcnet_testcluster::siblings::build(&[
        "svcnet-lab",
        "svcnet-fake-gce",
        "svcnet-proxy",
        "svcnet-cloud-controller",
    ])
    .unwrap_or_else(|e| panic!("building the lab's binaries: {e}"));
}

pub struct Lab {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub prefix: String,
    is_down: bool,
}

/// Runs `svcnet-lab --dir DIR args`; stdout, or Err with both outputs.
pub fn run_lab(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(lab_bin())
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "svcnet-lab {args:?} failed:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A helper subcommand of svcnet-lab (`http`, `udp`) run inside `ns`; its stdout on success.
fn in_ns(ns: &str, args: &[&str], stdin: &str) -> Option<String> {
    let bin = lab_bin();
    let mut all = vec![bin.to_str().unwrap()];
    all.extend_from_slice(args);
    let ran = svcnet_netns::exec(ns, &all, Some(stdin)).unwrap();
    ran.success.then_some(ran.stdout)
}

/// One HTTP request from `ns`: (status, body).
fn http_in(ns: &str, method: &str, url: &str, body: Option<&Value>) -> Option<(u16, String)> {
    let ct = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let text = in_ns(
        ns,
        &["http", method, url, "--timeout", "2", "--content-type", ct],
        &body.map(Value::to_string).unwrap_or_default(),
    )?;
    let (code, rest) = text.split_once('\n')?;
    Some((code.parse().ok()?, rest.trim().to_owned()))
}

fn json_in(ns: &str, method: &str, url: &str, body: Option<&Value>) -> Result<Value, String> {
    match http_in(ns, method, url, body) {
        Some((code, text)) if (200..300).contains(&code) => {
            Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Some((code, text)) => Err(format!("{code} {text}")),
        None => Err("no answer".into()),
    }
}

/// The VPC route's family and destination for an LB address: `ADDR/32`, or an IPv6 rule's
/// `ADDR/96` as it is.
fn route_dest(lb_ip: &str) -> (&'static str, String) {
    match (lb_ip.contains(':'), lb_ip.contains('/')) {
        (true, _) => ("-6", lb_ip.to_owned()),
        (false, true) => ("-4", lb_ip.to_owned()),
        (false, false) => ("-4", format!("{lb_ip}/32")),
    }
}

impl Lab {
    /// `svcnet-lab up --nodes N` in a fresh temp dir; None when namespaces are unavailable (SKIPPED).
    pub fn up(nodes: u32) -> Option<Lab> {
        // Only a probe (dropped at once): the lab's own namespaces are made by `svcnet-lab up`.
        svcnet_netns::netns_or_skip("labprobe")?;
        build_siblings();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lab");
        let mut lab = Lab {
            _tmp: tmp,
            dir,
            prefix: String::new(),
            is_down: false,
        };
        let up = run_lab(&lab.dir, &["up", "--nodes", &nodes.to_string()]);
        // Read the prefix even when `up` failed, so the final check can look for leftovers.
        let st = std::fs::read_to_string(lab.dir.join("state.json")).unwrap_or_default();
        let st: Value = serde_json::from_str(&st).unwrap_or(Value::Null);
        lab.prefix = st["prefix"].as_str().unwrap_or_default().to_owned();
        if let Err(e) = up {
            panic!("{e}");
        }
        Some(lab)
    }

    fn vpc(&self) -> String {
        format!("{}-vpc", self.prefix)
    }

    fn ns(&self, from: From<'_>) -> String {
        match from {
            From::Client => format!("{}-client", self.prefix),
            From::Client2 => format!("{}-client2", self.prefix),
            From::Node(name) => format!("{}-{name}", self.prefix),
            From::Vm => format!("{}-vm", self.prefix),
        }
    }

    fn lab(&self, args: &[&str]) -> String {
        run_lab(&self.dir, args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Waits until exactly `n` pods of `app` run on the nodes, none terminating, and the API shows each
    /// as Running with its IP (so the EndpointSlice controller has them as ready endpoints).
    fn wait_running(&self, app: &str, n: usize) {
        let path = format!("/api/v1/namespaces/default/pods?labelSelector=app%3D{app}");
        wait_for(
            &format!("{n} running pods of {app}"),
            Duration::from_secs(60),
            || {
                let made = self.pods(app);
                let api = self.api("GET", &path, None).ok()?;
                let items = api["items"].as_array()?;
                let settled = made.len() == n
                    && items.len() == n
                    && items.iter().all(|p| {
                        p["metadata"]["deletionTimestamp"].is_null()
                            && p["status"]["phase"] == "Running"
                            && made.iter().any(|(name, ip, _)| {
                                p["metadata"]["name"] == name.as_str() && p["status"]["podIP"] == ip.as_str()
                            })
                    });
                settled.then_some(())
            },
        );
    }

    fn proxy_component(node: &str, p: Proxy) -> String {
        match p {
            Proxy::Svcnet => format!("proxy-{node}"),
            Proxy::KubeProxy => format!("kube-proxy-{node}"),
        }
    }

    fn component(c: Component) -> &'static str {
        match c {
            Component::CloudController => "cloud-controller",
            Component::ApiServer => "apiserver",
        }
    }
}

impl Cluster for Lab {
    fn kind(&self) -> &'static str {
        "local"
    }

    fn lacks(&self, f: Feature) -> Option<&'static str> {
        let have_gcloud = || {
            Command::new("gcloud")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        (f == Feature::Gcloud && !have_gcloud()).then_some("gcloud is not installed")
    }

    /// Through the lab's `kubectl proxy` (admin) in the `vpc` namespace.
    fn api(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        json_in(&self.vpc(), method, &format!("http://127.0.0.1:8001{path}"), body)
    }

    fn gce(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        json_in(
            &self.vpc(),
            method,
            &format!("http://10.128.0.1:8085{path}"),
            body,
        )
    }

    /// In the `vpc` namespace, where the fake listens (DESIGN.md, "Real clients against the fake GCE").
    fn gcloud(&self, args: &[&str]) -> Result<String, String> {
        let config = self.dir.join("gcloud-config");
        let token = self.dir.join("gcloud-token");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(&token, "lab-token\n").unwrap();
        let out = svcnet_netns::command(&self.vpc(), &["gcloud"])
            .args(args)
            .env("CLOUDSDK_CONFIG", &config)
            .env("CLOUDSDK_CORE_PROJECT", "svcnet-lab")
            .env(
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
                "http://10.128.0.1:8085/compute/v1/",
            )
            .env("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", &token)
            .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
            .env("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false")
            .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        // A request gcloud could not make is only a warning on stderr.
        if out.status.success() && !stderr.contains("did not succeed") {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(stderr)
        }
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let kubectl = svcnet_testcluster::kubectl_program();
        let out = svcnet_netns::command(&self.vpc(), &[kubectl.to_str().unwrap(), "--kubeconfig"])
            .arg(self.dir.join("kubeconfig"))
            .args(args)
            .env("KUBECACHEDIR", self.dir.join("kubecache"))
            .output()
            .unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn kubectl_as(&self, component: &str, args: &[&str]) -> (bool, String) {
        // The ConfigMap volume the lab wrote for the workload: the file its command line names.
        let kubeconfig = self
            .dir
            .join("config")
            .join(component)
            .join("config/kubeconfig.conf");
        assert!(kubeconfig.exists(), "{} missing", kubeconfig.display());
        let kubectl = svcnet_testcluster::kubectl_program();
        let out = svcnet_netns::command(&self.vpc(), &[kubectl.to_str().unwrap(), "--kubeconfig"])
            .arg(kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.dir.join("kubecache"))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        )
    }

    fn get(&self, from: From<'_>, url: &str) -> Option<String> {
        match http_in(&self.ns(from), "GET", url, None) {
            Some((200, body)) => Some(body),
            _ => None,
        }
    }

    fn udp(&self, from: From<'_>, addr: &str) -> Option<String> {
        in_ns(&self.ns(from), &["udp", addr, "--timeout", "1"], "").map(|s| s.trim().to_owned())
    }

    fn run_pods(&self, app: &str, replicas: usize, port: u16) {
        let (image, port) = (format!("--image={IMAGE}"), format!("--port={port}"));
        let replicas_flag = format!("--replicas={replicas}");
        let args = [
            "create",
            "deployment",
            app,
            image.as_str(),
            port.as_str(),
            &replicas_flag,
        ];
        self.kubectl(&args)
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"));
        self.wait_running(app, replicas);
    }

    fn scale(&self, app: &str, replicas: usize) {
        let n = replicas.to_string();
        self.kubectl(&["scale", "deployment", app, "--replicas", &n])
            .unwrap_or_else(|e| panic!("kubectl scale: {e}"));
        self.wait_running(app, replicas);
    }

    fn pods(&self, app: &str) -> Vec<(String, String, String)> {
        let text = std::fs::read_to_string(self.dir.join("kubelet.json")).unwrap_or_default();
        let running: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let mut pods: Vec<(String, String, String)> = running
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["app"] == app && p["terminating"] != true)
            .map(|p| {
                let s = |k: &str| p[k].as_str().unwrap().to_owned();
                (s("name"), s("ip"), s("node"))
            })
            .collect();
        pods.sort();
        pods
    }

    fn nodes(&self) -> Vec<(String, String)> {
        let st: Value =
            serde_json::from_str(&std::fs::read_to_string(self.dir.join("state.json")).unwrap()).unwrap();
        st["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                (
                    n["name"].as_str().unwrap().to_owned(),
                    n["ip"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    fn add_node(&self) -> String {
        let before: Vec<String> = self.nodes().into_iter().map(|n| n.0).collect();
        self.lab(&["add-node"]);
        self.nodes()
            .into_iter()
            .map(|n| n.0)
            .find(|n| !before.contains(n))
            .unwrap()
    }

    fn remove_node(&self, name: &str) {
        self.lab(&["remove-node", name]);
    }

    fn stop_proxy(&self, node: &str, p: Proxy) {
        self.lab(&["stop", &Self::proxy_component(node, p), "--graceful"]);
    }

    fn start_proxy(&self, node: &str, p: Proxy) {
        let name = Self::proxy_component(node, p);
        let st: Value =
            serde_json::from_str(&std::fs::read_to_string(self.dir.join("state.json")).unwrap()).unwrap();
        if st["procs"].get(&name).is_some() {
            self.lab(&["start", &name]);
        } else {
            self.lab(&["kube-proxy", node]);
        }
    }

    fn proxy_cleanup(&self, node: &str, args: &[&str]) -> String {
        let bin = lab_bin().with_file_name("svcnet-proxy");
        let mut all = vec![bin.to_str().unwrap(), "cleanup"];
        all.extend_from_slice(args);
        let ran = svcnet_netns::exec(&self.ns(From::Node(node)), &all, None).unwrap();
        assert!(
            ran.success,
            "svcnet-proxy cleanup {args:?} failed: {}{}",
            ran.stdout, ran.stderr
        );
        ran.stdout
    }

    fn iptables_save(&self, node: &str, v6: bool) -> String {
        let ns = self.ns(From::Node(node));
        let tool = if v6 { "ip6tables-save" } else { "iptables-save" };
        let ran = svcnet_netns::exec(&ns, &[tool], None).unwrap();
        assert!(ran.success, "iptables-save in {ns} failed");
        ran.stdout
    }

    fn load(&self, from: From<'_>, targets: &[String], long: usize) -> LoadRun {
        use std::io::BufRead;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stop_file = self.dir.join(format!("load-{n}.stop"));
        let (bin, long, stop) = (
            lab_bin(),
            long.to_string(),
            stop_file.to_string_lossy().into_owned(),
        );
        let mut args = vec![
            bin.to_str().unwrap(),
            "load",
            "--long",
            &long,
            "--stop-file",
            &stop,
        ];
        args.extend(targets.iter().map(String::as_str));
        let mut child = svcnet_netns::command(&self.ns(from), &args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        assert_eq!(
            first.trim(),
            "ready",
            "the load generator from {from:?} did not start"
        );
        LoadRun {
            child,
            stdout,
            stop_file,
        }
    }

    fn stop(&self, c: Component) {
        self.lab(&["stop", Self::component(c)]);
    }

    fn start(&self, c: Component) {
        self.lab(&["start", Self::component(c)]);
    }

    fn log(&self, component: &str) -> String {
        std::fs::read_to_string(self.dir.join("logs").join(format!("{component}.log"))).unwrap_or_default()
    }

    fn compact_etcd(&self) -> i64 {
        self.lab(&["compact-etcd"]).trim().parse().unwrap()
    }

    fn lb_route(&self, lb_ip: &str) -> String {
        let (family, dest) = route_dest(lb_ip);
        link::ip(&self.vpc(), &[family, "route", "show", &dest]).unwrap_or_default()
    }

    fn lb_backends(&self, lb_ip: &str) -> Vec<String> {
        // An `ip` that fails (the router's namespace gone) reads as no backends.
        let text = self.lb_route(lb_ip);
        let words: Vec<&str> = text.split_whitespace().collect();
        words
            .windows(2)
            .filter(|w| w[0] == "via")
            .map(|w| w[1].to_owned())
            .collect()
    }

    fn client_ips(&self) -> (String, String) {
        ("192.0.2.10".into(), "198.18.0.10".into())
    }

    fn diagnose(&self) {
        // Inherited stdio: the diagnostics go straight to the test's output.
        let _ = Command::new(lab_bin())
            .arg("--dir")
            .arg(&self.dir)
            .arg("diagnose")
            .env("RUST_BACKTRACE", "0")
            .status();
    }

    fn down(&mut self) {
        self.is_down = true;
        self.lab(&["down"]);
        let left: Vec<String> = svcnet_netns::list()
            .into_iter()
            .filter(|n| !self.prefix.is_empty() && n.starts_with(&self.prefix))
            .collect();
        assert!(left.is_empty(), "namespaces left behind: {left:?}");
        assert!(!self.dir.exists(), "lab dir left behind");
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.is_down {
            return;
        }
        if let Err(e) = run_lab(&self.dir, &["down"]) {
            eprintln!("{e}");
        }
    }
}
