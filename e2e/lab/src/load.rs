//! The `load` helper subcommand: steady client traffic from inside a lab namespace, for the takeover step.
//! For each target `ip:port` it opens a new connection every 20 ms (one HTTP GET that a pod's hostname
//! server must answer: ok or failed) and holds `--long` connections open, each asking its pod for the name
//! every 100 ms (the server's hold mode) and counted broken at the first error. It prints `ready` once
//! every held connection is up, runs until `--stop-file` exists, then prints one JSON line per target.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

const NEW_EVERY: Duration = Duration::from_millis(20);
const PING_EVERY: Duration = Duration::from_millis(100);
const TIMEOUT: Duration = Duration::from_secs(2);
/// Errors kept per target: enough to say what went wrong.
const KEEP_ERRORS: usize = 5;

/// What one target saw.
#[derive(Debug, Default, Serialize)]
pub struct Tally {
    pub target: String,
    pub new_ok: u64,
    pub new_failed: u64,
    pub long: u64,
    pub long_broken: u64,
    pub pings: u64,
    pub errors: Vec<String>,
}

pub fn main(targets: &[String], long: usize, stop_file: &Path) -> Result<()> {
    let stop: Arc<Path> = Arc::from(stop_file);
    let mut held = Vec::new();
    for t in targets {
        let addr: SocketAddr = t
            .parse()
            .with_context(|| format!("target {t:?} is not ip:port"))?;
        for _ in 0..long {
            held.push((
                t.clone(),
                hold(addr).with_context(|| format!("hold a connection to {t}"))?,
            ));
        }
    }
    println!("ready");
    let news: Vec<(String, JoinHandle<Tally>)> = targets
        .iter()
        .filter_map(|t| t.parse().ok().map(|a| (t.clone(), a)))
        .map(|(t, addr)| {
            let stop = stop.clone();
            (t, std::thread::spawn(move || new_connections(addr, &stop)))
        })
        .collect();
    let pings: Vec<(String, JoinHandle<Pinged>)> = held
        .into_iter()
        .map(|(t, conn)| {
            let stop = stop.clone();
            (t, std::thread::spawn(move || ping(conn, &stop)))
        })
        .collect();
    let mut tallies: Vec<Tally> = Vec::new();
    for (t, h) in news {
        let mut tally = h.join().unwrap_or_default();
        tally.target = t;
        tallies.push(tally);
    }
    for (t, h) in pings {
        let (n, broken) = h.join().unwrap_or((0, Some("ping thread panicked".into())));
        if let Some(tally) = tallies.iter_mut().find(|x| x.target == t) {
            tally.long += 1;
            tally.pings += n;
            if let Some(e) = broken {
                tally.long_broken += 1;
                keep(&mut tally.errors, format!("held connection: {e}"));
            }
        }
    }
    for t in &tallies {
        println!("{}", serde_json::to_string(t)?);
    }
    Ok(())
}

/// Wall-clock time with milliseconds, to line errors up with the proxies' logs.
fn now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:03}", d.as_secs(), d.subsec_millis())
}

fn keep(errors: &mut Vec<String>, e: String) {
    if errors.len() < KEEP_ERRORS {
        errors.push(e);
    }
}

/// New connections until the stop file appears.
fn new_connections(addr: SocketAddr, stop: &Path) -> Tally {
    let mut tally = Tally::default();
    while !stop.exists() {
        match get(addr) {
            Ok(()) => tally.new_ok += 1,
            Err(e) => {
                tally.new_failed += 1;
                keep(&mut tally.errors, format!("{}: new connection: {e:#}", now()));
            }
        }
        std::thread::sleep(NEW_EVERY);
    }
    tally
}

/// One HTTP GET on a new connection; Ok when a 200 with a body came back.
fn get(addr: SocketAddr) -> Result<()> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).context("connect")?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).context("read")?;
    let ok =
        reply.starts_with("HTTP/1.1 200") && reply.split("\r\n\r\n").nth(1).is_some_and(|b| !b.is_empty());
    anyhow::ensure!(ok, "unexpected reply {:?}", reply.lines().next().unwrap_or(""));
    Ok(())
}

/// A held connection: the server's hold mode answers every line with the pod's name.
struct Held {
    write: TcpStream,
    read: BufReader<TcpStream>,
}

fn hold(addr: SocketAddr) -> Result<Held> {
    let s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    let mut held = Held {
        write: s.try_clone()?,
        read: BufReader::new(s),
    };
    held.ask("HOLD")?;
    Ok(held)
}

impl Held {
    fn ask(&mut self, line: &str) -> Result<()> {
        self.write.write_all(format!("{line}\n").as_bytes())?;
        let mut answer = String::new();
        self.read.read_line(&mut answer)?;
        anyhow::ensure!(!answer.trim().is_empty(), "closed by the other side");
        Ok(())
    }
}

/// Pings answered, and the error if the connection broke.
type Pinged = (u64, Option<String>);

/// Pings until the stop file appears or the connection breaks.
fn ping(mut conn: Held, stop: &Path) -> Pinged {
    let mut n = 0;
    while !stop.exists() {
        if let Err(e) = conn.ask("ping") {
            return (n, Some(format!("{}: after {n} pings: {e:#}", now())));
        }
        n += 1;
        std::thread::sleep(PING_EVERY);
    }
    (n, None)
}
