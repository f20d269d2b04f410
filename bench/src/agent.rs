//! The in-namespace agent: a child process of the bench (`svcnet-bench agent`, started through
//! `ip netns exec`) that owns the endpoint listener and does the timed kernel work from inside the
//! namespace, so no `ip netns exec` start-up cost lands in a measurement.
//!
//! Line protocol on stdin/stdout: the agent prints `ready`, then answers each request with
//! `ok ...` or `err <message>`:
//! - `connect <ip:port> <n>`: n new TCP connections, each timed from connect() to its return (SYN
//!   out through nat OUTPUT, SYN-ACK back); answers the times in nanoseconds.
//! - `restore <program> <file> [<limit ms>]`: pipes the file into `<program> --noflush -w 5` (as
//!   the daemon does; `nft -f -` when the program is `nft`); answers the wall time in nanoseconds, or `killed <ns>` when it ran past the
//!   limit and was killed (nft transactions are atomic: nothing of it is applied).
//! - `save <program>`: runs `<program> -t nat` (the daemon's full sync reads the nat table first to
//!   find stale chains); answers the wall time in nanoseconds.
//! - `replace`, `add`, `churn`, `probe`: part U's API writes and probes ([`crate::upstream::ops`]).
//!
//! The agent exits at end of input, so it never outlives the bench.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::error::BenchError;
use crate::netns::Netns;
use crate::upstream::ops;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Child side: serve requests until stdin closes.
pub fn serve(listen: SocketAddr) -> Result<(), BenchError> {
    let listener = TcpListener::bind(listen).map_err(|e| BenchError::io(format!("bind {listen}"), e))?;
    // Accept and drop: the handshake is already complete when accept() returns.
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
        }
    });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let say = |out: &mut std::io::StdoutLock<'_>, line: &str| -> Result<(), BenchError> {
        writeln!(out, "{line}")
            .and_then(|_| out.flush())
            .map_err(|e| BenchError::io("agent stdout", e))
    };
    say(&mut out, "ready")?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| BenchError::io("agent stdin", e))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            ["connect", addr, n] => connect_request(addr, n),
            ["restore", program, file] => restore_request(program, file, None),
            ["restore", program, file, limit_ms] => restore_request(program, file, Some(limit_ms)),
            ["save", program] => save_request(program),
            // Part U's timed API writes and probes (crate::upstream::ops).
            ["replace", api, rest @ ..] => ops::replace(api, rest),
            ["add", api, rest @ ..] => ops::add(api, rest),
            ["churn", api, rest @ ..] => ops::churn(api, rest),
            ["probe", rest @ ..] => ops::probe(rest),
            _ => Err(format!("unknown request {line:?}")),
        };
        match reply {
            Ok(r) => say(&mut out, &format!("ok {r}"))?,
            Err(e) => say(&mut out, &format!("err {}", e.replace('\n', " | ")))?,
        }
    }
    Ok(())
}

fn connect_request(addr: &str, n: &str) -> Result<String, String> {
    let addr: SocketAddr = addr.parse().map_err(|e| format!("address {addr}: {e}"))?;
    let n: usize = n.parse().map_err(|e| format!("count {n}: {e}"))?;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        times.push(connect_once(addr)?.as_nanos().to_string());
    }
    Ok(times.join(" "))
}

/// One timed connect. SO_LINGER 0 closes with RST: no TIME_WAIT, so thousands of probes never run
/// out of ports. SO_SNDTIMEO bounds a blocking connect when a rule is missing.
fn connect_once(addr: SocketAddr) -> Result<Duration, String> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).map_err(|e| e.to_string())?;
    s.set_linger(Some(Duration::ZERO)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(CONNECT_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    s.connect(&addr.into())
        .map_err(|e| format!("connect {addr}: {e}"))?;
    Ok(t.elapsed())
}

fn restore_request(program: &str, file: &str, limit_ms: Option<&str>) -> Result<String, String> {
    let limit = match limit_ms {
        Some(v) => Some(Duration::from_millis(
            v.parse().map_err(|e| format!("limit {v}: {e}"))?,
        )),
        None => None,
    };
    let payload = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
    let t = Instant::now();
    // nft reads one transaction from stdin; the iptables tools add to the tables as the daemon does.
    let args: &[&str] = if program == "nft" {
        &["-f", "-"]
    } else {
        &["--noflush", "-w", "5"]
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    // Drain stderr on a thread so a chatty failure cannot block the child while we poll.
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
            text
        })
    });
    // Feed stdin on a thread too: iptables-restore reads as it parses, so a blocking write would
    // last as long as the restore itself and the limit could never fire.
    let writer = child
        .stdin
        .take()
        .map(|mut stdin| std::thread::spawn(move || stdin.write_all(&payload).map_err(|e| e.to_string())));
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(st);
        }
        if limit.is_some_and(|l| t.elapsed() > l) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        // Coarse enough to cost nothing, fine enough for millisecond restores.
        std::thread::sleep(Duration::from_micros(200));
    };
    let took = t.elapsed();
    let err = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let wrote = writer.and_then(|h| h.join().ok()).unwrap_or(Ok(()));
    match status {
        None => Ok(format!("killed {}", took.as_nanos())),
        Some(st) if st.success() => {
            wrote.map_err(|e| format!("{program} stdin: {e}"))?;
            Ok(took.as_nanos().to_string())
        }
        Some(_) => Err(format!(
            "{program}: {}",
            err.chars().take(400).collect::<String>()
        )),
    }
}

