//! Upstream's normalization of nftables rulesets before comparing them (`sortNFTablesTransaction` in
//! pkg/proxy/nftables/helpers_test.go): blank lines and `#` comments dropped, lines ordered by object
//! type (table, chain, rule, set, map, element, anything else), then by object name (the fifth word),
//! rules keeping their order within a chain, other lines of one object sorted as text.

/// Upstream's `objectOrder`: higher sorts earlier.
fn object_order(kind: &str) -> u8 {
    match kind {
        "table" => 10,
        "chain" => 9,
        "rule" => 8,
        "set" => 7,
        "map" => 6,
        "element" => 5,
        _ => 0,
    }
}

/// The sorted lines joined by `\n` (no trailing newline), as upstream returns them. Lines of fewer
/// than five words (which upstream's comparator leaves unordered) are an error.
pub fn sort_transaction(tx: &str) -> Result<String, String> {
    let lines: Vec<&str> = tx
        .split('\n')
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut keyed = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split(' ').collect();
        let (Some(kind), Some(name)) = (words.get(1), words.get(4)) else {
            return Err(format!("line {} has fewer than 5 words: {line:?}", i + 1));
        };
        // Rules: original position; anything else: the whole line (ties keep their order: stable).
        let (index, text) = if *kind == "rule" { (i, "") } else { (0, *line) };
        keyed.push(((std::cmp::Reverse(object_order(kind)), *name, index, text), *line));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(keyed.into_iter().map(|(_, l)| l).collect::<Vec<_>>().join("\n"))
}

/// Both texts normalized.
pub fn normalize_pair(expected: &str, result: &str) -> Result<(String, String), String> {
    Ok((sort_transaction(expected)?, sort_transaction(result)?))
}
