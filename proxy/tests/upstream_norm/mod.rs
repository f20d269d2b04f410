//! Upstream kube-proxy's ruleset normalization for tests, reimplemented from its description in
//! pkg/proxy/iptables/proxier_test.go (`sortIPTablesRules`, `assertIPTablesRulesEqual`) and
//! pkg/util/iptables/testing/parse.go (`ParseIPTablesDump`, `ParseRule`, `IPTablesDump.String`):
//! tables sorted by name; chains KUBE-NODEPORTS, KUBE-SERVICES, other KUBE-* by name, then the rest
//! by name; rules of KUBE-NODEPORTS and KUBE-SERVICES (filter and nat) stably sorted by the service
//! name of their comment, the nat "must be the last rule" jump kept last; other chains keep their
//! order; output is every declaration, then every rule chain by chain, then the `-X` lines.

#![allow(dead_code)]

pub mod diff;

/// One parsed `iptables-restore` payload.
#[derive(Debug, Default)]
pub struct Dump {
    tables: Vec<Table>,
}

#[derive(Debug)]
struct Table {
    name: String,
    chains: Vec<Chain>,
}

#[derive(Debug)]
struct Chain {
    name: String,
    packets: u64,
    bytes: u64,
    rules: Vec<Rule>,
    deleted: bool,
}

#[derive(Debug)]
struct Rule {
    raw: String,
    comment: Option<String>,
}

const NODEPORTS: &str = "KUBE-NODEPORTS";
const SERVICES: &str = "KUBE-SERVICES";

/// What `assertIPTablesRulesEqual` compares: `(expected, result)` with leading blanks trimmed and the
/// result sorted. The expected text is not sorted upstream either.
pub fn normalize_pair(expected: &str, result: &str) -> Result<(String, String), String> {
    let expected = trim_left(expected).to_string();
    let result = sort_rules(trim_left(result))?;
    Ok((expected, result))
}

/// What `assertIPTablesChainEqual` compares: `(expected, result)`, the result being the raw rules of
/// one chain, a line each (empty when the table or chain is absent).
pub fn chain_pair(
    expected: &str,
    result: &str,
    table: &str,
    chain: &str,
) -> Result<(String, String), String> {
    let dump = parse(trim_left(result))?;
    let rules = dump
        .tables
        .iter()
        .find(|t| t.name == table)
        .and_then(|t| t.chains.iter().find(|c| c.name == chain))
        .map(|c| c.rules.iter().map(|r| format!("{}\n", r.raw)).collect())
        .unwrap_or_default();
    Ok((trim_left(expected).to_string(), rules))
}

/// `strings.TrimLeft(s, " \t\n")`.
pub fn trim_left(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\n'])
}

/// Upstream's `sortIPTablesRules`: parse, reorder, print.
pub fn sort_rules(data: &str) -> Result<String, String> {
    sort_rules_and(data, &[])
}

/// [`sort_rules`] after stably sorting the rules of these `(table, chain)`s by service port (the
/// comment up to its first space): for rules whose order upstream leaves to Go's map iteration over
/// service ports, which its own fixtures (one port per service in those chains) never show.
pub fn sort_rules_and(data: &str, by_port: &[(&str, &str)]) -> Result<String, String> {
    let mut dump = parse(data)?;
    for &(table, chain) in by_port {
        if let Some(c) = dump.chain_mut(table, chain) {
            c.rules.sort_by(|a, b| port_name(a).cmp(port_name(b)));
        }
    }
    dump.tables.sort_by(|a, b| a.name.cmp(&b.name));
    for table in &mut dump.tables {
        table
            .chains
            .sort_by(|a, b| chain_key(&a.name).cmp(&chain_key(&b.name)));
    }
    for table in ["filter", "nat"] {
        for chain in [NODEPORTS, SERVICES] {
            if let Some(c) = dump.chain_mut(table, chain) {
                sort_by_service(c, table == "nat" && chain == SERVICES)?;
            }
        }
    }
    Ok(dump.to_string())
}

/// Chain order: KUBE-NODEPORTS, KUBE-SERVICES, other KUBE-* by name, non-KUBE-* by name.
fn chain_key(name: &str) -> (u8, &str) {
    let rank = match name {
        NODEPORTS => 0,
        SERVICES => 1,
        n if n.starts_with("KUBE-") => 2,
        _ => 3,
    };
    (rank, name)
}

