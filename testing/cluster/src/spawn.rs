//! Starting the control plane's processes so that they never outlive the test process.
//!
//! Each runs under `setpriv --pdeathsig KILL` (util-linux): the kernel sends it SIGKILL when the thread
//! that forked it ends, which covers panics, SIGKILL of the test process and a test harness exiting
//! without dropping anything. Because the signal follows the forking *thread*, not the process, every
//! child is forked by one spawner thread that lives as long as the process; forking from a test's thread
//! would kill a shared instance when that test's thread ends. The pid file of the instance dir is the
//! second line of defence ([`crate::sweep`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

use crate::ClusterError;

type Reply = Sender<std::io::Result<Child>>;

fn spawner() -> &'static Mutex<Sender<(Command, Reply)>> {
    static SPAWNER: OnceLock<Mutex<Sender<(Command, Reply)>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<(Command, Reply)>();
        // Never joined: it must live until the process exits (see the module docs).
        std::thread::Builder::new()
            .name("svcnet-testcluster-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .map(drop)
            .unwrap_or_else(|e| eprintln!("svcnet-testcluster: no spawner thread: {e}"));
        Mutex::new(tx)
    })
}

fn spawn_on_spawner(cmd: Command) -> std::io::Result<Child> {
    let (tx, rx) = channel();
    let gone = || std::io::Error::other("the spawner thread is gone");
    spawner()
        .lock()
        .map_err(|_| gone())?
        .send((cmd, tx))
        .map_err(|_| gone())?;
    rx.recv().map_err(|_| gone())?
}

/// A running control-plane process; killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct Proc {
    pub name: &'static str,
    pub log: PathBuf,
    program: PathBuf,
    args: Vec<String>,
    child: Child,
}

impl Proc {
    /// Starts `program args` with stdout and stderr appended to `log`, its pid recorded in `pidfile`.
    pub fn start(
        name: &'static str,
        program: &Path,
        args: Vec<String>,
        log: PathBuf,
        pidfile: &Path,
    ) -> Result<Proc, ClusterError> {
        let child = launch(name, program, &args, &log, pidfile)?;
        Ok(Proc {
            name,
            log,
            program: program.to_path_buf(),
            args,
            child,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Some(status) once it has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(st.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// Kills it and starts it again with the same command line (the log is appended to).
    pub fn restart(&mut self, pidfile: &Path) -> Result<(), ClusterError> {
        self.kill();
        self.child = launch(self.name, &self.program, &self.args, &self.log, pidfile)?;
        Ok(())
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        log_tail(&self.log, n)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn launch(
    name: &'static str,
    program: &Path,
    args: &[String],
    log: &Path,
    pidfile: &Path,
) -> Result<Child, ClusterError> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .map_err(ClusterError::io(format!("opening {}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(ClusterError::io(format!("opening {}", log.display())))?;
    let mut cmd = Command::new("setpriv");
    cmd.args(["--pdeathsig", "KILL", "--"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let child = spawn_on_spawner(cmd).map_err(ClusterError::io(format!(
        "starting {name} (setpriv {})",
        program.display()
    )))?;
    let mut pids = File::options()
        .create(true)
        .append(true)
        .open(pidfile)
        .map_err(ClusterError::io(format!("opening {}", pidfile.display())))?;
    writeln!(pids, "{}", child.id()).map_err(ClusterError::io(format!("writing {}", pidfile.display())))?;
    Ok(child)
}

/// The last `n` lines of a log file (empty when unreadable).
pub fn log_tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
