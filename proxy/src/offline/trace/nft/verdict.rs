//! What a rule does once its matches hold ([`Action`]), from a verdict statement or a verdict map's
//! element.

use std::net::SocketAddr;

/// What a rule does once its matches hold.
pub(super) enum Action {
    Next,
    Jump(String),
    Goto(String),
    Return,
    Accept,
    Drop,
    Reject,
    Dnat(SocketAddr),
    Masquerade,
    /// `numgen random mod N vmap { i : verdict ... }`.
    Random(Vec<Vec<String>>),
    /// `dnat to KEY . numgen random mod N map @m`: the target of each slot, equally likely; a slot
    /// the map lacks makes the rule not match for that draw.
    DnatChoices(Vec<Option<SocketAddr>>),
}

/// A verdict (or masquerade) statement at word `i`.
pub(super) fn verdict_word(w: &[&str], i: usize) -> Option<Action> {
    Some(match w[i] {
        "jump" | "goto" => {
            let to = w.get(i + 1).map(|s| s.to_string()).unwrap_or_default();
            if w[i] == "jump" {
                Action::Jump(to)
            } else {
                Action::Goto(to)
            }
        }
        "return" => Action::Return,
        "accept" => Action::Accept,
        "drop" => Action::Drop,
        "reject" => Action::Reject,
        "masquerade" => Action::Masquerade,
        _ => return None,
    })
}

/// A verdict map element's verdict (`drop`, `accept`, `return`, `goto X`, `jump X`).
pub(super) fn verdict_action(v: &[String]) -> Option<Action> {
    Some(match v {
        [a] if a == "drop" => Action::Drop,
        [a] if a == "accept" => Action::Accept,
        [a] if a == "return" => Action::Return,
        [a, to] if a == "goto" => Action::Goto(to.clone()),
        [a, to] if a == "jump" => Action::Jump(to.clone()),
        _ => return None,
    })
}