/// `sort.SliceStable` with `orderByCommentServiceName`. That ordering is only a strict weak order
/// when every rule has a comment (a rule without one compares equal to every other rule, and Go's
/// result then depends on its merge algorithm), so a rule without a comment is reported instead.
fn sort_by_service(chain: &mut Chain, last_rule_last: bool) -> Result<(), String> {
    if let Some(r) = chain.rules.iter().find(|r| r.comment.is_none()) {
        return Err(format!(
            "rule without a comment in {} cannot be ordered as upstream orders it: {}",
            chain.name, r.raw
        ));
    }
    let is_last = |r: &Rule| {
        r.comment
            .as_deref()
            .is_some_and(|c| c.contains("must be the last rule"))
    };
    chain.rules.sort_by(|a, b| {
        if last_rule_last {
            match (is_last(a), is_last(b)) {
                (true, true) => return std::cmp::Ordering::Equal,
                (true, false) => return std::cmp::Ordering::Greater,
                (false, true) => return std::cmp::Ordering::Less,
                (false, false) => {}
            }
        }
        service_name(a).cmp(service_name(b))
    });
    Ok(())
}

/// The service port name of a rule's comment: the comment up to its first space.
fn port_name(rule: &Rule) -> &str {
    let c = rule.comment.as_deref().unwrap_or("");
    c.split(' ').next().unwrap_or(c)
}

/// The service name of a rule's comment: the comment up to its first space or colon.
fn service_name(rule: &Rule) -> &str {
    let c = rule.comment.as_deref().unwrap_or("");
    c.find([' ', ':']).map_or(c, |i| &c[..i])
}

impl Dump {
    fn chain_mut(&mut self, table: &str, chain: &str) -> Option<&mut Chain> {
        let t = self.tables.iter_mut().find(|t| t.name == table)?;
        t.chains.iter_mut().find(|c| c.name == chain)
    }
}

impl std::fmt::Display for Dump {
    /// `IPTablesDump.String()`: declarations, rules chain by chain, `-X` lines, COMMIT.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for t in &self.tables {
            writeln!(f, "*{}", t.name)?;
            for c in &t.chains {
                writeln!(f, ":{} - [{}:{}]", c.name, c.packets, c.bytes)?;
            }
            for c in &t.chains {
                for r in &c.rules {
                    writeln!(f, "{}", r.raw)?;
                }
            }
            for c in t.chains.iter().filter(|c| c.deleted) {
                writeln!(f, "-X {}", c.name)?;
            }
            writeln!(f, "COMMIT")?;
        }
        Ok(())
    }
}

enum State {
    Table,
    Declarations,
    Rules,
}

/// `ParseIPTablesDump`: the same states, line forms and errors.
pub fn parse(data: &str) -> Result<Dump, String> {
    let mut dump = Dump::default();
    let mut state = State::Table;
    for raw in data.trim_matches('\n').split('\n') {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let State::Declarations = state {
            if let Some((name, packets, bytes)) = chain_declaration(line) {
                let table = dump.tables.last_mut().ok_or("chain outside a table")?;
                table.chains.push(Chain {
                    name: name.to_string(),
                    packets,
                    bytes,
                    rules: Vec::new(),
                    deleted: false,
                });
                continue;
            }
            state = State::Rules;
        }
        match state {
            State::Table => {
                let name = line.strip_prefix('*').ok_or_else(|| {
                    format!(
                        "could not parse iptables data (table {} starts with {line:?} not a table name)",
                        dump.tables.len() + 1
                    )
                })?;
                dump.tables.push(Table {
                    name: name.to_string(),
                    chains: Vec::new(),
                });
                state = State::Declarations;
            }
            State::Declarations => unreachable!("handled above"),
            State::Rules => {
                if line == "COMMIT" {
                    state = State::Table;
                } else if let Some((chain, _)) = line.strip_prefix("-A ").and_then(|r| r.split_once(' ')) {
                    let c = current_chain(&mut dump, chain)
                        .map_err(|e| format!("error parsing rule {line:?}: {e}"))?;
                    if c.deleted {
                        return Err(format!("cannot add rules to deleted chain {chain:?}"));
                    }
                    c.rules.push(parse_rule(line)?);
                } else if let Some(chain) = line.strip_prefix("-X ") {
                    let c = current_chain(&mut dump, chain)
                        .map_err(|e| format!("error parsing rule {line:?}: {e}"))?;
                    if !c.rules.is_empty() {
                        return Err(format!("cannot delete chain {chain:?} after adding rules"));
                    }
                    c.deleted = true;
                } else {
                    return Err(format!("error parsing rule {line:?}"));
                }
            }
        }
    }
    match state {
        State::Table => Ok(dump),
        _ => Err("could not parse iptables data (no COMMIT line?)".to_string()),
    }
}

