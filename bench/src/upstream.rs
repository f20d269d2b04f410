//! U: the upstream anchor. Upstream kube-proxy v1.34 (iptables and nftables modes) and svcnet-proxy
//! (tree and flat layouts), one after another, each alone in its own node namespace, against the
//! same real kube-apiserver holding the same state (S Services x E endpoints, loaded once).
//!
//! Per proxy: full sync (process start -> the last-created Service answers through the proxy's
//! rules), programming latency (API write -> a connection reaches the new endpoint, for one
//! endpoint replaced and for one Service added), first-packet cost at that size (connect time
//! through the programmed rules), CPU per 1000 endpoint changes under steady churn (the proxy and
//! the restore tools it ran) and VmHWM. Each proxy runs with the defaults it ships (both have a
//! 1 s min-sync-period and a 30 s sync-period).

pub mod args;
mod measure;
pub mod ops;
pub mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::agent::Agent;
use crate::error::BenchError;
use crate::netns::Netns;
use crate::p4::NODE;
use crate::procs::{self, Bins, Proc, spawn_kubectl_proxy};
use svcnet_testcluster::{Cluster, Component, Options};

/// The proxies compared, in run order (upstream first: the anchor of every ratio).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Proxy {
    /// Upstream kube-proxy, `--proxy-mode iptables`.
    KubeIptables,
    /// Upstream kube-proxy, `--proxy-mode nftables`.
    KubeNftables,
    /// svcnet-proxy, `--layout tree` (its default).
    SvcnetTree,
    /// svcnet-proxy, `--layout flat` (KUBE-SERVICES as upstream).
    SvcnetFlat,
    /// svcnet-proxy, `--proxy-mode nftables` (upstream's nftables table, written over netlink).
    SvcnetNftables,
    /// svcnet-proxy, `--proxy-mode nftables --nftables-layout maps` (docs/nftables-maps.md).
    SvcnetMaps,
}

impl Proxy {
    /// The default set; `SvcnetMaps` runs only when named (`--up-proxies`).
    pub const ALL: [Proxy; 5] = [
        Proxy::KubeIptables,
        Proxy::KubeNftables,
        Proxy::SvcnetTree,
        Proxy::SvcnetFlat,
        Proxy::SvcnetNftables,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Proxy::KubeIptables => "kube-proxy iptables",
            Proxy::KubeNftables => "kube-proxy nftables",
            Proxy::SvcnetTree => "svcnet tree",
            Proxy::SvcnetFlat => "svcnet flat",
            Proxy::SvcnetNftables => "svcnet nft",
            Proxy::SvcnetMaps => "svcnet nft maps",
        }
    }

    /// Whether it writes iptables rules (and so runs on the `--up-iptables` backend).
    fn iptables_mode(self) -> bool {
        !matches!(
            self,
            Proxy::KubeNftables | Proxy::SvcnetNftables | Proxy::SvcnetMaps
        )
    }

    fn tag(self) -> &'static str {
        match self {
            Proxy::KubeIptables => "up-kipt",
            Proxy::KubeNftables => "up-knft",
            Proxy::SvcnetTree => "up-tree",
            Proxy::SvcnetFlat => "up-flat",
            Proxy::SvcnetNftables => "up-snft",
            Proxy::SvcnetMaps => "up-smap",
        }
    }
}

/// The iptables the iptables-mode proxies run with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    #[default]
    Nft,
    Legacy,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Nft => "iptables-nft",
            Backend::Legacy => "iptables-legacy",
        }
    }
}

pub struct UParams {
    pub services: usize,
    pub endpoints: usize,
    pub proxies: Vec<Proxy>,
    /// Timed changes of each kind (endpoint replaced, Service added) per proxy.
    pub changes: usize,
    /// Pause after each timed change: longer than the min-sync-period, so every change is timed
    /// from an idle proxy.
    pub gap: Duration,
    /// Endpoint changes of the CPU figure, written at `churn_per_s`.
    pub churn: usize,
    pub churn_per_s: f64,
    /// Connects per added Service for the first-packet figure.
    pub connects: usize,
    /// Give up waiting for a full sync or a change after this long.
    pub limit: Duration,
    pub iptables: Backend,
}

