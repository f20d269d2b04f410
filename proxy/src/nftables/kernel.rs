//! One family's `kube-proxy` table in the kernel: apply a transaction (as one netlink batch, or
//! through the `nft` binary for what the netlink encoder does not know), list what the table has,
//! delete it. Only this table is ever named, so foreign tables are never touched.

use std::time::Duration;

use super::netlink;
use super::render::naming::TABLE;
use super::render::{Existing, FullStream, Op, Set, Transaction, family_word, ops_text};
use super::socket::NftSocket;
use crate::exec::{ToolError, exec_within};
use crate::model::Family;

/// nft's time grows with the transaction, like iptables-restore's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const PROGRAM: &str = "nft";

#[derive(Clone, Debug)]
pub struct Nft {
    pub family: Family,
    pub timeout: Duration,
}

impl Nft {
    pub fn new(family: Family) -> Nft {
        Nft {
            family,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    fn fam(&self) -> &'static str {
        family_word(self.family)
    }

    /// nft runs and this namespace has nf_tables (a table can be checked for).
    pub async fn check(&self) -> Result<(), ToolError> {
        exec_ok(
            &["-c", "-f", "-"],
            Some(&format!("add table {} {TABLE}\n", self.fam())),
            self.timeout,
        )
        .await
        .map(|_| ())
    }

    /// One `nft -f -` transaction: all of it or nothing.
    pub async fn apply(&self, text: &str) -> Result<(), ToolError> {
        exec_ok(&["-f", "-"], Some(text), self.timeout).await.map(|_| ())
    }

    /// One transaction as one netlink batch (all of it or nothing), off the async threads. A
    /// transaction the encoder cannot express goes through `nft -f` instead, with a warning: never
    /// lost, only slower. Returns the transaction (to commit), which writer took it and how many
    /// bytes it wrote.
    pub async fn write(&self, tx: Transaction) -> (Transaction, Result<(Writer, usize), ToolError>) {
        let timeout = self.timeout;
        let (tx, result) = off_thread(move || {
            let result = write_netlink(&tx, timeout);
            (tx, result)
        })
        .await;
        match result {
            Ok(bytes) => (tx, Ok((Writer::Netlink, bytes))),
            Err(WriteError::Encode(e)) => {
                tracing::warn!(error = %e, "nftables: netlink encoder cannot express the transaction; using nft -f");
                let text = tx.text();
                let r = self.apply(&text).await.map(|()| (Writer::Binary, text.len()));
                (tx, r)
            }
            Err(WriteError::Kernel(e)) => (tx, Err(e)),
        }
    }

    /// A full transaction, rendered and sent a batch at a time (see [`STREAM_BATCH_OPS`]), off the
    /// async threads; `debug` gets each batch's `nft -f` text appended. A batch the encoder cannot
    /// express goes through `nft -f`. Returns the stream (to commit once it is drained).
    pub async fn write_full(
        &self,
        mut stream: FullStream,
        debug: Option<std::path::PathBuf>,
    ) -> (FullStream, Result<(Writer, usize), ToolError>) {
        let nft = self.clone();
        let runtime = tokio::runtime::Handle::current();
        off_thread(move || {
            let fallback = |text: &str| runtime.block_on(nft.apply(text));
            let fallback: Fallback<'_> = Some(&fallback);
            let result = NftSocket::open(nft.timeout)
                .map_err(|e| ToolError::Netlink(e.to_string()))
                .and_then(|mut socket| {
                    write_stream(
                        &mut socket,
                        &mut stream,
                        STREAM_BATCH_OPS,
                        debug.as_deref(),
                        fallback,
                    )
                });
            (stream, result)
        })
        .await
    }

    /// The chains and sets (maps too) the table has now; none when it does not exist. The listing is
    /// terse (`-t`: no elements), so its cost does not grow with the endpoints.
    pub async fn existing(&self) -> Result<Existing, ToolError> {
        let out = exec_within(
            PROGRAM,
            &["-t", "list", "table", self.fam(), TABLE],
            None,
            self.timeout,
        )
        .await?;
        if !out.success {
            if out.stderr.contains("No such file or directory") {
                return Ok(Existing::default());
            }
            return Err(failed(
                &["-t", "list", "table", self.fam(), TABLE],
                out.code,
                &out.stderr,
            ));
        }
        Ok(parse_listing(&out.stdout))
    }

    /// Deletes the table (switching a node to the iptables mode); `Ok(false)` when there was none.
    pub async fn delete_table(&self) -> Result<bool, ToolError> {
        let args = ["delete", "table", self.fam(), TABLE];
        let out = exec_within(PROGRAM, &args, None, self.timeout).await?;
        if out.success {
            return Ok(true);
        }
        if out.stderr.contains("No such file or directory") {
            return Ok(false);
        }
        Err(failed(&args, out.code, &out.stderr))
    }
}

/// Which way a transaction reached the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    Netlink,
    /// `nft -f`: the fallback for what the encoder does not express.
    Binary,
}

impl Writer {
    pub fn label(self) -> &'static str {
        match self {
            Writer::Netlink => "netlink",
            Writer::Binary => "nft",
        }
    }
}

pub(super) enum WriteError {
    Encode(netlink::EncodeError),
    Kernel(ToolError),
}

fn write_netlink(tx: &Transaction, timeout: Duration) -> Result<usize, WriteError> {
    if tx.ops.is_empty() {
        return Ok(0);
    }
    let mut socket = NftSocket::open(timeout).map_err(kernel_error)?;
    let mut bytes = 0;
    for ops in batches(tx) {
        bytes += write_batch(&mut socket, tx.family(), ops, tx.sets())?;
    }
    Ok(bytes)
}

