//! Text -> [`Ruleset`]: iptables-save output and iptables-restore payloads.
//!
//! Restore semantics are applied in order, like `iptables-restore --noflush`: a `:CHAIN - [0:0]`
//! line for an existing user chain flushes it, `-F`/`-X` flush/delete, `-A` appends, `-I`
//! inserts, `-D` deletes. Several `*table` sections (filter then nat) may share one text.

use super::lex::{Token, tokenize};
use super::parse_rule::parse_rule;
use super::rules::{Chain, Policy, Ruleset, Table, is_builtin_chain};

/// A line the parser cannot understand.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

/// Parses iptables-save output or an iptables-restore payload.
pub fn parse(text: &str) -> Result<Ruleset, ParseError> {
    let mut parser = Parser::default();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        parser
            .line(line, raw)
            .map_err(|message| ParseError { line, message })?;
    }
    Ok(parser.ruleset)
}

#[derive(Default)]
struct Parser {
    ruleset: Ruleset,
    table: Option<String>,
}

impl Parser {
    fn line(&mut self, line: usize, raw: &str) -> Result<(), String> {
        let text = raw.trim();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        if let Some(name) = text.strip_prefix('*') {
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(format!("bad table header {text:?}"));
            }
            self.ruleset.tables.entry(name.to_string()).or_default();
            self.table = Some(name.to_string());
            return Ok(());
        }
        if text == "COMMIT" {
            if self.table.take().is_none() {
                return Err("COMMIT outside a table".to_string());
            }
            return Ok(());
        }
        // `iptables-save -c` prefixes rules with [packets:bytes].
        let body = match text.strip_prefix('[') {
            Some(rest) => rest
                .split_once(']')
                .map(|(_, after)| after.trim_start())
                .ok_or_else(|| "unterminated [packets:bytes] counter".to_string())?,
            None => text,
        };
        if let Some(decl) = body.strip_prefix(':') {
            return self.declare(decl);
        }
        self.command(line, text, body)
    }

    /// A command line (`-A`, `-I`, `-D`, `-F`, `-X`, `-N`, `-P`, `-Z`) of the current table.
    fn command(&mut self, line: usize, text: &str, body: &str) -> Result<(), String> {
        let tokens = tokenize(body)?;
        let Some((command, args)) = tokens.split_first() else {
            return Ok(());
        };
        let table = self.current_table(&command.text)?;
        let words: Vec<&str> = args.iter().map(|t| t.text.as_str()).collect();
        match command.text.as_str() {
            "-A" | "--append" | "-I" | "--insert" => add_rule(table, line, text, &command.text, args)?,
            "-D" | "--delete" => delete_rule(table, args)?,
            "-F" | "--flush" => match words.first() {
                Some(name) => chain_mut(table, name)?.rules.clear(),
                None => table.chains.values_mut().for_each(|c| c.rules.clear()),
            },
            "-X" | "--delete-chain" => match words.first() {
                Some(name) => {
                    if is_builtin_chain(name) {
                        return Err(format!("cannot delete built-in chain {name}"));
                    }
                    // iptables-restore payloads flush before delete; deleting an absent chain
                    // is what a stale-chain cleanup of an already clean table looks like.
                    table.chains.remove(*name);
                }
                None => table.chains.retain(|name, _| is_builtin_chain(name)),
            },
            "-N" | "--new-chain" => {
                let name = words.first().ok_or("-N without a chain")?;
                if table.chains.contains_key(*name) {
                    return Err(format!("chain {name} already exists"));
                }
                table.chains.insert(name.to_string(), Chain::default());
            }
            "-P" | "--policy" => {
                let (name, policy) = match words.as_slice() {
                    [name, policy] => (*name, parse_policy(policy)?),
                    _ => return Err("-P needs a chain and a policy".to_string()),
                };
                if !is_builtin_chain(name) {
                    return Err(format!("-P on user chain {name}"));
                }
                table.chains.entry(name.to_string()).or_default().policy = policy;
            }
            "-Z" | "--zero" => {}
            other => return Err(format!("unsupported command {other:?}")),
        }
        Ok(())
    }

    fn current_table(&mut self, command: &str) -> Result<&mut Table, String> {
        let name = self
            .table
            .as_ref()
            .ok_or_else(|| format!("{command} before any *table line"))?;
        self.ruleset
            .tables
            .get_mut(name)
            .ok_or_else(|| format!("table {name} vanished"))
    }

    /// `:NAME POLICY [packets:bytes]`.
    fn declare(&mut self, decl: &str) -> Result<(), String> {
        let table = self.current_table("chain declaration")?;
        let mut words = decl.split_whitespace();
        let name = words.next().ok_or("chain declaration without a name")?;
        let policy = words.next().unwrap_or("-");
        if is_builtin_chain(name) {
            let chain = table.chains.entry(name.to_string()).or_default();
            chain.policy = parse_policy(policy)?;
        } else {
            if policy != "-" {
                return Err(format!("user chain {name} cannot have policy {policy}"));
            }
            // Declaring an existing user chain in a restore payload flushes it.
            table.chains.insert(name.to_string(), Chain::default());
        }
        Ok(())
    }
}

