//! How the demo shows the walkthrough: each command printed as the article types it, then run
//! (kubectl and gcloud in the `vpc` namespace) with its output; the nodes' rules filtered to the
//! Service; and the waits between steps, on what the API server and the nodes report.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::state::{CLUSTER_CIDR, State};
use crate::{http, kube, netns, procs};

/// The walkthrough's next section, as a heading.
pub fn step(title: &str) {
    println!("\n==> {title}");
}

/// Shows and runs a command in `ns` (environment for gcloud included); returns its stdout.
fn show(ns: &str, shown: &str, args: &[&str], env: &[(String, String)]) -> Result<String> {
    println!("$ {shown}");
    let out = svcnet_netns::command(ns, args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .with_context(|| format!("run {shown}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    if !out.status.success() {
        bail!(
            "`{shown}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(text)
}

/// The walkthrough's tools, set up for the lab: kubectl as cluster-admin and gcloud pointed at the fake
/// GCE, both run in the `vpc` namespace; each command is printed before it runs.
pub struct Tools {
    vpc: String,
    pub kubeconfig: String,
    kubectl: svcnet_testcluster::Kubectl,
    gcloud_env: Vec<(String, String)>,
}

impl Tools {
    pub fn new(dir: &Path, st: &State) -> Result<Self> {
        let env = crate::gcloud::env(dir)?;
        Ok(Tools {
            vpc: st.vpc(),
            kubeconfig: dir.join("kubeconfig").display().to_string(),
            kubectl: kube::kubectl(dir, st),
            gcloud_env: env,
        })
    }

    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        println!("$ kubectl {}", args.join(" "));
        let out = self.kubectl.run(args)?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        print!("{text}");
        if !out.status.success() {
            bail!(
                "`kubectl {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(text)
    }

    /// The walkthrough's way to make the Service: from the Deployment, port 80 to the pods' 9376.
    pub fn expose(&self, ty: Option<&str>) -> Result<String> {
        let ty = ty.map(|t| format!("--type={t}"));
        let mut args = vec![
            "expose",
            "deployment",
            "hostnames",
            "--port=80",
            "--target-port=9376",
        ];
        args.extend(ty.as_deref());
        self.kubectl(&args)
    }

    /// The walkthrough's central command: the pods, their Endpoints and the Service, side by side.
    pub fn listing(&self) -> Result<String> {
        self.kubectl(&[
            "get",
            "pod,endpoints,service",
            "-o",
            "wide",
            "-l",
            "app=hostnames",
        ])
    }

    pub fn gcloud(&self, args: &[&str]) -> Result<String> {
        let mut v = vec!["gcloud"];
        v.extend_from_slice(args);
        show(
            &self.vpc,
            &format!("gcloud {}", args.join(" ")),
            &v,
            &self.gcloud_env,
        )
    }
}

/// `iptables-save -t nat` of a node, only the lines of `default/hostnames` (and their chain headers).
pub fn node_rules(st: &State, node: usize, needle: &str) -> Result<String> {
    let ns = &st.nodes[node].ns;
    println!(
        "$ iptables-save -t nat | grep {needle}   # on {}",
        st.nodes[node].name
    );
    let out = netns::exec(ns, &["iptables-save", "-t", "nat"])?;
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(needle)).collect();
    for l in &lines {
        println!("{l}");
    }
    Ok(lines.join("\n"))
}

/// Polls `f` every 300 ms until it says done (an error counts as not yet), for at most `timeout`.
pub fn wait(what: &str, timeout: Duration, mut f: impl FnMut() -> Result<bool>) -> Result<()> {
    let done = svcnet_testcluster::wait::poll(timeout, Duration::from_millis(300), || {
        f().unwrap_or(false).then_some(())
    });
    done.ok_or_else(|| anyhow!("timed out after {timeout:?} waiting for {what}"))
}

/// Waits until exactly `n` Pods of hostnames exist, all Running with an IP (the ReplicaSet controller
/// makes them, the agent schedules and runs them).
pub fn wait_pods_running(st: &State, n: usize) -> Result<()> {
    wait("the hostnames Pods", Duration::from_secs(30), || {
        let pods = kube::api(
            st,
            "GET",
            "/api/v1/namespaces/default/pods?labelSelector=app%3Dhostnames",
            None,
        )?;
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        Ok(items.len() == n
            && items.iter().all(|p| {
                p["status"]["phase"] == "Running"
                    && p["status"]["podIP"].is_string()
                    && p["metadata"]["deletionTimestamp"].is_null()
            }))
    })
}

/// Waits until the hostnames Endpoints lists `n` addresses (written next to the EndpointSlice).
pub fn wait_endpoints(st: &State, n: usize) -> Result<()> {
    wait("the hostnames Endpoints", Duration::from_secs(30), || {
        let ep = kube::api(st, "GET", "/api/v1/namespaces/default/endpoints/hostnames", None)?;
        let ready = ep["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["addresses"].as_array().map_or(0, Vec::len))
            .sum::<usize>();
        Ok(ready == n)
    })
}

/// `svcnet-proxy explain` on the objects the API holds, as node `node`'s proxy sees them: the rules it
/// renders for hostnames and representative packets traced through them. Offline: it reads a file and
/// touches no netfilter, so it runs here, outside the lab's namespaces.
pub fn explain(dir: &Path, t: &Tools, node: &str) -> Result<()> {
    let objects = dir.join("objects.yaml");
    println!("$ kubectl get svc,endpointslices,nodes -o yaml > objects.yaml");
    let out = t
        .kubectl
        .run(&["get", "svc,endpointslices,nodes", "-o", "yaml"])
        .context("kubectl get -o yaml")?;
    if !out.status.success() {
        bail!(
            "kubectl get -o yaml: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    std::fs::write(&objects, &out.stdout)?;
    let args = [
        "explain",
        "-f",
        &objects.display().to_string(),
        "--service",
        "default/hostnames",
        "--cluster-cidr",
        CLUSTER_CIDR,
        "--node-name",
        node,
    ];
    println!(
        "$ svcnet-proxy explain -f objects.yaml --service default/hostnames --cluster-cidr {CLUSTER_CIDR} --node-name {node}"
    );
    let out = std::process::Command::new(procs::sibling("svcnet-proxy")?)
        .args(args)
        .output()
        .context("run svcnet-proxy explain")?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    if !out.status.success() {
        bail!(
            "svcnet-proxy explain: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// GET from the client namespace with this binary (no curl needed); the pod's answer.
pub fn fetch(st: &State, url: &str) -> Result<String> {
    let (code, body) = http::request_in(&st.client(), "GET", url, "text/plain", "")?;
    if code != 200 {
        bail!("GET {url}: {code}");
    }
    Ok(body.trim().to_owned())
}
