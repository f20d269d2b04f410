//! Named lab components (control plane, VPC agent, proxies): started with their command line recorded in
//! the state file, so `svcnet-lab stop NAME` can kill one (SIGKILL, like a crash; `--graceful`: SIGTERM)
//! and `svcnet-lab start NAME` relaunch it exactly as before. The restart scenarios of `make e2e` use
//! them; logs are appended to, so one file tells a component's whole life.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::procs;
use crate::state::{self, Proc, State};

/// What a component prints once it serves (none: it is ready when started).
fn ready_needle(name: &str) -> Option<&'static str> {
    match name {
        "fake-gce" | "apiserver" => Some("listening on"),
        "cloud-controller" => Some("became leader"),
        n if n.starts_with("proxy-") => Some("synced"),
        _ => None,
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
        match ready_needle(&self.name) {
            Some(needle) => procs::wait_log(dir, &self.name, self.from, self.pid, needle, timeout),
            None => Ok(()),
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
    while procs::alive(p.pid) {
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