/// One proxy's figures; `error` says why the rest are missing.
#[derive(Debug, Clone, Default)]
pub struct URow {
    pub name: String,
    pub full_sync: Option<Duration>,
    /// The full sync was still not live when the wait ended after this long (a lower bound).
    pub full_sync_over: Option<Duration>,
    /// VmHWM right after the first full sync, and at the end (after the changes and the churn).
    pub hwm_sync_kb: u64,
    pub hwm_end_kb: u64,
    pub replace_ms: Vec<f64>,
    pub add_ms: Vec<f64>,
    /// When the API server answered the slice PUT of each replace, and the Service POST of each
    /// add (ms from the write).
    pub replace_put_ms: Vec<f64>,
    pub add_post_ms: Vec<f64>,
    pub connect_us: Vec<f64>,
    /// CPU seconds (user + system, the proxy and its reaped children) per 1000 churn changes.
    pub cpu_per_1000: Option<f64>,
    pub churn_wall: Duration,
    pub error: Option<String>,
}

pub struct UResult {
    pub services: usize,
    pub endpoints: usize,
    pub iptables: Backend,
    pub load: Duration,
    pub rows: Vec<URow>,
}

/// The state every proxy starts from, and where its writers reach the API.
struct Shared {
    // Field order is drop order: the API's users first, the namespace they run in last.
    /// `kubectl proxy` on [`wire::API_IP`]: plain HTTP for the agents and the loader.
    _api_proxy: Proc,
    cluster: Cluster,
    cp: Netns,
    api: String,
    /// With `--up-iptables legacy`: a directory of `iptables*` names for iptables-legacy, put first
    /// on kube-proxy's PATH.
    legacy_path: Option<PathBuf>,
    dir: tempfile::TempDir,
}

/// User + system CPU ticks of a process and of its reaped children, from `/proc/<pid>/stat` text.
pub fn cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after the command (which may hold spaces) start at field 3 (state).
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime, stime, cutime, cstime are fields 14-17.
    (11..15).map(|i| f.get(i)?.parse::<u64>().ok()).sum()
}

fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

fn cpu_seconds(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(cpu_ticks(&text)? as f64 / clock_ticks())
}

fn setup(p: &UParams, progress: &mut dyn FnMut(&str)) -> Result<(Shared, Duration), BenchError> {
    let dir = tempfile::Builder::new()
        .prefix("svcnet-bench-up-")
        .tempdir()
        .map_err(|e| BenchError::io("tempdir", e))?;
    let cp = wire::control_plane()?;
    let cluster = Cluster::start_with(Options {
        netns: Some(cp.name.clone()),
        ip: wire::API_IP.parse().ok(),
        service_cidr: wire::SERVICE_CIDR.into(),
        controller_manager: false,
        ..Options::default()
    })
    .map_err(|e| BenchError::Check(format!("control plane: {e}")))?;
    // Host check off: the agents in the node namespaces reach it by address.
    let mut cmd = cluster.admin_kubectl().command(&[
        "proxy",
        &format!("--address={}", wire::API_IP),
        "--port=0",
        "--accept-hosts=.*",
    ]);
    let (api_proxy, api) = spawn_kubectl_proxy(&mut cmd)?;
    let legacy_path = match p.iptables {
        Backend::Legacy => Some(legacy_names(dir.path())?),
        Backend::Nft => None,
    };
    let load = procs::load_api(&cp, &api, p.services, p.endpoints)?;
    progress(&format!(
        "U: loaded {} x {} in {:.1} s",
        p.services,
        p.endpoints,
        load.as_secs_f64()
    ));
    Ok((
        Shared {
            cp,
            cluster,
            api,
            _api_proxy: api_proxy,
            legacy_path,
            dir,
        },
        load,
    ))
}

