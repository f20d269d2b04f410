//! Setup-only loading of a big ruleset in several iptables-restore calls.
//!
//! iptables-nft-restore 1.8.x spends time quadratic in the number of chains declared in ONE call
//! (see docs/BENCHMARKS.md: 20k chains 8 s, 60k chains ~170 s), so loading the 10k x 100k state as
//! one payload would take minutes before anything is measured. Chunks keep each call small: first
//! the shared chains (KUBE-SERVICES, KUBE-MARK-MASQ, KUBE-DST-*, filter) are declared empty, then
//! each service's own chains travel together, and last the shared chains get their rules and the
//! built-in chains their jumps, so every jump target exists when it is referenced. The kernel
//! ends up with exactly the chains and rules of the full payload; only the number of transactions
//! differs. Measured syncs never use this: they restore the payload the daemon would write.

use std::collections::{BTreeMap, HashMap, HashSet};

use svcnet_proxy::render::Rendered;

/// A payload parsed back into tables: chain declarations and rules per chain, in order.
#[derive(Default)]
struct Table {
    decls: Vec<String>,
    /// (chain, full `-A` line), in payload order.
    rules: Vec<(String, String)>,
}

fn parse(payload: &str) -> Vec<(String, Table)> {
    let mut out: Vec<(String, Table)> = Vec::new();
    for line in payload.lines() {
        if let Some(name) = line.strip_prefix('*') {
            out.push((name.to_string(), Table::default()));
        } else if let Some((_, t)) = out.last_mut() {
            if let Some(decl) = line.strip_prefix(':') {
                t.decls
                    .push(decl.split_whitespace().next().unwrap_or_default().to_string());
            } else if let Some(rest) = line.strip_prefix("-A ") {
                let chain = rest.split_whitespace().next().unwrap_or_default();
                t.rules.push((chain.to_string(), line.to_string()));
            }
        }
    }
    out
}

fn write_table(out: &mut String, table: &str, decls: &[&str], rules: &[&str]) {
    if decls.is_empty() && rules.is_empty() {
        return;
    }
    out.push_str(&format!("*{table}\n"));
    for d in decls {
        out.push_str(&format!(":{d} - [0:0]\n"));
    }
    for r in rules {
        out.push_str(r);
        out.push('\n');
    }
    out.push_str("COMMIT\n");
}

/// Splits the full `payload` of `r` into payloads declaring at most about `max_chains` service chains
/// each, framed by the shared chains; a payload with fewer service chains stays whole.
pub fn chunks(r: &Rendered, payload: &str, max_chains: usize) -> Vec<String> {
    let owned: HashMap<&str, usize> = r
        .owners
        .values()
        .enumerate()
        .flat_map(|(i, chains)| chains.iter().map(move |c| (c.as_str(), i)))
        .collect();
    if owned.len() <= max_chains {
        // Small enough for one call: load exactly what the daemon would write.
        return vec![payload.to_string()];
    }
    let tables = parse(payload);
    // Owner index -> chunk index, filling chunks in owner order.
    let mut chunk_of_owner: BTreeMap<usize, usize> = BTreeMap::new();
    let (mut chunk, mut filled) = (0usize, 0usize);
    for (i, chains) in r.owners.values().enumerate() {
        if filled > 0 && filled + chains.len() > max_chains.max(1) {
            chunk += 1;
            filled = 0;
        }
        chunk_of_owner.insert(i, chunk);
        filled += chains.len();
    }
    let n_chunks = if r.owners.is_empty() { 0 } else { chunk + 1 };
    let which =
        |chain: &str| -> Option<usize> { owned.get(chain).and_then(|o| chunk_of_owner.get(o)).copied() };
    // out[0]: shared chains declared empty (service chains jump to KUBE-MARK-MASQ); then one payload
    // per service chunk; last: the shared chains declared again with their rules and the jumps.
    let last = n_chunks + 1;
    let mut out = vec![String::new(); n_chunks + 2];
    for (name, t) in &tables {
        let declared: HashSet<&str> = t.decls.iter().map(String::as_str).collect();
        for (k, buf) in out.iter_mut().enumerate() {
            let mine = |chain: &str| match which(chain) {
                Some(c) => c + 1 == k,
                None => k == 0 || k == last,
            };
            let decls: Vec<&str> = t.decls.iter().map(String::as_str).filter(|d| mine(d)).collect();
            let rules: Vec<&str> = if k == 0 {
                vec![]
            } else {
                t.rules
                    .iter()
                    // Rules of built-in chains (no declaration) go with the shared chains.
                    .filter(|(c, _)| {
                        if declared.contains(c.as_str()) {
                            mine(c)
                        } else {
                            k == last
                        }
                    })
                    .map(|(_, l)| l.as_str())
                    .collect()
            };
            write_table(buf, name, &decls, &rules);
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

#[cfg(test)]
mod tests;
