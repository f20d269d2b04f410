//! nfacct counters, as upstream kube-proxy keeps them (pkg/proxy/metrics): two rules count packets
//! into named kernel accounting objects (INVALID packets dropped in KUBE-FORWARD, NodePort connections
//! to 127.0.0.0/8), and `/metrics` reports them at scrape time. The objects belong to the network
//! namespace. They are created and read with the `nfacct` CLI (Debian's nfacct, in the node image),
//! as conntrack entries are with theirs: two named objects need no netlink code of our own.

use std::collections::BTreeMap;

use crate::exec::{ToolError, exec};
use crate::iptables::render::naming::{NFACCT_CT_STATE_INVALID_DROPPED, NFACCT_LOCALHOST_NODEPORTS};

/// Every counter the rules may name; a rule naming a missing one makes the whole restore fail.
pub const COUNTERS: [&str; 2] = [NFACCT_CT_STATE_INVALID_DROPPED, NFACCT_LOCALHOST_NODEPORTS];

/// Creates the counters that do not exist yet (existing ones keep their counts).
pub async fn ensure() -> Result<(), ToolError> {
    let existing = read().await?;
    for name in COUNTERS {
        if !existing.contains_key(name) {
            run(&["add", name]).await?;
        }
    }
    Ok(())
}

/// Packet counts of every accounting object in this namespace, by name.
pub async fn read() -> Result<BTreeMap<String, u64>, ToolError> {
    Ok(parse_list(&run(&["list"]).await?))
}

/// The counts `/metrics` exports: (INVALID packets dropped, localhost NodePort packets accepted);
/// `None` for a counter that is missing.
pub(crate) async fn read_exported() -> Result<(Option<u64>, Option<u64>), ToolError> {
    let counts = read().await?;
    let count = |name: &str| counts.get(name).copied();
    Ok((
        count(NFACCT_CT_STATE_INVALID_DROPPED),
        count(NFACCT_LOCALHOST_NODEPORTS),
    ))
}

async fn run(args: &[&str]) -> Result<String, ToolError> {
    let out = exec("nfacct", args, None).await?;
    if !out.success {
        return Err(ToolError::Failed {
            program: "nfacct".into(),
            args: args.join(" "),
            code: out.code,
            stderr: out.stderr.trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// Parses `nfacct list`: `{ pkts = 00000000000000000012, bytes = 00000000000000000720 } = name;`.
pub fn parse_list(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (counts, name) = line.rsplit_once("} =")?;
            let name = name.trim().strip_suffix(';')?.trim();
            let pkts = counts
                .split(',')
                .find_map(|kv| kv.trim().trim_start_matches('{').trim().strip_prefix("pkts = "))?;
            Some((name.to_string(), pkts.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests;
