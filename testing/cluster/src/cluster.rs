//! One control plane: etcd, kube-apiserver and (optionally) kube-controller-manager on an address of
//! its own, started in order and waited for, stopped on drop.

use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::binaries::binaries;
use crate::flags::{self, Options};
use crate::kubectl::Kubectl;
use crate::plan::{Launch, Plan};
use crate::spawn::Proc;
use crate::{ClusterError, etcd, sweep};

/// How many log lines an error shows.
const TAIL: usize = 30;

/// A running control plane; everything it started is killed when it is dropped (and, through
/// `setpriv --pdeathsig`, when the test process dies).
#[derive(Debug)]
pub struct Cluster {
    plan: Plan,
    // Dropped last to first: controller manager, API server, etcd.
    etcd: Proc,
    apiserver: Proc,
    controller_manager: Option<Proc>,
}

impl Cluster {
    /// [`Cluster::start_with`] the default [`Options`].
    pub fn start() -> Result<Cluster, ClusterError> {
        Cluster::start_with(Options::default())
    }

    /// Builds the binaries if needed, then starts the control plane on a loopback address no other
    /// instance uses (each instance has all of 127.x.y.z's ports, so parallel tests never race for a
    /// free port) and returns once the API server is ready and, with the controller manager, its
    /// controllers work (the `default` ServiceAccount exists).
    pub fn start_with(options: Options) -> Result<Cluster, ClusterError> {
        let swept = sweep::sweep_dead();
        if !swept.is_empty() {
            eprintln!(
                "svcnet-testcluster: swept {} instance(s) of dead test processes",
                swept.len()
            );
        }
        let bins = binaries()?;
        let t0 = Instant::now();
        let dir = sweep::new_instance_dir()?;
        let ip = match (options.ip, &options.netns) {
            (Some(ip), _) => ip,
            (None, Some(_)) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            (None, None) => unique_loopback()?,
        };
        let plan = Plan::prepare(&bins, &dir, ip, options)?;
        let pidfile = plan.layout.path("pids");

        let mut etcd = start(&plan, &plan.etcd, &pidfile)?;
        // Inside a namespace this process cannot connect; the API server's readiness covers etcd there.
        if plan.layout.netns.is_none() {
            let etcd_addr = SocketAddr::new(ip, flags::ETCD_CLIENT_PORT);
            wait(&mut etcd, Duration::from_secs(30), || Ok(listening(etcd_addr)))?;
        }
        let t_etcd = t0.elapsed();

        let apiserver = start(&plan, &plan.apiserver, &pidfile)?;
        let mut cluster = Cluster {
            plan,
            etcd,
            apiserver,
            controller_manager: None,
        };
        cluster.wait_apiserver_ready()?;
        let t_api = t0.elapsed();

        cluster.start_controller_manager()?;
        eprintln!(
            "svcnet-testcluster: control plane at {} ready in {:.1} s (etcd {:.1} s, kube-apiserver {:.1} s{}); state in {}",
            cluster.server(),
            t0.elapsed().as_secs_f64(),
            t_etcd.as_secs_f64(),
            (t_api - t_etcd).as_secs_f64(),
            if cluster.controller_manager.is_some() {
                format!(
                    ", kube-controller-manager {:.1} s",
                    (t0.elapsed() - t_api).as_secs_f64()
                )
            } else {
                String::new()
            },
            cluster.plan.dir().display(),
        );
        Ok(cluster)
    }

    fn start_controller_manager(&mut self) -> Result<(), ClusterError> {
        let Some(launch) = self.plan.controller_manager.clone() else {
            return Ok(());
        };
        let mut kcm = start(&self.plan, &launch, &self.plan.layout.path("pids"))?;
        // The serviceaccount controller creating `default` shows the controllers run with their
        // credentials; Pods are not admitted in a namespace before it exists.
        let admin = self.admin_kubectl();
        wait(&mut kcm, Duration::from_secs(90), || {
            Ok(admin
                .run(&["get", "serviceaccount", "default", "-n", "default"])?
                .status
                .success())
        })?;
        self.controller_manager = Some(kcm);
        Ok(())
    }