fn parse_policy(word: &str) -> Result<Option<Policy>, String> {
    match word {
        "ACCEPT" => Ok(Some(Policy::Accept)),
        "DROP" => Ok(Some(Policy::Drop)),
        // iptables-restore accepts "-" for built-in chains: keep the current policy (ACCEPT).
        "-" => Ok(Some(Policy::Accept)),
        other => Err(format!("unknown chain policy {other:?}")),
    }
}

/// `-A CHAIN rule`, `-I CHAIN [N] rule`.
fn add_rule(table: &mut Table, line: usize, text: &str, command: &str, args: &[Token]) -> Result<(), String> {
    let chain_name = args
        .first()
        .ok_or_else(|| format!("{command} without a chain"))?
        .text
        .clone();
    let mut rest = &args[1..];
    let mut position = None;
    if matches!(command, "-I" | "--insert")
        && let Some(first) = rest.first()
        && !first.quoted
        && let Ok(n) = first.text.parse::<usize>()
    {
        position = Some(n);
        rest = &rest[1..];
    }
    let rule = parse_rule(line, text, rest)?;
    let chain = chain_mut(table, &chain_name)?;
    match position {
        None if matches!(command, "-A" | "--append") => chain.rules.push(rule),
        None => chain.rules.insert(0, rule),
        Some(n) if n >= 1 && n <= chain.rules.len() + 1 => chain.rules.insert(n - 1, rule),
        Some(n) => {
            return Err(format!(
                "-I {chain_name} {n}: chain has only {} rules",
                chain.rules.len()
            ));
        }
    }
    Ok(())
}

/// `-D CHAIN N` or `-D CHAIN rule`.
fn delete_rule(table: &mut Table, args: &[Token]) -> Result<(), String> {
    let chain_name = args.first().ok_or("-D without a chain")?.text.clone();
    let rest: Vec<String> = args[1..].iter().map(|t| t.text.clone()).collect();
    let chain = chain_mut(table, &chain_name)?;
    let index = match rest.as_slice() {
        [n] if n.parse::<usize>().is_ok() => {
            let n: usize = n.parse().unwrap_or(0);
            (n >= 1 && n <= chain.rules.len()).then(|| n - 1)
        }
        spec => chain.rules.iter().position(|r| r.spec == spec),
    };
    match index {
        Some(i) => {
            chain.rules.remove(i);
            Ok(())
        }
        None => Err(format!("-D {chain_name}: no such rule")),
    }
}

/// A chain of the current table. Built-in chains exist implicitly (restore payloads with
/// --noflush need not declare them); user chains must have been declared, as iptables-restore
/// requires.
fn chain_mut<'t>(table: &'t mut Table, name: &str) -> Result<&'t mut Chain, String> {
    if is_builtin_chain(name) {
        return Ok(table.chains.entry(name.to_string()).or_insert(Chain {
            policy: Some(Policy::Accept),
            rules: Vec::new(),
        }));
    }
    table
        .chains
        .get_mut(name)
        .ok_or_else(|| format!("chain {name} is not declared"))
}
