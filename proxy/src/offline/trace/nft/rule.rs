//! Reading one nftables rule against one path of a packet, word by word: matches (`selector [.
//! selector]* [and MASK] [op] value`, a set or a verdict map) and statements (verdicts, NAT, marks,
//! `numgen random` maps, affinity updates). What kube-proxy's nftables mode writes is understood;
//! anything else becomes a warning and the rule is treated as not matching.

use super::matches::{Sel, is_local, key_matches, parse_u32, selector};
use super::parse::{NftRule, NftRuleset, elements};
use super::verdict::{Action, verdict_action, verdict_word};
use crate::offline::trace::path::Path;
use crate::offline::trace::{Packet, TraceOptions};

/// A rule read against one path: does it match, what it does, what it changes.
pub(super) struct Eval {
    pub(super) matched: bool,
    pub(super) action: Action,
    pub(super) mark: Option<u32>,
    pub(super) notes: Vec<String>,
}

/// Where reading a rule goes on after one match or statement.
enum Next {
    /// At this word.
    At(usize),
    /// Nowhere: the rule is read (its [`Eval`] is final).
    Done,
}

/// The rule does not match; nothing after this word counts.
fn no_match(e: &mut Eval) -> Next {
    e.matched = false;
    Next::Done
}

/// The rule does not match (a target the tracer cannot read).
pub(super) fn unmatched(e: &mut Eval) {
    e.matched = false;
}

/// One rule's words and the path it is read against.
struct Words<'r> {
    rule: &'r NftRule,
    path: &'r Path,
    w: Vec<&'r str>,
}

