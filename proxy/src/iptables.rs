//! The iptables tools of one IP family: which backend (nft or legacy) to use, feature detection, and
//! the few commands the daemon runs (save, restore, check/insert/delete of one rule, canary check).
//!
//! Backend choice follows upstream's iptables-wrapper: use the backend that already holds the node's
//! rules (kubelet's KUBE-IPTABLES-HINT / KUBE-KUBELET-CANARY chains first, else whichever has more
//! rules; nft on a tie), because mixing both on one node silently splits the ruleset.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::model::Family;
use crate::render::naming::KUBE_PROXY_CANARY;

/// A command slower than this is killed: iptables waits at most 5 s for the xtables lock (`-w 5`),
/// so anything longer is hung. iptables-restore has its own, configurable limit
/// ([`DEFAULT_RESTORE_TIMEOUT`], `--iptables-restore-timeout`) because its time grows with the payload.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Default bound on one iptables-restore call. Batched syncs keep one call near a second even at 10k
/// services (docs/proxy-daemon.md); this only catches a wedged tool.
pub const DEFAULT_RESTORE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Error)]
pub enum IptablesError {
    #[error("{program} is not installed (not found on PATH)")]
    NotInstalled { program: String },
    #[error("{program}: cannot run: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{program} {args}: exit {code:?}: {stderr}")]
    Failed {
        program: String,
        args: String,
        code: Option<i32>,
        stderr: String,
    },
    #[error("{program}: timed out after {after:?}")]
    Timeout { program: String, after: Duration },
    /// The nftables netlink writer: the kernel refused a batch (naming the step) or did not answer.
    #[error("nftables netlink: {0}")]
    Netlink(String),
}

/// Which iptables flavour the binaries are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `iptables-nft*`.
    Nft,
    /// `iptables-legacy*`.
    Legacy,
    /// Only the plain `iptables*` names exist: use whatever they point to.
    Plain,
}

impl Backend {
    fn suffix(self) -> &'static str {
        match self {
            Backend::Nft => "-nft",
            Backend::Legacy => "-legacy",
            Backend::Plain => "",
        }
    }
}

/// The output of one finished command.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A missing binary is named as such: "not found" from spawn says nothing about netfilter.
fn spawn_error(program: &str, source: std::io::Error) -> IptablesError {
    if source.kind() == std::io::ErrorKind::NotFound {
        IptablesError::NotInstalled {
            program: program.to_string(),
        }
    } else {
        IptablesError::Spawn {
            program: program.to_string(),
            source,
        }
    }
}

/// Runs `program args` with optional stdin, bounded by [`COMMAND_TIMEOUT`].
pub async fn exec(program: &str, args: &[&str], stdin: Option<&str>) -> Result<Output, IptablesError> {
    exec_within(program, args, stdin, COMMAND_TIMEOUT).await
}

