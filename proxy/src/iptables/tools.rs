//! The iptables tools of one IP family: which backend (nft or legacy) to use, feature detection, and
//! the few commands the daemon runs (save, restore, check/insert/delete of one rule, canary check).
//! How the backend is chosen is in [`super::backend`]; running a tool in [`crate::exec`].

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use super::backend::Backend;
#[cfg(test)]
use super::backend::{choose_backend, save_facts};

use super::render::naming::KUBE_PROXY_CANARY;
use crate::exec::{COMMAND_TIMEOUT, ToolError, exec, exec_ok, exec_ok_within, on_path, spawn_error};
use crate::model::Family;

/// Default bound on one iptables-restore call. Batched syncs keep one call near a second even at 10k
/// services (docs/proxy-daemon.md); this only catches a wedged tool.
pub(crate) const DEFAULT_RESTORE_TIMEOUT: Duration = Duration::from_secs(120);

/// `iptables v1.8.9 (nf_tables)` -> (1, 8, 9).
pub(crate) fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
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
pub(crate) struct Iptables {
    pub family: Family,
    pub backend: Backend,
    pub cmd: String,
    pub save: String,
    pub restore: String,
    /// Bound on one iptables-restore call.
    pub restore_timeout: Duration,
}

impl Iptables {
    pub(crate) fn new(family: Family, backend: Backend) -> Iptables {
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
    pub(crate) async fn check(&self) -> Result<(), ToolError> {
        if !on_path(&self.restore) {
            return Err(ToolError::NotInstalled {
                program: self.restore.clone(),
            });
        }
        exec_ok(&self.save, &["-t", "nat"], None).await.map(drop)
    }

    /// `MASQUERADE --random-fully` needs iptables >= 1.6.2 (upstream checks the same version).
    pub(crate) async fn supports_random_fully(&self) -> bool {
        match exec(&self.cmd, &["--version"], None).await {
            Ok(out) => parse_version(&out.stdout).is_some_and(|v| v >= (1, 6, 2)),
            Err(_) => false,
        }
    }

    /// `iptables-save -t TABLE`.
    pub(crate) async fn save_table(&self, table: &str) -> Result<String, ToolError> {
        Ok(exec_ok(&self.save, &["-t", table], None).await?.stdout)
    }

    /// The chains of `iptables-save -t TABLE` that `keep` accepts, read line by line: at 10k services
    /// the nat table's save output is tens of megabytes, which the proxy must not hold (twice) to learn
    /// ~100k names it mostly discards.
    pub(crate) async fn chains_where(
        &self,
        table: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<BTreeSet<String>, ToolError> {
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
            .map_err(|_| ToolError::Timeout {
                program: program.to_string(),
                after: COMMAND_TIMEOUT,
            })?
            .map_err(spawn_err)?;
        if !status.success() {
            return Err(ToolError::Failed {
                program: program.to_string(),
                args: format!("-t {table}"),
                code: status.code(),
                stderr: err.trim().to_string(),
            });
        }
        Ok(chains)
    }

    /// One atomic `iptables-restore --noflush --counters -w 5 -W 100000` call.
    pub(crate) async fn restore(&self, payload: &str) -> Result<(), ToolError> {
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
    pub(crate) async fn rule_op(
        &self,
        op: &str,
        table: &str,
        chain: &str,
        rule: &str,
    ) -> Result<bool, ToolError> {
        let words = split_rule(rule);
        let mut args = vec!["-w", "5", "-t", table, op, chain];
        args.extend(words.iter().map(String::as_str));
        Ok(exec(&self.cmd, &args, None).await?.success)
    }

    /// `-C || -I`: makes sure a jump rule from a built-in chain is present (prepended, like upstream).
    pub(crate) async fn ensure_rule(&self, table: &str, chain: &str, rule: &str) -> Result<(), ToolError> {
        if self.rule_op("-C", table, chain, rule).await? {
            return Ok(());
        }
        let words = split_rule(rule);
        let mut args = vec!["-w", "5", "-t", table, "-I", chain];
        args.extend(words.iter().map(String::as_str));
        exec_ok(&self.cmd, &args, None).await.map(|_| ())
    }

    /// `-N CHAIN` unless it exists.
    pub(crate) async fn ensure_chain(&self, table: &str, chain: &str) -> Result<(), ToolError> {
        if self.chain_exists(table, chain).await? {
            return Ok(());
        }
        exec_ok(&self.cmd, &["-w", "5", "-t", table, "-N", chain], None)
            .await
            .map(|_| ())
    }

    pub(crate) async fn chain_exists(&self, table: &str, chain: &str) -> Result<bool, ToolError> {
        Ok(
            exec(&self.cmd, &["-w", "5", "-t", table, "-L", chain, "-n"], None)
                .await?
                .success,
        )
    }

    /// Tables whose KUBE-PROXY-CANARY chain is gone: someone flushed the tables (firewalld reload,
    /// `iptables -F`), so the next sync must be full.
    pub(crate) async fn missing_canaries(&self) -> Result<Vec<&'static str>, ToolError> {
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
pub(crate) fn split_rule(rule: &str) -> Vec<String> {
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
pub(crate) fn saved_chains(save_output: &str) -> Vec<String> {
    save_output
        .lines()
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests;
