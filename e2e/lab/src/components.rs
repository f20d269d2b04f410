//! Named lab components (etcd, apiserver, controller-manager, api-proxy, fake-gce, cloud-controller,
//! vpc-agent, proxy-<node>, kube-proxy-<node>): started with their command line recorded in
//! the state file, so `svcnet-lab stop NAME` can kill one (SIGKILL, like a crash; `--graceful`: SIGTERM)
//! and `svcnet-lab start NAME` relaunch it exactly as before. The restart scenarios of `make e2e` use
//! them; logs are appended to, so one file tells a component's whole life.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use serde_json::json;

use crate::state::{self, Proc, State};
use crate::{http, kube, procs};

/// How to tell a component is ready.
enum Ready {
    /// It prints this once it serves.
    Log(&'static str),
    /// kube-apiserver: `/readyz` answers ok (asked with the admin kubeconfig).
    ApiServer,
    /// Ready when started (etcd: the API server's readiness covers it).
    Started,
}

fn ready(name: &str) -> Ready {
    match name {
        "fake-gce" => Ready::Log("listening on"),
        "api-proxy" => Ready::Log("Starting to serve on"),
        "apiserver" => Ready::ApiServer,
        "cloud-controller" => Ready::Log("became leader"),
        n if n.starts_with("proxy-") => Ready::Log("synced"),
        // Upstream kube-proxy at --v=2 (crate::kube_proxy).
        n if n.starts_with("kube-proxy-") => Ready::Log("SyncProxyRules complete"),
        _ => Ready::Started,
    }
}

/// A started component; [`Started::wait`] blocks until it is ready.
pub struct Started {
    pub name: String,
    pub pid: u32,
    from: usize,
}

impl Started {
    pub fn wait(&self, dir: &Path, timeout: Duration) -> Result<()> {
        match ready(&self.name) {
            Ready::Log(needle) => procs::wait_log(dir, &self.name, self.from, self.pid, needle, timeout),
            Ready::ApiServer => {
                let kubectl = kube::kubectl(dir, &state::load(dir)?);
                let start = Instant::now();
                loop {
                    if kubectl.run(&["get", "--raw", "/readyz"])?.status.success() {
                        return Ok(());
                    }
                    if !procs::alive(self.pid) || start.elapsed() > timeout {
                        let log =
                            std::fs::read_to_string(procs::log_path(dir, &self.name)).unwrap_or_default();
                        bail!("{} not ready; log:\n{}", self.name, procs::tail(&log, 40));
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            }
            Ready::Started => Ok(()),
        }
    }
}

/// Starts `bin args` in `ns` as component `name`, recorded in the state file (saved).
pub fn launch(
    dir: &Path,
    st: &mut State,
    name: &str,
    ns: &str,
    bin: PathBuf,
    args: Vec<String>,
) -> Result<Started> {
    let from = procs::log_len(dir, name);
    let pid = procs::spawn(dir, ns, name, &bin, &args)?;
    st.pids.push(pid);
    st.procs.insert(
        name.to_owned(),
        Proc {
            pid,
            ns: ns.to_owned(),
            bin,
            args,
        },
    );
    state::save(dir, st)?;
    Ok(Started {
        name: name.to_owned(),
        pid,
        from,
    })
}

/// `svcnet-lab stop NAME`: kills the component and waits until it is gone.
pub fn stop(dir: &Path, name: &str, graceful: bool) -> Result<()> {
    let st = state::load(dir)?;
    let Some(p) = st.procs.get(name) else {
        bail!(
            "no component {name} (have: {:?})",
            st.procs.keys().collect::<Vec<_>>()
        );
    };
    procs::signal(p.pid, if graceful { "TERM" } else { "KILL" });
    let start = Instant::now();
    while !procs::gone(p.pid) {
        if start.elapsed() > Duration::from_secs(15) {
            bail!("{name} (pid {}) still running", p.pid);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("{name} stopped");
    Ok(())
}

/// `svcnet-lab start NAME`: relaunches a stopped component with its recorded command line.
pub fn start(dir: &Path, name: &str) -> Result<()> {
    let mut st = state::load(dir)?;
    let Some(p) = st.procs.get(name).cloned() else {
        bail!("no component {name}");
    };
    if procs::alive(p.pid) {
        bail!("{name} is running (pid {}): stop it first", p.pid);
    }
    let started = launch(dir, &mut st, name, &p.ns, p.bin, p.args)?;
    started.wait(dir, Duration::from_secs(60))?;
    println!("{name} started (pid {})", started.pid);
    Ok(())
}

/// `svcnet-lab compact-etcd`: compacts etcd (through its JSON gateway, from the `vpc` namespace) up to
/// its current revision, so a watch resuming from an older resourceVersion, once the API server's watch
/// cache no longer holds it (after an API server restart), gets 410 Gone and must list again.
pub fn compact_etcd(dir: &Path) -> Result<()> {
    let st = state::load(dir)?;
    let url = |p: &str| format!("http://{}:2379{p}", state::VPC_IP);
    // Any range request answers with the header; "Lw==" is the key "/" in base64.
    let range = http::json_in(
        &st.vpc(),
        "POST",
        &url("/v3/kv/range"),
        "application/json",
        Some(&json!({"key": "Lw==", "count_only": true})),
    )?;
    let Some(rev) = range["header"]["revision"].as_str() else {
        bail!("etcd range: no header.revision in {range}");
    };
    let (code, body) = http::request_in(
        &st.vpc(),
        "POST",
        &url("/v3/kv/compaction"),
        "application/json",
        &json!({"revision": rev, "physical": true}).to_string(),
    )?;
    // Nothing written since the last compaction: etcd refuses to compact the same revision twice.
    if code != 200 && !body.contains("required revision has been compacted") {
        bail!("etcd compaction at {rev}: {code} {body}");
    }
    println!("{rev}");
    Ok(())
}