/// Runs `program args` with optional stdin; killed after `limit`.
pub async fn exec_within(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
    limit: Duration,
) -> Result<Output, IptablesError> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| spawn_error(program, source))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error means the tool exited early; its exit status tells why.
        let _ = pipe.write_all(text.as_bytes()).await;
        drop(pipe);
    }
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| IptablesError::Timeout {
            program: program.to_string(),
            after: limit,
        })?
        .map_err(|source| IptablesError::Spawn {
            program: program.to_string(),
            source,
        })?;
    Ok(Output {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Like [`exec`], but a non-zero exit is an error.
pub async fn exec_ok(program: &str, args: &[&str], stdin: Option<&str>) -> Result<Output, IptablesError> {
    exec_ok_within(program, args, stdin, COMMAND_TIMEOUT).await
}

/// Like [`exec_within`], but a non-zero exit is an error.
pub async fn exec_ok_within(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
    limit: Duration,
) -> Result<Output, IptablesError> {
    let out = exec_within(program, args, stdin, limit).await?;
    if out.success {
        Ok(out)
    } else {
        Err(IptablesError::Failed {
            program: program.to_string(),
            args: args.join(" "),
            code: out.code,
            stderr: out.stderr.trim().to_string(),
        })
    }
}

/// Whether `name` is an executable file in a `PATH` directory.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| is_executable(&dir.join(name))))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Counts rule lines in iptables-save output and notices kubelet's hint chains.
pub fn save_facts(save_output: &str) -> (usize, bool) {
    let rules = save_output.lines().filter(|l| l.starts_with('-')).count();
    let hint = save_output
        .lines()
        .any(|l| l.starts_with(":KUBE-IPTABLES-HINT") || l.starts_with(":KUBE-KUBELET-CANARY"));
    (rules, hint)
}

/// Upstream iptables-wrapper's decision from (rules, hint) of legacy and nft.
pub fn choose_backend(legacy: (usize, bool), nft: (usize, bool)) -> Backend {
    if nft.1 {
        Backend::Nft
    } else if legacy.1 || legacy.0 > nft.0 {
        Backend::Legacy
    } else {
        Backend::Nft
    }
}

async fn save_all(suffix: &str) -> (usize, bool) {
    let mut total = (0, false);
    for tool in ["iptables", "ip6tables"] {
        let program = format!("{tool}{suffix}-save");
        if !on_path(&program) {
            continue;
        }
        if let Ok(out) = exec(&program, &[], None).await {
            let (n, hint) = save_facts(&out.stdout);
            total.0 += n;
            total.1 |= hint;
        }
    }
    total
}

/// Picks the backend (see the module docs). `forced` comes from `--iptables-backend`.
pub async fn detect_backend(forced: Option<Backend>) -> Backend {
    if let Some(b) = forced {
        return b;
    }
    let nft = on_path("iptables-nft-restore");
    let legacy = on_path("iptables-legacy-restore");
    match (nft, legacy) {
        (true, true) => choose_backend(save_all("-legacy").await, save_all("-nft").await),
        (true, false) => Backend::Nft,
        (false, true) => Backend::Legacy,
        (false, false) => Backend::Plain,
    }
}

/// `iptables v1.8.9 (nf_tables)` -> (1, 8, 9).
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let v = text.split_whitespace().find_map(|w| w.strip_prefix('v'))?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// The tools of one family on the chosen backend.
#[derive(Clone, Debug)]
pub struct Iptables {
    pub family: Family,
    pub backend: Backend,
    pub cmd: String,
    pub save: String,
    pub restore: String,
    /// Bound on one iptables-restore call.
    pub restore_timeout: Duration,
}

impl Iptables {
    pub fn new(family: Family, backend: Backend) -> Iptables {
        let base = match family {
            Family::V4 => "iptables",
            Family::V6 => "ip6tables",
        };
        let s = backend.suffix();
        Iptables {
            family,
            backend,
            cmd: format!("{base}{s}"),
            save: format!("{base}{s}-save"),
            restore: format!("{base}{s}-restore"),
            restore_timeout: DEFAULT_RESTORE_TIMEOUT,
        }
    }

    /// Whether this family's tools exist and work (ip6tables may be absent or the kernel may lack IPv6).
    /// Whether the tools are installed and the kernel answers them: a missing binary is named as
    /// missing, a failing one with its own words.
    pub async fn check(&self) -> Result<(), IptablesError> {
        if !on_path(&self.restore) {
            return Err(IptablesError::NotInstalled {
                program: self.restore.clone(),
            });
        }
        exec_ok(&self.save, &["-t", "nat"], None).await.map(drop)
    }

    /// `MASQUERADE --random-fully` needs iptables >= 1.6.2 (upstream checks the same version).
    pub async fn supports_random_fully(&self) -> bool {
        match exec(&self.cmd, &["--version"], None).await {
            Ok(out) => parse_version(&out.stdout).is_some_and(|v| v >= (1, 6, 2)),
            Err(_) => false,
        }
    }

    /// `iptables-save -t TABLE`.
    pub async fn save_table(&self, table: &str) -> Result<String, IptablesError> {
        Ok(exec_ok(&self.save, &["-t", table], None).await?.stdout)
    }

    /// The chains of `iptables-save -t TABLE` that `keep` accepts, read line by line: at 10k services
    /// the nat table's save output is ~40 MB, which the proxy must not hold (twice) to learn ~100k
    /// names it mostly discards.
    pub async fn chains_where(
        &self,
        table: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<BTreeSet<String>, IptablesError> {
        let program = self.save.as_str();
        let spawn_err = |source| spawn_error(program, source);
        let mut child = Command::new(program)
            .args(["-t", table])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(spawn_err)?;
        let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(spawn_err(std::io::Error::other("no stdout/stderr pipe")));
        };
        let names = async {
            let mut chains = BTreeSet::new();
            let mut lines = BufReader::new(stdout).lines();
            while let Some(line) = lines.next_line().await? {
                if let Some(name) = line.strip_prefix(':').and_then(|l| l.split_whitespace().next())
                    && keep(name)
                {
                    chains.insert(name.to_string());
                }
            }
            Ok::<_, std::io::Error>(chains)
        };
        let messages = async {
            let mut err = String::new();
            stderr.read_to_string(&mut err).await.map(|_| err)
        };
        let read = async {
            let (chains, err) = tokio::join!(names, messages);
            Ok::<_, std::io::Error>((chains?, err?, child.wait().await?))
        };
        let (chains, err, status) = tokio::time::timeout(COMMAND_TIMEOUT, read)
            .await
            .map_err(|_| IptablesError::Timeout {
                program: program.to_string(),
                after: COMMAND_TIMEOUT,
            })?
            .map_err(spawn_err)?;
        if !status.success() {
            return Err(IptablesError::Failed {
                program: program.to_string(),
                args: format!("-t {table}"),
                code: status.code(),
                stderr: err.trim().to_string(),
            });
        }
        Ok(chains)
    }

    /// One atomic `iptables-restore --noflush --counters -w 5 -W 100000` call.
    pub async fn restore(&self, payload: &str) -> Result<(), IptablesError> {
        exec_ok_within(
            &self.restore,
            &["--noflush", "--counters", "-w", "5", "-W", "100000"],
            Some(payload),
            self.restore_timeout,
        )
        .await
        .map(|_| ())
    }

    /// `iptables -w 5 -t TABLE OP CHAIN rule...`; `Ok(false)` when the tool says no (e.g. `-C` on a
    /// missing rule).
    pub async fn rule_op(
        &self,
        op: &str,
        table: &str,
        chain: &str,
        rule: &str,
    ) -> Result<bool, IptablesError> {
        let words = split_rule(rule);
        let mut args = vec!["-w", "5", "-t", table, op, chain];
        args.extend(words.iter().map(String::as_str));
        Ok(exec(&self.cmd, &args, None).await?.success)
    }

    /// `-C || -I`: makes sure a jump rule from a built-in chain is present (prepended, like upstream).
    pub async fn ensure_rule(&self, table: &str, chain: &str, rule: &str) -> Result<(), IptablesError> {
        if self.rule_op("-C", table, chain, rule).await? {
            return Ok(());
        }
        let words = split_rule(rule);
        let mut args = vec!["-w", "5", "-t", table, "-I", chain];
        args.extend(words.iter().map(String::as_str));
        exec_ok(&self.cmd, &args, None).await.map(|_| ())
    }

    /// `-N CHAIN` unless it exists.
    pub async fn ensure_chain(&self, table: &str, chain: &str) -> Result<(), IptablesError> {
        if self.chain_exists(table, chain).await? {
            return Ok(());
        }
        exec_ok(&self.cmd, &["-w", "5", "-t", table, "-N", chain], None)
            .await
            .map(|_| ())
    }

    pub async fn chain_exists(&self, table: &str, chain: &str) -> Result<bool, IptablesError> {
        Ok(
            exec(&self.cmd, &["-w", "5", "-t", table, "-L", chain, "-n"], None)
                .await?
                .success,
        )
    }

    /// Tables whose KUBE-PROXY-CANARY chain is gone: someone flushed the tables (firewalld reload,
    /// `iptables -F`), so the next sync must be full.
    pub async fn missing_canaries(&self) -> Result<Vec<&'static str>, IptablesError> {
        let mut missing = Vec::new();
        for table in ["mangle", "nat", "filter"] {
            if !self.chain_exists(table, KUBE_PROXY_CANARY).await? {
                missing.push(table);
            }
        }
        Ok(missing)
    }
}

/// Splits a rule the way a shell would for the few forms svcnet writes: words, and double-quoted
/// comments (`-m comment --comment "kubernetes service portals"`).
pub fn split_rule(rule: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in rule.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Chain names declared in iptables-save output of one table (`:NAME POLICY [p:b]`).
pub fn saved_chains(save_output: &str) -> Vec<String> {
    save_output
        .lines()
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests;