fn save_request(program: &str) -> Result<String, String> {
    let t = Instant::now();
    let out = Command::new(program)
        .args(["-t", "nat"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    let took = t.elapsed();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{program}: {}",
            err.chars().take(400).collect::<String>()
        ));
    }
    Ok(took.as_nanos().to_string())
}

/// Outcome of a restore with a time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restored {
    Done(Duration),
    /// Still running at the limit and killed after this long.
    Killed(Duration),
}

/// Parent side: one agent process inside one namespace.
pub struct Agent {
    netns: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Agent {
    pub fn spawn(ns: &Netns, listen: SocketAddr) -> Result<Agent, BenchError> {
        let exe = std::env::current_exe().map_err(|e| BenchError::io("current_exe", e))?;
        let mut child = ns
            .command(&exe.to_string_lossy())
            .args(["agent", "--listen", &listen.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| BenchError::io("spawn agent", e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::Agent {
                netns: ns.name.clone(),
                message: "no pipes".into(),
            });
        };
        let mut agent = Agent {
            netns: ns.name.clone(),
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        };
        let first = agent.read_line()?;
        if first != "ready" {
            return Err(agent.fail(format!("expected ready, got {first:?}")));
        }
        Ok(agent)
    }

    fn fail(&self, message: String) -> BenchError {
        BenchError::Agent {
            netns: self.netns.clone(),
            message,
        }
    }

    fn read_line(&mut self) -> Result<String, BenchError> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| BenchError::io("agent stdout", e))?;
        if n == 0 {
            return Err(self.fail("agent exited".into()));
        }
        Ok(line.trim_end().to_string())
    }

    /// Sends one request line; the reply after `ok`, or the error after `err`.
    pub(crate) fn call(&mut self, request: &str) -> Result<String, String> {
        let sent = match self.stdin.as_mut() {
            Some(s) => writeln!(s, "{request}").and_then(|_| s.flush()),
            None => return Err("agent stdin closed".into()),
        };
        sent.map_err(|e| format!("agent stdin: {e}"))?;
        let line = self.read_line().map_err(|e| e.to_string())?;
        match line.split_once(' ').unwrap_or((line.as_str(), "")) {
            ("ok", rest) => Ok(rest.to_string()),
            ("err", rest) => Err(rest.to_string()),
            _ => Err(format!("unexpected reply {line:?}")),
        }
    }

    /// Times `n` new TCP connections to `addr`, in microseconds.
    pub fn connect_us(&mut self, addr: SocketAddr, n: usize) -> Result<Vec<f64>, BenchError> {
        let reply = self
            .call(&format!("connect {addr} {n}"))
            .map_err(|m| self.fail(m))?;
        reply
            .split_whitespace()
            .map(|t| t.parse::<f64>().map(|ns| ns / 1e3))
            .collect::<Result<_, _>>()
            .map_err(|e| self.fail(format!("bad times: {e}")))
    }

    /// Runs `program --noflush -w 5` on `payload` inside the namespace; returns its wall time.
    pub fn restore(&mut self, program: &str, payload: &str) -> Result<Duration, BenchError> {
        match self.restore_limited(program, payload, None)? {
            Restored::Done(d) => Ok(d),
            Restored::Killed(d) => Err(self.fail(format!("restore killed after {d:?} without a limit"))),
        }
    }

    /// Like [`Agent::restore`], but kills the restore once it runs longer than `limit`.
    pub fn restore_limited(
        &mut self,
        program: &str,
        payload: &str,
        limit: Option<Duration>,
    ) -> Result<Restored, BenchError> {
        let mut file = tempfile::NamedTempFile::new().map_err(|e| BenchError::io("tempfile", e))?;
        file.write_all(payload.as_bytes())
            .map_err(|e| BenchError::io("write payload", e))?;
        let path = file.path().to_string_lossy().to_string();
        let request = match limit {
            Some(l) => format!("restore {program} {path} {}", l.as_millis()),
            None => format!("restore {program} {path}"),
        };
        let reply = self.call(&request).map_err(|message| BenchError::Restore {
            netns: self.netns.clone(),
            message,
        })?;
        match reply.strip_prefix("killed ") {
            Some(t) => Ok(Restored::Killed(self.duration(t)?)),
            None => Ok(Restored::Done(self.duration(&reply)?)),
        }
    }

    /// Runs `program -t nat` inside the namespace; returns its wall time.
    pub fn save(&mut self, program: &str) -> Result<Duration, BenchError> {
        let reply = self.call(&format!("save {program}")).map_err(|m| self.fail(m))?;
        self.duration(&reply)
    }

    fn duration(&self, reply: &str) -> Result<Duration, BenchError> {
        let ns: u64 = reply
            .trim()
            .parse()
            .map_err(|e| self.fail(format!("bad time {reply:?}: {e}")))?;
        Ok(Duration::from_nanos(ns))
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // End of input stops the agent; kill is the fallback for a wedged one.
        drop(self.stdin.take());
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
