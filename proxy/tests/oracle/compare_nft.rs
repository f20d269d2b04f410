//! Comparing two nodes' `nft list table <family> kube-proxy` (nftables mode). Both tables are listed
//! by the same nft binary from the kernel, so rule text is comparable as it is; what the normalization
//! takes away is only what the kernel or the writing order decides (docs/proxy-rules.md, "Differences
//! from upstream kube-proxy"):
//! - the order of the table's chains, sets and maps: the kernel lists them in creation order, which
//!   depends on the order services appeared and on each writer's transaction order; sorted by kind
//!   and name;
//! - the order of set and map elements: a hash set lists them by bucket (a per-set random seed);
//!   sorted, one per line;
//! - on upstream's side only, per-service chains that are empty and referenced by nothing: upstream
//!   flushes a chain that fell out of use and deletes it at its first sync at least a second later
//!   (kernels before 6.2 notice late that a map element no longer refers to it; pkg/proxy/nftables
//!   `staleChains`), so between two syncs its table holds them; svcnet deletes them in the same
//!   transaction. Dropped and counted ([`Compared::flushed`]); an empty unreferenced chain in svcnet's
//!   table is a difference.

use crate::upstream_norm::diff;

/// The outcome of one comparison.
#[derive(Debug, Default)]
pub struct Compared {
    /// None when the normalized tables agree, else the unified diff.
    pub diff: Option<String>,
    /// Flushed chains dropped from upstream's table.
    pub flushed: usize,
}

/// One top-level object of the table: its header line (`chain name {`) and its body lines.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Block {
    header: String,
    body: Vec<String>,
}

/// The table's own lines (header, comment) and its objects.
#[derive(Debug, Default)]
struct Table {
    head: Vec<String>,
    blocks: Vec<Block>,
}

/// Splits `nft list table` output into the table's lines and its objects; element lists are
/// re-printed one element per line, sorted.
fn parse(text: &str) -> Result<Table, String> {
    let mut table = Table::default();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty() || t == "}" {
            continue;
        }
        if !t.ends_with('{') || t.starts_with("table ") {
            table.head.push(t.to_string());
            continue;
        }
        let mut block = Block {
            header: t.to_string(),
            body: Vec::new(),
        };
        loop {
            let Some(l) = lines.next() else {
                return Err(format!("unterminated {}", block.header));
            };
            let b = l.trim();
            if b == "}" {
                break;
            }
            if let Some(rest) = b.strip_prefix("elements = {") {
                let mut text = rest.to_string();
                while !balanced(&text) {
                    let Some(more) = lines.next() else {
                        return Err(format!("unterminated elements of {}", block.header));
                    };
                    text.push(' ');
                    text.push_str(more.trim());
                }
                let inner = text.trim_end().strip_suffix('}').unwrap_or(&text);
                let mut elements = split_top_level(inner);
                elements.sort();
                block.body.push("elements = {".into());
                block.body.extend(elements.into_iter().map(|e| format!("  {e}")));
                block.body.push("}".into());
            } else if !b.is_empty() {
                block.body.push(b.to_string());
            }
        }
        table.blocks.push(block);
    }
    Ok(table)
}

/// Whether `text` (after an opening `{`) closes it: one more `}` than `{` outside quotes.
fn balanced(text: &str) -> bool {
    let mut depth = 1i32;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '{' if !quoted => depth += 1,
            '}' if !quoted => depth -= 1,
            _ => {}
        }
    }
    depth <= 0
}

/// `a, b { c, d }, "e, f"` -> [`a`, `b { c, d }`, `"e, f"`].
fn split_top_level(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut cur) = (0i32, false, String::new());
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '{' if !quoted => depth += 1,
            '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out.retain(|e| !e.is_empty());
    out
}

/// A chain's name from its header (`chain NAME {`).
fn chain_name(header: &str) -> Option<&str> {
    header.strip_prefix("chain ")?.strip_suffix('{').map(str::trim)
}

/// Removes upstream's flushed per-service chains (empty, named after a service port, i.e. with a
/// `/`, and named by no rule or element); returns how many.
fn drop_flushed(table: &mut Table) -> usize {
    let words: Vec<String> = table
        .blocks
        .iter()
        .flat_map(|b| b.body.iter())
        .flat_map(|l| {
            l.split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let before = table.blocks.len();
    table.blocks.retain(|b| {
        let flushed = b.body.is_empty()
            && chain_name(&b.header).is_some_and(|n| n.contains('/') && !words.iter().any(|w| w == n));
        !flushed
    });
    before - table.blocks.len()
}

fn print(table: &Table) -> String {
    let mut blocks = table.blocks.clone();
    blocks.sort();
    let mut out = table.head.join("\n");
    out.push('\n');
    for b in blocks {
        out.push_str(&b.header);
        out.push('\n');
        for l in &b.body {
            out.push_str("  ");
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Both tables normalized (upstream's flushed chains dropped), and compared.
pub fn compare(what: &str, upstream: &str, svcnet: &str) -> Compared {
    let mut up = match parse(upstream) {
        Ok(t) => t,
        Err(e) => {
            return Compared {
                diff: Some(format!("{what}: cannot parse upstream's table: {e}\n{upstream}")),
                flushed: 0,
            };
        }
    };
    let sv = match parse(svcnet) {
        Ok(t) => t,
        Err(e) => {
            return Compared {
                diff: Some(format!("{what}: cannot parse svcnet's table: {e}\n{svcnet}")),
                flushed: 0,
            };
        }
    };
    let flushed = drop_flushed(&mut up);
    let (up, sv) = (print(&up), print(&sv));
    Compared {
        diff: (up != sv).then(|| {
            diff::unified(
                &format!("{what} upstream kube-proxy"),
                &up,
                &format!("{what} svcnet-proxy --proxy-mode nftables"),
                &sv,
            )
        }),
        flushed,
    }
}