    fn wait_apiserver_ready(&mut self) -> Result<(), ClusterError> {
        let addr = SocketAddr::new(self.plan.layout.ip, flags::APISERVER_PORT);
        // Connecting first spares a kubectl run per poll while nothing listens (not possible from here
        // into a namespace).
        let probe = self.plan.layout.netns.is_none();
        let admin = self.admin_kubectl();
        wait(&mut self.apiserver, Duration::from_secs(120), || {
            Ok((!probe || listening(addr)) && admin.run(&["get", "--raw", "/readyz"])?.status.success())
        })
    }

    /// `https://<ip>:6443`.
    pub fn server(&self) -> String {
        self.plan.layout.server()
    }

    /// The address every component of this instance listens on.
    pub fn ip(&self) -> IpAddr {
        self.plan.layout.ip
    }

    /// A kubeconfig with cluster-admin rights (a client certificate in group system:masters).
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.plan.admin_kubeconfig
    }

    /// The instance's directory (certificates, logs, kubeconfigs); deleted on drop unless the test panics.
    pub fn dir(&self) -> &Path {
        &self.plan.layout.dir
    }

    /// The options it was started with.
    pub fn options(&self) -> &Options {
        &self.plan.options
    }

    /// The CA that signed the serving certificate (PEM), for clients built by hand.
    pub fn ca_pem(&self) -> &str {
        self.plan.ca_pem()
    }

    /// kubectl as admin (inside the instance's namespace, if any).
    pub fn admin_kubectl(&self) -> Kubectl {
        self.plan.admin_kubectl()
    }

    /// kubectl with another kubeconfig (a component's), same cache dir and namespace.
    pub fn kubectl_with(&self, kubeconfig: &Path) -> Kubectl {
        self.plan.kubectl_with(kubeconfig)
    }

    /// The real kubectl as admin; the raw output (the caller decides what failure means).
    pub fn kubectl(&self, args: &[&str]) -> Result<Output, ClusterError> {
        self.admin_kubectl().run(args)
    }

    /// The real kubectl as admin; stdout, or an error with kubectl's stderr.
    pub fn kubectl_ok(&self, args: &[&str]) -> Result<String, ClusterError> {
        self.admin_kubectl().ok(args)
    }

    /// `kubectl apply -f -` of `yaml` as admin (server-side apply: the server owns the merge).
    pub fn apply(&self, yaml: &str) -> Result<String, ClusterError> {
        self.admin_kubectl().ok_stdin(
            &["apply", "--server-side", "--field-manager=svcnet-test", "-f", "-"],
            yaml,
        )
    }

    /// The real kubectl with another kubeconfig (a component's), same cache dir.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Result<Output, ClusterError> {
        self.kubectl_with(kubeconfig).run(args)
    }

    /// kube-apiserver's pid (for resource figures: `/proc/<pid>/status`).
    pub fn apiserver_pid(&self) -> u32 {
        self.apiserver.pid()
    }

    /// The pids of the processes it runs (for tests of their lifetime).
    pub fn pids(&self) -> Vec<u32> {
        [
            Some(&self.etcd),
            Some(&self.apiserver),
            self.controller_manager.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(Proc::pid)
        .collect()
    }

    /// Kills kube-apiserver and starts it again on the same address and etcd (state survives, watches
    /// break), returning once it is ready.
    pub fn restart_apiserver(&mut self) -> Result<(), ClusterError> {
        self.apiserver.restart(&self.plan.layout.path("pids"))?;
        self.wait_apiserver_ready()
    }

    /// Compacts etcd's history up to its current revision and returns that revision: watchers (through
    /// the API server) can no longer resume from before it once the API server's watch cache does not
    /// hold it either (after [`Cluster::restart_apiserver`], or once it has moved on). Needs the instance
    /// outside a network namespace (this process talks to etcd directly).
    pub fn compact_etcd(&self) -> Result<i64, ClusterError> {
        if let Some(ns) = &self.plan.layout.netns {
            return Err(ClusterError::Api(format!(
                "compact_etcd: etcd is inside namespace {ns}, out of this process's reach"
            )));
        }
        let addr = SocketAddr::new(self.plan.layout.ip, flags::ETCD_CLIENT_PORT);
        let rev = etcd::revision(addr)?;
        etcd::compact(addr, rev)?;
        Ok(rev)
    }

    /// Compacts etcd up to `rev` (an error when `rev` is already compacted or in the future).
    pub fn compact_etcd_to(&self, rev: i64) -> Result<(), ClusterError> {
        etcd::compact(SocketAddr::new(self.plan.layout.ip, flags::ETCD_CLIENT_PORT), rev)
    }

    /// The last lines of each process's log, for a test's failure message.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for p in [
            Some(&self.etcd),
            Some(&self.apiserver),
            self.controller_manager.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            out.push_str(&format!(
                "--- {} ({}):\n{}\n",
                p.name,
                p.log.display(),
                p.log_tail(lines)
            ));
        }
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Order matters little for SIGKILL, but the controller manager first avoids a burst of errors.
        self.controller_manager = None;
        if std::thread::panicking() {
            // Kept for the reader of the failure; the next instance's sweep removes it.
            eprintln!(
                "svcnet-testcluster: keeping {} (logs) after a panic",
                self.plan.layout.dir.display()
            );
            return;
        }
        sweep::kill_recorded(&self.plan.layout.dir);
        let _ = std::fs::remove_dir_all(&self.plan.layout.dir);
    }
}