/// `^:([^ ]*) - \[([0-9]*):([0-9]*)\]$`; an empty counter reads as 0, as `strconv.ParseUint` fails.
fn chain_declaration(line: &str) -> Option<(&str, u64, u64)> {
    let (name, rest) = line.strip_prefix(':')?.split_once(' ')?;
    let (p, b) = rest.strip_prefix("- [")?.strip_suffix(']')?.split_once(':')?;
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if !digits(p) || !digits(b) {
        return None;
    }
    Some((name, p.parse().unwrap_or(0), b.parse().unwrap_or(0)))
}

/// The chain of that name in the table being parsed (looked up by table name, as upstream does).
fn current_chain<'a>(dump: &'a mut Dump, chain: &str) -> Result<&'a mut Chain, String> {
    let table = dump.tables.last().map(|t| t.name.clone()).ok_or("no table")?;
    let t = dump
        .tables
        .iter_mut()
        .find(|t| t.name == table)
        .ok_or("no such table")?;
    t.chains
        .iter_mut()
        .find(|c| c.name == chain)
        .ok_or_else(|| format!("no such chain {chain:?}"))
}

/// Parameters `ParseRule` knows: (name, takes a value, may be negated).
const PARAMS: &[(&str, bool, bool)] = &[
    ("-A", true, false),
    ("--comment", true, false),
    ("-p", true, true),
    ("-s", true, true),
    ("--src-type", true, true),
    ("--sport", true, true),
    ("-d", true, true),
    ("--dst-type", true, true),
    ("--dport", true, true),
    ("--match-set", true, true),
    ("-j", true, false),
    ("--random-fully", false, false),
    ("--probability", true, false),
    ("--to-destination", true, false),
    ("--rcheck", false, true),
    ("--mark", true, true),
    ("--ctstate", true, true),
    ("--name", true, false),
    ("--seconds", true, false),
    ("--set", false, true),
    ("--reap", false, false),
    ("--mode", true, false),
];

/// `ParseRule(rule, false)`: words (a quoted string is one word, quotes trimmed), `-m MODULE`
/// skipped, unknown words skipped; the comment is kept (the last `--comment` wins).
fn parse_rule(line: &str) -> Result<Rule, String> {
    let words = words(line);
    if words.len() < 2 || words[0] != "-A" {
        return Err(r#"bad iptables rule (does not start with "-A CHAIN")"#.to_string());
    }
    if words.len() < 3 {
        return Err("bad iptables rule (no match rules)".to_string());
    }
    let mut comment = None;
    let mut negated = false;
    let mut w = 0;
    while w < words.len() {
        if words[w] == "-m" && w < words.len() - 1 {
            w += 2;
            continue;
        }
        if words[w] == "!" {
            negated = true;
            w += 1;
            continue;
        }
        if let Some(&(name, value, negatable)) = PARAMS.iter().find(|p| p.0 == words[w]) {
            if negated && !negatable {
                return Err(format!("cannot negate parameter {name:?}"));
            }
            if value && w == words.len() - 1 {
                return Err(format!("parameter {name:?} requires an argument"));
            }
            if name == "--comment" {
                comment = Some(words[w + 1].to_string());
            }
            w += if value { 2 } else { 1 };
        } else {
            w += 1;
        }
        negated = false;
    }
    Ok(Rule {
        raw: line.to_string(),
        comment,
    })
}

/// Go's `\s`.
fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// All matches of `(?:^|\s)("[^"]*"|[^"]\S*)` (leftmost-first, non-overlapping), group 1 with
/// every leading and trailing `"` trimmed.
fn words(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    // The group starting at q: a quoted string, or any non-quote byte and the non-space run after it.
    let group = |q: usize| -> Option<usize> {
        match b.get(q)? {
            b'"' => b[q + 1..].iter().position(|&c| c == b'"').map(|i| q + i + 2),
            _ => Some(q + 1 + b[q + 1..].iter().take_while(|&&c| !is_space(c)).count()),
        }
    };
    let mut out = Vec::new();
    let mut p = 0;
    while p < b.len() {
        let found = if p == 0 { group(0).map(|e| (0, e)) } else { None }
            .or_else(|| is_space(b[p]).then(|| group(p + 1).map(|e| (p + 1, e))).flatten());
        match found {
            Some((start, end)) => {
                out.push(line[start..end].trim_matches('"'));
                p = end;
            }
            None => p += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_the_go_regexp() {
        assert_eq!(
            words(r#"-A X -m comment --comment "a b:c" -j Y"#),
            vec!["-A", "X", "-m", "comment", "--comment", "a b:c", "-j", "Y"]
        );
    }
}
