//! The tracer's `dnat` statements: to a literal address (upstream's layout) or to the value a data
//! map holds for the packet's key (the maps layout: `dnat ip to KEY . numgen random mod N map @eps-N`,
//! every slot 0..N-1 an equally likely outcome; a key without `numgen`, e.g. an affinity map, is one
//! lookup).

use std::net::{IpAddr, SocketAddr};

use super::matches::{Sel, key_matches, selector};
use super::rule::{Eval, Reader, unmatched};
use super::verdict::Action;
use crate::offline::trace::path::Path;

impl Reader<'_, '_> {
    /// `dnat [ip | ip6] to` followed by the words in `to`.
    pub(super) fn dnat(&mut self, to: &[&str], path: &Path, line: usize, e: &mut Eval) {
        if let Some(map_at) = to.iter().position(|w| *w == "map") {
            return self.dnat_map(&to[..map_at], to.get(map_at + 1).copied(), path, line, e);
        }
        let target = to.first().copied().unwrap_or("");
        match parse_dnat(target, path.dport) {
            Some(a) => e.action = Action::Dnat(a),
            None => {
                self.warn(format!("line {line}: dnat target {target:?} not understood"));
                unmatched(e);
            }
        }
    }

    /// `KEY [. numgen random mod N] map @name`.
    fn dnat_map(&mut self, key: &[&str], map: Option<&str>, path: &Path, line: usize, e: &mut Eval) {
        let Some((sels, slots)) = map_key(key) else {
            self.warn(format!(
                "line {line}: dnat map key {:?} not understood",
                key.join(" ")
            ));
            return unmatched(e);
        };
        let name = map.and_then(|m| m.strip_prefix('@')).unwrap_or("");
        let Some(set) = self.rules.sets.get(name) else {
            self.warn(format!("line {line}: dnat map {name:?} is not in the table"));
            return unmatched(e);
        };
        let values: Vec<String> = sels.iter().map(|s| self.value(*s, path, None, line)).collect();
        let lookup = |slot: Option<String>| -> Option<SocketAddr> {
            let want = sels.len() + usize::from(slot.is_some());
            let (_, value) = set.elements.iter().find(|(k, _)| {
                k.len() == want
                    && key_matches(&sels, &values, &k[..sels.len()])
                    && slot.as_ref().is_none_or(|s| k.last() == Some(s))
            })?;
            match value.as_deref()? {
                [ip, port] => Some(SocketAddr::new(ip.parse::<IpAddr>().ok()?, port.parse().ok()?)),
                _ => None,
            }
        };
        match slots {
            Some(n) => e.action = Action::DnatChoices((0..n).map(|s| lookup(Some(s.to_string()))).collect()),
            None => match lookup(None) {
                Some(a) => e.action = Action::Dnat(a),
                None => {
                    if name.contains("affinity") {
                        e.notes.push(format!(
                            "sessionAffinity: a client already in @{name} would go to its remembered endpoint; a new client is not"
                        ));
                    }
                    unmatched(e);
                }
            },
        }
    }
}

/// A map key's selectors, and N when its last part is `numgen random mod N`.
fn map_key(words: &[&str]) -> Option<(Vec<Sel>, Option<usize>)> {
    let (mut sels, mut slots, mut j) = (Vec::new(), None, 0);
    while j < words.len() {
        if let ["numgen", "random", "mod", n, ..] = &words[j..] {
            slots = Some(n.parse::<usize>().ok().filter(|n| *n > 0)?);
            j += 4;
        } else {
            let (sel, used) = selector(&words[j..])?;
            sels.push(sel);
            j += used;
        }
        match words.get(j) {
            Some(&".") => j += 1,
            None => break,
            Some(_) => return None,
        }
    }
    Some((sels, slots))
}

/// `10.0.0.1:80`, `[fd00::1]:80`, or an address alone (the port stays).
fn parse_dnat(to: &str, dport: u16) -> Option<SocketAddr> {
    if let Ok(sa) = to.parse::<SocketAddr>() {
        return Some(sa);
    }
    to.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, dport))
}