/// Starts one process of the plan under the test's lifetime rules ([`Proc`]).
fn start(plan: &Plan, launch: &Launch, pidfile: &Path) -> Result<Proc, ClusterError> {
    let (program, args) = plan.command_line(launch);
    Proc::start(launch.name, &program, args, launch.log.clone(), pidfile)
}

/// The instance's plan (its files, command lines and kubectl).
impl AsRef<Plan> for Cluster {
    fn as_ref(&self) -> &Plan {
        &self.plan
    }
}

/// Polls `ready` every 200 ms until it says yes, `proc` exits, or `limit` passes.
fn wait(
    proc: &mut Proc,
    limit: Duration,
    mut ready: impl FnMut() -> Result<bool, ClusterError>,
) -> Result<(), ClusterError> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = proc.exited() {
            return Err(ClusterError::Exited {
                component: proc.name,
                status,
                log: proc.log.clone(),
                tail: proc.log_tail(TAIL),
            });
        }
        if ready()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(ClusterError::NotReady {
                component: proc.name,
                secs: limit.as_secs(),
                log: proc.log.clone(),
                lines: TAIL,
                tail: proc.log_tail(TAIL),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn listening(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

/// A random 127.a.b.c (a, b, c in 1..=254, a != 0 so 127.0.0.x stays free for everything else) whose
/// control-plane ports are all free.
fn unique_loopback() -> Result<IpAddr, ClusterError> {
    let ports = [
        flags::ETCD_CLIENT_PORT,
        flags::ETCD_PEER_PORT,
        flags::APISERVER_PORT,
        flags::CONTROLLER_MANAGER_PORT,
    ];
    for _ in 0..50 {
        // RandomState is seeded from the OS per instance: enough randomness without a dependency.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let r = h.finish();
        let octet = |shift: u32| 1 + ((r >> shift) % 254) as u8;
        let ip = IpAddr::V4(Ipv4Addr::new(127, octet(0), octet(8), octet(16)));
        if ports
            .iter()
            .all(|port| TcpListener::bind(SocketAddr::new(ip, *port)).is_ok())
        {
            return Ok(ip);
        }
    }
    Err(ClusterError::Io {
        what: "finding a loopback address with free control-plane ports".into(),
        source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
    })
}