/// The command line of `proxy` inside `ns`.
fn spawn_proxy(proxy: Proxy, sh: &Shared, bins: &Bins, ns: &Netns) -> Result<(Proc, PathBuf), BenchError> {
    let (log, log_path) = procs::log_file(sh.dir.path(), proxy.tag())?;
    let mut cmd = match proxy {
        Proxy::KubeIptables | Proxy::KubeNftables => {
            let bin = svcnet_testcluster::binaries()?.kube_proxy();
            let mode = if proxy == Proxy::KubeIptables {
                "iptables"
            } else {
                "nftables"
            };
            let mut c = ns.command(&bin.to_string_lossy());
            c.arg("--kubeconfig")
                .arg(sh.cluster.admin_kubeconfig())
                .args(["--proxy-mode", mode, "--hostname-override", NODE])
                .args(["--cluster-cidr", wire::ENDPOINT_CIDR])
                // Nothing global: no conntrack sysctls (they are not all per namespace), and
                // health/metrics inside the node namespace (the defaults' addresses are there).
                .args([
                    "--conntrack-max-per-core=0",
                    "--conntrack-tcp-timeout-established=0",
                ])
                .args(["--conntrack-tcp-timeout-close-wait=0", "--oom-score-adj=0"]);
            if let Some(dir) = &sh.legacy_path {
                let path = std::env::var("PATH").unwrap_or_default();
                c.env("PATH", format!("{}:{path}", dir.display()));
            }
            c
        }
        Proxy::SvcnetTree | Proxy::SvcnetFlat | Proxy::SvcnetNftables | Proxy::SvcnetMaps => {
            let mode: &[&str] = match proxy {
                Proxy::SvcnetTree => &["--layout", "tree"],
                Proxy::SvcnetFlat => &["--layout", "flat"],
                Proxy::SvcnetMaps => &["--proxy-mode", "nftables", "--nftables-layout", "maps"],
                _ => &["--proxy-mode", "nftables"],
            };
            let kubeconfig = sh.cluster.component_kubeconfig(Component::Proxy)?;
            let mut c = ns.command(&bins.path(procs::PROXY).to_string_lossy());
            c.arg("run")
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["--hostname-override", NODE, "--cluster-cidr", wire::ENDPOINT_CIDR])
                .args(mode);
            if sh.legacy_path.is_some() && proxy.iptables_mode() {
                c.args(["--iptables-backend", "legacy"]);
            }
            c
        }
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    Ok((Proc::spawn(proxy.name(), &mut cmd)?, log_path))
}

/// Loads the state once, then measures every proxy in turn (a proxy that fails gets a row with
/// its error; the others still run).
pub fn run(bins: &Bins, p: &UParams, progress: &mut dyn FnMut(&str)) -> Result<UResult, BenchError> {
    let (sh, load) = setup(p, progress)?;
    let mut rows = Vec::new();
    for (round, &proxy) in p.proxies.iter().enumerate() {
        progress(&format!("U: {}", proxy.name()));
        let mut row = URow {
            name: proxy.name().to_owned(),
            ..URow::default()
        };
        if let Err(e) = measure::one(proxy, round, &sh, bins, p, &mut row, progress) {
            progress(&format!("  {}: {e}", proxy.name()));
            row.error = Some(e.to_string());
        }
        rows.push(row);
    }
    if std::env::var_os("SVCNET_BENCH_KEEP").is_some() {
        let Shared { dir, .. } = sh;
        progress(&format!("  kept {}", dir.keep().display()));
    }
    Ok(UResult {
        services: p.services,
        endpoints: p.endpoints,
        iptables: p.iptables,
        load,
        rows,
    })
}

/// `dir/legacy-bin` holding `iptables`, `iptables-save`, `iptables-restore` and the `ip6tables` ones,
/// each a link to the multi-call binary behind `iptables-legacy` (it acts on the name it is run as).
fn legacy_names(dir: &std::path::Path) -> Result<PathBuf, BenchError> {
    let multi = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("iptables-legacy"))
        .find(|p| p.exists())
        .ok_or_else(|| BenchError::Check("--up-iptables legacy: no iptables-legacy on PATH".into()))?;
    let multi = std::fs::canonicalize(&multi).map_err(|e| BenchError::io("iptables-legacy", e))?;
    let out = dir.join("legacy-bin");
    std::fs::create_dir_all(&out).map_err(|e| BenchError::io("legacy-bin", e))?;
    for tool in ["iptables", "ip6tables"] {
        for suffix in ["", "-save", "-restore"] {
            let link = out.join(format!("{tool}{suffix}"));
            std::os::unix::fs::symlink(&multi, &link).map_err(|e| BenchError::io("legacy-bin link", e))?;
        }
    }
    Ok(out)
}

/// Starts the agent listening on the probe endpoint.
fn agent(ns: &Netns) -> Result<Agent, BenchError> {
    let listen: SocketAddr = format!("{}:{}", wire::PROBE_IP, ops::ENDPOINT_PORT)
        .parse()
        .map_err(|e| BenchError::Check(format!("probe address: {e}")))?;
    Agent::spawn(ns, listen)
}

/// Time since `t0`, for the progress lines.
fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests;