/// Adds `warning` unless it is already there (one warning per cause, however many paths meet it).
pub(super) fn warn_once(warnings: &mut Vec<String>, warning: String) {
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

/// The table and packet rules are read against, and where their warnings go.
pub(super) struct Reader<'a, 'w> {
    pub(super) rules: &'a NftRuleset,
    pub(super) packet: &'a Packet,
    pub(super) opts: &'a TraceOptions,
    pub(super) warnings: &'w mut Vec<String>,
}

impl Reader<'_, '_> {
    pub(super) fn warn(&mut self, warning: String) {
        warn_once(self.warnings, warning);
    }

    /// Reads one rule against `path`.
    pub(super) fn eval(&mut self, rule: &NftRule, path: &Path) -> Eval {
        let r = Words {
            rule,
            path,
            w: rule.tokens.iter().map(String::as_str).collect(),
        };
        let mut e = Eval {
            matched: true,
            action: Action::Next,
            mark: None,
            notes: Vec::new(),
        };
        let mut i = 0;
        while i < r.w.len() {
            let next = match self.statement(&r, i, &mut e) {
                Some(next) => next,
                None => self.matching(&r, i, &mut e),
            };
            match next {
                Next::At(n) => i = n,
                Next::Done => return e,
            }
        }
        e
    }

    /// The statement at word `i`; `None` when the word starts a match instead.
    fn statement(&mut self, r: &Words<'_>, i: usize, e: &mut Eval) -> Option<Next> {
        let w = &r.w;
        if let Some(action) = verdict_word(w, i) {
            e.action = action;
            return Some(Next::Done);
        }
        Some(match w[i] {
            "counter" => {
                let mut i = i + 1;
                while matches!(w.get(i), Some(&("packets" | "bytes"))) {
                    i += 2;
                }
                Next::At(i)
            }
            "comment" => Next::At(i + 2),
            "dnat" => {
                let to = r.w[i + 1..].iter().skip_while(|x| **x != "to").skip(1).copied();
                let to: Vec<&str> = to.collect();
                self.dnat(&to, r.path, r.rule.line, e);
                Next::Done
            }
            "update" | "add" => {
                // `update @affinity-... { ip saddr }`: remembers the client for later connections.
                let set = w.get(i + 1).map(|s| s.trim_start_matches('@')).unwrap_or("");
                e.notes.push(format!(
                    "sessionAffinity: later connections from this client ({}) stick to this endpoint (set {set})",
                    self.packet.src
                ));
                Next::At(skip_braces(w, i + 2))
            }
            "numgen" => self.numgen(r, i, e),
            _ => return None,
        })
    }

    /// `numgen random mod N vmap { i : verdict ... }` at word `i`.
    fn numgen(&mut self, r: &Words<'_>, i: usize, e: &mut Eval) -> Next {
        let open = r.w.iter().skip(i).position(|x| *x == "{").map(|p| p + i);
        let Some(open) = open else {
            self.warn(format!("line {}: numgen without a map", r.rule.line));
            return no_match(e);
        };
        let mut verdicts: Vec<(u64, Vec<String>)> = elements(&braced(&r.w, open).0)
            .into_iter()
            .filter_map(|(k, v)| Some((k.first()?.parse().ok()?, v?)))
            .collect();
        verdicts.sort_by_key(|(k, _)| *k);
        e.action = Action::Random(verdicts.into_iter().map(|(_, v)| v).collect());
        Next::Done
    }

    /// A match at word `i`: selector [. selector]* [and MASK | & MASK] [op] value | vmap | set; also
    /// `mark set ...`, which starts like one.
    fn matching(&mut self, r: &Words<'_>, mut i: usize, e: &mut Eval) -> Next {
        let w = &r.w;
        let mut sels = Vec::new();
        loop {
            let Some((sel, used)) = selector(&w[i..]) else {
                self.warn(format!(
                    "line {}: {:?} not understood; rule treated as not matching",
                    r.rule.line,
                    w.get(i).copied().unwrap_or_default()
                ));
                return no_match(e);
            };
            sels.push(sel);
            i += used;
            if w.get(i) == Some(&".") {
                i += 1;
                continue;
            }
            break;
        }
        let mut mask = None;
        if matches!(w.get(i), Some(&("and" | "&"))) {
            mask = w.get(i + 1).and_then(|m| parse_u32(m));
            i += 2;
        }
        if w.get(i) == Some(&"set") {
            return self.mark_set(r, i, e);
        }
        let mut negate = false;
        match w.get(i) {
            Some(&"!=") => {
                negate = true;
                i += 1;
            }
            Some(&"==") => i += 1,
            _ => {}
        }
        let values: Vec<String> = sels
            .iter()
            .map(|s| self.value(*s, r.path, mask, r.rule.line))
            .collect();
        if w.get(i) == Some(&"vmap") {
            return self.vmap(r, i, &sels, &values, e);
        }
        self.membership(r, i, (&sels, &values), negate, e)
    }

    /// `mark set mark or X` / `meta mark set meta mark | X`, `set` at word `i`.
    fn mark_set(&mut self, r: &Words<'_>, i: usize, e: &mut Eval) -> Next {
        let rest = &r.w[i + 1..];
        let (op_at, value) = match rest {
            ["mark", op, v, ..] => (*op, *v),
            ["meta", "mark", op, v, ..] => (*op, *v),
            _ => ("", ""),
        };
        let Some(v) = parse_u32(value) else {
            self.warn(format!("line {}: mark statement not understood", r.rule.line));
            return no_match(e);
        };
        let cur = e.mark.unwrap_or(r.path.mark);
        e.mark = Some(match op_at {
            "or" | "|" => cur | v,
            "xor" | "^" => cur ^ v,
            "and" | "&" => cur & v,
            _ => v,
        });
        Next::At(i + 1 + if rest.first() == Some(&"meta") { 4 } else { 3 })
    }

    /// `vmap @map` or `vmap { key : verdict ... }` at word `i`: the verdict of the packet's key; no
    /// match when the key is not in the map.
    fn vmap(&mut self, r: &Words<'_>, i: usize, sels: &[Sel], values: &[String], e: &mut Eval) -> Next {
        let found = match r.w.get(i + 1) {
            Some(name) if name.starts_with('@') => self.lookup(&name[1..], sels, values).flatten(),
            Some(&"{") => elements(&braced(&r.w, i + 1).0)
                .into_iter()
                .find(|(k, _)| key_matches(sels, values, k))
                .and_then(|(_, v)| v),
            _ => None,
        };
        match found.as_deref().and_then(verdict_action) {
            Some(action) => {
                e.action = action;
                Next::Done
            }
            None => no_match(e),
        }
    }

    /// `value`, `@set` or `{ elements }` at word `i`: reading goes on only when the packet's values
    /// are in it (not in it, after `!=`).
    fn membership(
        &mut self,
        r: &Words<'_>,
        mut i: usize,
        (sels, values): (&[Sel], &[String]),
        negate: bool,
        e: &mut Eval,
    ) -> Next {
        let Some(value) = r.w.get(i).copied() else {
            self.warn(format!("line {}: match without a value", r.rule.line));
            return no_match(e);
        };
        let hit = if let Some(set) = value.strip_prefix('@') {
            let dynamic = set.starts_with("affinity-");
            if dynamic {
                e.notes.push(format!(
                    "sessionAffinity: a client already in {set} would skip the random choice; a new client is not"
                ));
            }
            self.lookup(set, sels, values).is_some()
        } else if value == "{" {
            let (inner, close) = braced(&r.w, i);
            let hit = elements(&inner).iter().any(|(k, _)| key_matches(sels, values, k));
            i = close - 1;
            hit
        } else {
            key_matches(sels, values, &[value.to_string()])
        };
        if hit == negate {
            return no_match(e);
        }
        Next::At(i + 1)
    }

    /// The element of set `name` matching `values`: `Some(verdict)` when found.
    fn lookup(&mut self, name: &str, sels: &[Sel], values: &[String]) -> Option<Option<Vec<String>>> {
        let Some(set) = self.rules.sets.get(name) else {
            self.warn(format!("set {name} is not in the table; treated as empty"));
            return None;
        };
        set.elements
            .iter()
            .find(|(k, _)| key_matches(sels, values, k))
            .map(|(_, v)| v.clone())
    }

    pub(super) fn value(&mut self, sel: Sel, path: &Path, mask: Option<u32>, line: usize) -> String {
        match sel {
            Sel::Saddr => self.packet.src.to_string(),
            Sel::Daddr => path.dst.to_string(),
            Sel::L4proto | Sel::OrigProto => self.packet.proto.as_str().to_string(),
            Sel::OrigDaddr => self.packet.dst.to_string(),
            Sel::OrigDport => self.packet.dport.to_string(),
            Sel::Dport(proto) => {
                if proto.is_some_and(|p| p != self.packet.proto.as_str()) {
                    return String::new();
                }
                path.dport.to_string()
            }
            Sel::FibType(src) => {
                let ip = if src { self.packet.src } else { path.dst };
                if is_local(&self.opts.node_ips, ip) {
                    "local"
                } else {
                    "unicast"
                }
                .to_string()
            }
            Sel::Iifname => match &path.in_iface {
                Some(i) => i.clone(),
                None => {
                    self.warn(format!("line {line}: the packet's input interface is unknown (--in-iface); iifname rules do not match"));
                    String::from("\u{0}")
                }
            },
            Sel::CtState => "new".into(),
            Sel::CtStatus => if path.dnat.is_some() { "dnat" } else { "none" }.into(),
            Sel::Mark => (path.mark & mask.unwrap_or(u32::MAX)).to_string(),
        }
    }
}

/// The index after the `}` matching the `{` at `open`.
fn skip_braces(w: &[&str], open: usize) -> usize {
    let mut depth = 0;
    for (i, x) in w.iter().enumerate().skip(open) {
        match *x {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    w.len()
}

/// The words between the `{` at `open` and its `}`, and the index after that `}` (empty when the rule
/// ends before the braces close).
fn braced(w: &[&str], open: usize) -> (Vec<String>, usize) {
    let close = skip_braces(w, open);
    let inner = w.get(open + 1..close.saturating_sub(1)).unwrap_or_default();
    (inner.iter().map(|s| s.to_string()).collect(), close)
}