/// Drains a full transaction's stream into batches of up to `batch_ops` steps (one batch when it
/// recreates the table), cut only between its groups; a batch the encoder cannot express goes to
/// `fallback` as `nft -f` text (none: the write fails). Blocking.
pub fn write_stream(
    socket: &mut NftSocket,
    stream: &mut FullStream,
    batch_ops: usize,
    debug: Option<&std::path::Path>,
    fallback: Fallback<'_>,
) -> Result<(Writer, usize), ToolError> {
    let limit = if stream.one_batch() { usize::MAX } else { batch_ops };
    let (mut batch, mut bytes, mut writer) = (Vec::new(), 0, Writer::Netlink);
    loop {
        let group = stream.next_group();
        let full = group
            .as_ref()
            .is_none_or(|g| batch.len().saturating_add(g.len()) > limit);
        if full && !batch.is_empty() {
            if let Some(path) = debug {
                append_debug(path, &ops_text(stream.family(), &batch));
            }
            bytes += match write_batch(socket, stream.family(), &batch, stream.sets()) {
                Ok(n) => n,
                Err(WriteError::Kernel(e)) => return Err(e),
                Err(WriteError::Encode(e)) => {
                    let Some(fallback) = fallback else {
                        return Err(ToolError::Netlink(e.to_string()));
                    };
                    tracing::warn!(error = %e, "nftables: netlink encoder cannot express a batch; using nft -f");
                    writer = Writer::Binary;
                    let text = ops_text(stream.family(), &batch);
                    fallback(&text)?;
                    text.len()
                }
            };
            batch.clear();
        }
        match group {
            Some(g) => batch.extend(g),
            None => return Ok((writer, bytes)),
        }
    }
}

/// What writes a batch the netlink encoder cannot express (`nft -f` in the daemon).
pub type Fallback<'a> = Option<&'a dyn Fn(&str) -> Result<(), ToolError>>;

fn append_debug(path: &std::path::Path, text: &str) {
    use std::io::Write as _;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(err) = written {
        tracing::warn!(%err, path = %path.display(), "writing debug transaction failed");
    }
}

pub(super) fn kernel_error(e: crate::nftables::socket::NetlinkError) -> WriteError {
    WriteError::Kernel(ToolError::Netlink(e.to_string()))
}

/// Steps per batch when a full sync streams: as fast as larger batches (the kernel's cost per batch
/// grows faster than its size) for a fraction of the memory (docs/BENCHMARKS.md, "nftables mode:
/// memory and first-load batches").
pub const STREAM_BATCH_OPS: usize = 5_000;

/// The ops of a transaction as the daemon sends them (see [`Transaction::batches`]): the kernel binds
/// each anonymous set (one per service port's `numgen` map) by walking every step of its batch, so
/// one batch for 10k services takes minutes (docs/BENCHMARKS.md, P2).
pub fn batches(tx: &Transaction) -> Vec<&[Op]> {
    tx.batches(STREAM_BATCH_OPS)
}

/// One batch; a refusal names the step the kernel refused.
fn write_batch(
    socket: &mut NftSocket,
    family: Family,
    ops: &[Op],
    sets: &[Set],
) -> Result<usize, WriteError> {
    let batch = netlink::encode(family, ops, sets, socket.next_start()).map_err(WriteError::Encode)?;
    socket.apply(&batch).map_err(|e| match e {
        crate::nftables::socket::NetlinkError::Refused { index, errno } => {
            let step = batch
                .op_of_message(index)
                .and_then(|i| ops.get(i))
                .map(|op| ops_text(family, std::slice::from_ref(op)))
                .unwrap_or_else(|| "the batch as a whole".to_string());
            WriteError::Kernel(ToolError::Netlink(format!(
                "{}: {}",
                std::io::Error::from_raw_os_error(errno),
                step.trim_end()
            )))
        }
        other => kernel_error(other),
    })?;
    Ok(batch.bytes.len())
}

/// Runs blocking netlink work off the async threads. Such a task cannot be cancelled; a panic in it
/// is a bug, re-raised here.
pub(super) async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(done) => done,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

async fn exec_ok(args: &[&str], stdin: Option<&str>, limit: Duration) -> Result<String, ToolError> {
    let out = exec_within(PROGRAM, args, stdin, limit).await?;
    if !out.success {
        return Err(failed(args, out.code, &out.stderr));
    }
    Ok(out.stdout)
}

fn failed(args: &[&str], code: Option<i32>, stderr: &str) -> ToolError {
    ToolError::Failed {
        program: PROGRAM.to_string(),
        args: args.join(" "),
        code,
        stderr: stderr.trim().to_string(),
    }
}

/// Chain, set and map names of a `nft list table` listing.
pub fn parse_listing(text: &str) -> Existing {
    let mut existing = Existing::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(kind), Some(name), Some("{")) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        match kind {
            "chain" => {
                existing.chains.insert(name.to_string());
            }
            "set" | "map" => {
                existing.sets.insert(name.to_string());
            }
            _ => {}
        }
    }
    existing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_names_chains_sets_and_maps_only() {
        let text = "table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n\tset cluster-ips {\n\t\ttype ipv4_addr\n\t}\n\n\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t}\n\tchain nat-output {\n\t\ttype nat hook output priority dstnat; policy accept;\n\t\tjump services\n\t}\n\tchain service-ULMVA6XW-ns1/svc1/tcp/p80 {\n\t}\n}\n";
        let e = parse_listing(text);
        assert_eq!(
            e.chains.iter().map(String::as_str).collect::<Vec<_>>(),
            ["nat-output", "service-ULMVA6XW-ns1/svc1/tcp/p80"]
        );
        assert_eq!(
            e.sets.iter().map(String::as_str).collect::<Vec<_>>(),
            ["cluster-ips", "service-ips"]
        );
    }
}
