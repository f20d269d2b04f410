//! E2E_CLUSTER=kind: the same scenario on a kind cluster (kube-proxy disabled, kubelets with
//! `--cloud-provider=external`), the svcnet images loaded with `kind load docker-image`, the lab overlay
//! applied with kind's addresses, and svcnet-fake-gce on the host (on the kind network's gateway).
//!
//! NOT RUN on the development machines (no Docker engine, no kind): written to the same [`Cluster`]
//! contract, never exercised. Without `kind` or a reachable Docker engine it fails loudly (never a pass).
//! kind has no GCE network: a small "VPC" lives in the two client containers, which route each LB IP to
//! the nodes of its target pool (read from the fake). GCE firewall rules, health-checked LB routing and
//! node add/remove are not emulated there: those steps print SKIPPED.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::lab::lab_bin;
use super::{Cluster, Component, Feature, From};

const CLIENT_IMAGE: &str = "nicolaka/netshoot:v0.13";
const POD_IMAGE: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";

pub struct Kind {
    name: String,
    repo: PathBuf,
    gce_url: String,
    api_url: String,
    children: Vec<Child>,
    clients: [String; 2],
    is_down: bool,
}

fn sh(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

fn must(cmd: &mut Command) -> String {
    sh(cmd).unwrap_or_else(|e| panic!("{e}"))
}

fn cmd(prog: &str, args: &[&str]) -> Command {
    let mut c = Command::new(prog);
    c.args(args);
    c
}

/// Starts a child and returns the first stdout line containing `needle` (the server's address).
fn spawn_until(mut c: Command, needle: &str) -> (Child, String) {
    let mut child = c
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let out = child.stdout.take().unwrap();
    let line = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{c:?} never printed {needle:?}"));
    (child, line)
}

impl Kind {
    pub fn create() -> Kind {
        let missing: Vec<&str> = [
            ("kind", cmd("kind", &["version"])),
            ("docker engine", cmd("docker", &["info"])),
        ]
        .into_iter()
        .filter_map(|(what, mut c)| sh(&mut c).is_err().then_some(what))
        .collect();
        assert!(
            missing.is_empty(),
            "E2E_CLUSTER=kind needs kind and a running Docker engine; missing: {missing:?}. \
             This is a failure, not a skip: unset E2E_CLUSTER to run the local lab instead."
        );
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let name = format!("svcnet-e2e-{:x}", std::process::id());
        let mut k = Kind {
            name: name.clone(),
            repo: repo.clone(),
            gce_url: String::new(),
            api_url: String::new(),
            children: Vec::new(),
            clients: [format!("{name}-client"), format!("{name}-client2")],
            is_down: false,
        };
        let kubeadm = |kind: &str| {
            format!(
                "  kubeadmConfigPatches:\n  - |\n    kind: {kind}\n    nodeRegistration:\n      kubeletExtraArgs:\n        cloud-provider: external\n"
            )
        };
        let config = format!(
            "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  kubeProxyMode: none\n  podSubnet: 10.64.0.0/14\nnodes:\n- role: control-plane\n{}- role: worker\n{}- role: worker\n{}",
            kubeadm("InitConfiguration"),
            kubeadm("JoinConfiguration"),
            kubeadm("JoinConfiguration")
        );
        let cfg = std::env::temp_dir().join(format!("{name}.yaml"));
        std::fs::write(&cfg, config).unwrap();
        must(
            cmd(
                "kind",
                &["create", "cluster", "--name", &name, "--wait", "180s", "--config"],
            )
            .arg(&cfg),
        );
        must(cmd("make", &["-C"]).arg(&repo).arg("images"));
        must(&mut cmd(
            "kind",
            &[
                "load",
                "docker-image",
                "svcnet/svcnet-proxy:dev",
                "svcnet/svcnet-cloud-controller:dev",
                "--name",
                &name,
            ],
        ));
        // The fake GCE on the kind network's gateway, so the controller's pods reach it.
        let gw = must(&mut cmd(
            "docker",
            &[
                "network",
                "inspect",
                "kind",
                "-f",
                "{{(index .IPAM.Config 0).Gateway}}",
            ],
        ))
        .trim()
        .to_owned();
        let fake = lab_bin().with_file_name("svcnet-fake-gce");
        let mut c = Command::new(fake);
        c.args([
            "--listen",
            &format!("{gw}:0"),
            "--project",
            "svcnet-lab",
            "--region",
            "us-central1",
            "--zones",
            "us-central1-b",
            "--external-range",
            "203.0.113.0/24",
        ]);
        let (child, line) = spawn_until(c, "listening on");
        k.children.push(child);
        k.gce_url = format!("http://{}", line.rsplit(' ').next().unwrap());
        let (child, line) = spawn_until(
            cmd("kubectl", &["--context", &k.context(), "proxy", "--port=0"]),
            "Starting to serve on",
        );
        k.children.push(child);
        k.api_url = format!("http://{}", line.rsplit(' ').next().unwrap());
        // Every node container is an "instance" (the control plane too, so it gets initialised).
        let all = must(&mut cmd("kind", &["get", "nodes", "--name", &name]));
        for node in all.split_whitespace() {
            let ip = must(&mut cmd(
                "docker",
                &[
                    "inspect",
                    "-f",
                    "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                    node,
                ],
            ))
            .trim()
            .to_owned();
            k.gce(
                "POST",
                "/_fake/instances",
                Some(&json!({"name": node, "zone": "us-central1-b", "networkIP": ip,
                    "tags": ["svcnet-lab-node"], "status": "RUNNING"})),
            )
            .unwrap();
        }
        k.apply_overlay();
        for c in &k.clients {
            must(&mut cmd(
                "docker",
                &[
                    "run",
                    "-d",
                    "--name",
                    c,
                    "--network",
                    "kind",
                    "--cap-add",
                    "NET_ADMIN",
                    CLIENT_IMAGE,
                    "sleep",
                    "infinity",
                ],
            ));
        }
        k
    }

    fn context(&self) -> String {
        format!("kind-{}", self.name)
    }

    /// The lab overlay with kind's addresses: the fake GCE endpoint, and the in-cluster kubeconfig
    /// (service-account token, as kubeadm's kube-proxy uses) instead of the lab's plain-HTTP one.
    fn apply_overlay(&self) {
        let rendered = must(cmd("kubectl", &["kustomize"]).arg(self.repo.join("manifests/overlays/lab")));
        let in_cluster = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kind\n  cluster:\n    server: https://{}-control-plane:6443\n    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\ncontexts:\n- name: kind\n  context: {{cluster: kind, user: sa}}\ncurrent-context: kind\nusers:\n- name: sa\n  user:\n    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n",
            self.name
        );
        let text = rendered.replace("http://10.128.0.1:8085", &self.gce_url);
        let mut items = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let mut v: Value = serde::Deserialize::deserialize(doc).unwrap();
            if v["kind"] == "ConfigMap" && v["data"]["kubeconfig.conf"].is_string() {
                v["data"]["kubeconfig.conf"] = json!(in_cluster);
            }
            items.push(v);
        }
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        let mut child = Command::new("kubectl")
            .args(["--context", &self.context(), "apply", "-f", "-"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(list.to_string().as_bytes())
            .unwrap();
        assert!(
            child.wait().unwrap().success(),
            "kubectl apply of the lab overlay failed"
        );
        for w in ["daemonset/svcnet-proxy", "deployment/svcnet-cloud-controller"] {
            must(&mut cmd(
                "kubectl",
                &[
                    "--context",
                    &self.context(),
                    "-n",
                    "kube-system",
                    "rollout",
                    "status",
                    w,
                    "--timeout=180s",
                ],
            ));
        }
    }

    fn http(&self, method: &str, url: &str, body: Option<&Value>) -> Result<Value, String> {
        let ct = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        let mut child = Command::new(lab_bin())
            .args(["http", method, url, "--content-type", ct])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(body.map(Value::to_string).unwrap_or_default().as_bytes());
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (code, rest) = text.split_once('\n').ok_or("no answer")?;
        match code.parse::<u16>() {
            Ok(c) if (200..300).contains(&c) => Ok(serde_json::from_str(rest).unwrap_or(Value::Null)),
            _ => Err(text),
        }
    }

    fn container(&self, from: From<'_>) -> String {
        match from {
            From::Client => self.clients[0].clone(),
            From::Client2 => self.clients[1].clone(),
            From::Node(n) => n.to_owned(),
        }
    }

    /// The client containers' "VPC": each LB IP routed to its target pool's instances.
    fn sync_lb_routes(&self) {
        let Ok(state) = self.gce("GET", "/_fake/state", None) else {
            return;
        };
        let ips: std::collections::BTreeMap<String, String> = state["instances"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                (
                    i["name"].as_str().unwrap_or_default().to_owned(),
                    i["networkInterfaces"][0]["networkIP"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect();
        for fr in state["forwardingRules"].as_array().into_iter().flatten() {
            let pool = fr["target"]
                .as_str()
                .unwrap_or_default()
                .rsplit('/')
                .next()
                .unwrap_or_default();
            let Some(p) = state["targetPools"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == pool)
            else {
                continue;
            };
            let mut args = vec![
                "route".to_string(),
                "replace".into(),
                format!("{}/32", fr["IPAddress"].as_str().unwrap_or_default()),
            ];
            for i in p["instances"].as_array().into_iter().flatten() {
                if let Some(ip) = i
                    .as_str()
                    .and_then(|u| ips.get(u.rsplit('/').next().unwrap_or_default()))
                {
                    args.extend(["nexthop".into(), "via".into(), ip.clone()]);
                }
            }
            for c in &self.clients {
                let _ = sh(cmd("docker", &["exec", c, "ip"]).args(&args));
            }
        }
    }
}

impl Cluster for Kind {
    fn kind(&self) -> &'static str {
        "kind"
    }

    fn lacks(&self, f: Feature) -> Option<&'static str> {
        Some(match f {
            Feature::GceFirewall => "no VPC firewall in front of kind nodes",
            Feature::HealthCheckedLb => "the client containers route LB IPs to every pool member, unprobed",
            Feature::NodeLifecycle => "kind cannot add nodes to a running cluster",
        })
    }

    fn api(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        self.http(method, &format!("{}{path}", self.api_url), body)
    }

    fn gce(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        self.http(method, &format!("{}{path}", self.gce_url), body)
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        sh(cmd("kubectl", &["--context", &self.context()]).args(args))
    }

    fn get(&self, from: From<'_>, url: &str) -> Option<String> {
        self.sync_lb_routes();
        sh(&mut cmd(
            "docker",
            &["exec", &self.container(from), "curl", "-sf", "-m", "2", url],
        ))
        .ok()
        .map(|s| s.trim().to_owned())
    }

    fn udp(&self, from: From<'_>, addr: &str) -> Option<String> {
        self.sync_lb_routes();
        let (host, port) = addr.rsplit_once(':')?;
        let script = format!("exec 3<>/dev/udp/{host}/{port}; echo x >&3; timeout 1 head -1 <&3");
        sh(&mut cmd(
            "docker",
            &["exec", &self.container(from), "bash", "-c", &script],
        ))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
    }

    fn run_pods(&self, app: &str, replicas: usize, port: u16) {
        let p = port.to_string();
        let r = replicas.to_string();
        self.kubectl(&[
            "create",
            "deployment",
            app,
            "--image",
            POD_IMAGE,
            "--replicas",
            &r,
            "--port",
            &p,
            "--",
            "/agnhost",
            "serve-hostname",
            "--http=true",
            "--udp=true",
            "--port",
            &p,
        ])
        .unwrap();
        self.kubectl(&[
            "rollout",
            "status",
            &format!("deployment/{app}"),
            "--timeout=120s",
        ])
        .unwrap();
    }

    fn scale(&self, app: &str, replicas: usize) {
        self.kubectl(&[
            "scale",
            &format!("deployment/{app}"),
            &format!("--replicas={replicas}"),
        ])
        .unwrap();
        self.kubectl(&[
            "rollout",
            "status",
            &format!("deployment/{app}"),
            "--timeout=120s",
        ])
        .unwrap();
    }

    fn pods(&self, app: &str) -> Vec<(String, String, String)> {
        let out = self
            .kubectl(&["get", "pods", "-l", &format!("app={app}"), "-o", "json"])
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let mut pods: Vec<(String, String, String)> = v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| {
                let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                (
                    s(&p["metadata"]["name"]),
                    s(&p["status"]["podIP"]),
                    s(&p["spec"]["nodeName"]),
                )
            })
            .collect();
        pods.sort();
        pods
    }

    /// The nodes that serve load balancers: kubeadm labels the control plane
    /// `node.kubernetes.io/exclude-from-external-load-balancers`, so it is in no target pool.
    fn nodes(&self) -> Vec<(String, String)> {
        let v: Value = serde_json::from_str(&self.kubectl(&["get", "nodes", "-o", "json"]).unwrap()).unwrap();
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| {
                n["metadata"]["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"].is_null()
            })
            .map(|n| {
                let ip = n["status"]["addresses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|a| a["type"] == "InternalIP")
                    .and_then(|a| a["address"].as_str())
                    .unwrap_or_default();
                (
                    n["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
                    ip.to_owned(),
                )
            })
            .collect()
    }

    fn add_node(&self) -> String {
        panic!("{}", self.lacks(Feature::NodeLifecycle).unwrap_or_default())
    }

    fn remove_node(&self, _: &str) {
        panic!("{}", self.lacks(Feature::NodeLifecycle).unwrap_or_default())
    }

    fn stop(&self, c: Component) {
        let cp = format!("{}-control-plane", self.name);
        match c {
            Component::CloudController => {
                self.kubectl(&[
                    "-n",
                    "kube-system",
                    "delete",
                    "pod",
                    "-l",
                    "app.kubernetes.io/name=svcnet-cloud-controller",
                    "--grace-period=0",
                    "--force",
                ])
                .unwrap();
            }
            // The kubelet restarts the static pod.
            Component::ApiServer => {
                must(&mut cmd(
                    "docker",
                    &[
                        "exec",
                        &cp,
                        "sh",
                        "-c",
                        "crictl stop $(crictl ps -q --name kube-apiserver)",
                    ],
                ));
            }
        }
    }

    fn start(&self, c: Component) {
        for _ in 0..120 {
            let ok = match c {
                Component::CloudController => self
                    .kubectl(&[
                        "-n",
                        "kube-system",
                        "rollout",
                        "status",
                        "deployment/svcnet-cloud-controller",
                        "--timeout=5s",
                    ])
                    .is_ok(),
                Component::ApiServer => self.kubectl(&["get", "--raw", "/readyz"]).is_ok(),
            };
            if ok {
                return;
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        panic!("{c:?} did not come back");
    }

    fn lb_backends(&self, lb_ip: &str) -> Vec<String> {
        self.sync_lb_routes();
        let out = sh(&mut cmd(
            "docker",
            &[
                "exec",
                &self.clients[0],
                "ip",
                "route",
                "show",
                &format!("{lb_ip}/32"),
            ],
        ))
        .unwrap_or_default();
        let words: Vec<&str> = out.split_whitespace().collect();
        words
            .windows(2)
            .filter(|w| w[0] == "via")
            .map(|w| w[1].to_owned())
            .collect()
    }

    fn client_ips(&self) -> (String, String) {
        let ip = |c: &str| {
            must(&mut cmd(
                "docker",
                &[
                    "inspect",
                    "-f",
                    "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                    c,
                ],
            ))
            .trim()
            .to_owned()
        };
        (ip(&self.clients[0]), ip(&self.clients[1]))
    }

    fn diagnose(&self) {
        for (node, _) in self.nodes() {
            eprintln!(
                "---- iptables-save on {node} ----\n{}",
                sh(&mut cmd("docker", &["exec", &node, "iptables-save"])).unwrap_or_else(|e| e)
            );
        }
        eprintln!(
            "---- fake GCE state ----\n{:?}",
            self.gce("GET", "/_fake/state", None)
        );
        for l in ["svcnet-cloud-controller", "svcnet-proxy"] {
            let logs = self
                .kubectl(&[
                    "-n",
                    "kube-system",
                    "logs",
                    "-l",
                    &format!("app.kubernetes.io/name={l}"),
                    "--tail=40",
                    "--prefix",
                ])
                .unwrap_or_else(|e| e);
            eprintln!("---- {l} logs (tail) ----\n{logs}");
        }
    }

    fn down(&mut self) {
        self.is_down = true;
        for c in &self.clients {
            let _ = sh(&mut cmd("docker", &["rm", "-f", c]));
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        must(&mut cmd("kind", &["delete", "cluster", "--name", &self.name]));
    }
}

impl Drop for Kind {
    fn drop(&mut self) {
        if !self.is_down {
            for c in &self.clients {
                let _ = sh(&mut cmd("docker", &["rm", "-f", c]));
            }
            for child in &mut self.children {
                let _ = child.kill();
            }
            let _ = sh(&mut cmd("kind", &["delete", "cluster", "--name", &self.name]));
        }
    }
}
