//! The maps layout's table grown in place: when a port needs dispatch rules the kernel's table
//! lacks (a new endpoint count, a new affinity timeout), one batch adds the new sets and chains (a
//! count's first bucket chains), puts each new rule in front of the rule it precedes in a fresh
//! render (by the handles the kernel gave the chain's rules), then the element steps. The table's
//! hundreds of thousands of elements are not written again, as a replacement would.

use std::collections::{BTreeMap, BTreeSet};

use super::decl::Decl;
use super::maps::element_steps;
use super::maps_table::{interval_sets, set_message};
use super::objects::Encoder;
use super::{Batch, EncodeError, Start};
use crate::nftables::render::maps::{MapsElement, MapsTable};
use crate::nftables::render::{Chain, Op, Rule};

/// Where one new rule goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub chain: String,
    pub rule: Rule,
    /// The handle of the rule it goes in front of; `None`: the end of the chain.
    pub before: Option<u64>,
}

/// The chains of `held` whose rules differ in `grown` (the kernel's handles of their rules place
/// the new ones).
pub fn grown_chains<'a>(held: &MapsTable, grown: &'a MapsTable) -> Vec<&'a str> {
    grown
        .chains
        .iter()
        .filter(|c| held.chain(&c.name).is_some_and(|h| h.rules != c.rules))
        .map(|c| c.name.as_str())
        .collect()
}

/// The chains `grown` has and `held` has not.
fn new_chains<'a>(held: &'a MapsTable, grown: &'a MapsTable) -> impl Iterator<Item = &'a Chain> + 'a {
    grown.chains.iter().filter(|c| held.chain(&c.name).is_none())
}

fn refuse(chain: &str, why: &str) -> EncodeError {
    EncodeError::Chain(chain.into(), why.into())
}

/// Where each rule `grown` adds goes. `handles`: for each grown chain, the kernel's handles of its
/// rules in order, as `held` has them. Refused unless `grown`'s chains are `held`'s with rules
/// inserted (and new chains, whose rules all go to their end) and the kernel's chains hold as many
/// rules as `held`.
pub fn placements(
    held: &MapsTable,
    grown: &MapsTable,
    handles: &BTreeMap<String, Vec<u64>>,
) -> Result<Vec<Placement>, EncodeError> {
    let names = |t: &MapsTable| t.chains.iter().map(|c| c.name.clone()).collect::<BTreeSet<_>>();
    if !names(held).is_subset(&names(grown)) {
        return Err(refuse("*", "a held chain is gone"));
    }
    let mut out = Vec::new();
    for c in new_chains(held, grown) {
        if c.hook.is_some() {
            return Err(refuse(&c.name, "a new hooked chain"));
        }
        out.extend(c.rules.iter().map(|rule| Placement {
            chain: c.name.clone(),
            rule: rule.clone(),
            before: None,
        }));
    }
    for name in grown_chains(held, grown) {
        let (Some(old), Some(new)) = (held.chain(name), grown.chain(name)) else {
            return Err(refuse(name, "missing"));
        };
        let have = handles.get(name).ok_or_else(|| refuse(name, "no handles read"))?;
        if have.len() != old.rules.len() {
            return Err(refuse(name, "the kernel's chain is not the one held"));
        }
        let mut next = 0;
        for rule in &new.rules {
            if old.rules.get(next) == Some(rule) {
                next += 1;
                continue;
            }
            out.push(Placement {
                chain: name.to_string(),
                rule: rule.clone(),
                before: have.get(next).copied(),
            });
        }
        if next != old.rules.len() {
            return Err(refuse(name, "a held rule is gone or moved"));
        }
    }
    Ok(out)
}

/// The batch that grows the kernel's `held` table into `grown` (see [`placements`]) and applies
/// the element steps `delete` and `add`.
pub fn encode_growth(
    held: &MapsTable,
    grown: &MapsTable,
    handles: &BTreeMap<String, Vec<u64>>,
    delete: &[MapsElement],
    add: &[MapsElement],
    start: Start,
) -> Result<Batch, EncodeError> {
    let family = grown.family;
    let placed = placements(held, grown, handles)?;
    for s in &held.sets {
        if grown.sets.iter().all(|g| g != s) {
            return Err(EncodeError::SetType(s.name.clone(), "declared otherwise".into()));
        }
    }
    let (mut w, first_seq) = super::batch_begin(start.seq);
    let types = BTreeMap::new();
    let mut enc = Encoder::new(&mut w, family, &types, start.anon, interval_sets(grown));
    for s in grown.sets.iter().filter(|s| !held.sets.contains(s)) {
        set_message(&mut enc, &s.name, &Decl::parse(s, family)?)?;
    }
    enc.op_index = 1;
    for c in new_chains(held, grown) {
        enc.ops(&[Op::AddChain(Chain::new(c.name.clone()))])?;
    }
    enc.op_index = 2;
    for p in &placed {
        enc.rule_at(&p.chain, &p.rule, p.before)?;
    }
    let steps = element_steps(enc.w, family, delete, add)?;
    for step in steps {
        enc.op_index = 3 + step;
        enc.begin_counted();
    }
    let (messages, op_of) = (enc.messages, std::mem::take(&mut enc.op_of));
    let next_anon = start.anon.wrapping_add(u64::from(enc.next_set_id));
    Ok(super::batch_end(w, first_seq, messages, op_of, next_anon))
}

/// The step of a growth that message `index` of its batch belongs to.
pub fn growth_step(batch: &Batch, index: usize) -> &'static str {
    const STEPS: [&str; 5] = [
        "a new set",
        "a new chain",
        "a new rule",
        "an element deletion",
        "an element addition",
    ];
    batch
        .op_of_message(index)
        .and_then(|i| STEPS.get(i).copied())
        .unwrap_or("the batch as a whole")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rules: &[&str]) -> MapsTable {
        MapsTable {
            chains: vec![Chain {
                rules: rules.iter().map(|r| Rule::new(*r)).collect(),
                ..Chain::new("services")
            }],
            ..MapsTable::default()
        }
    }

    fn handles(h: &[u64]) -> BTreeMap<String, Vec<u64>> {
        [("services".to_string(), h.to_vec())].into()
    }

    #[test]
    fn each_new_rule_goes_in_front_of_the_held_rule_after_it() {
        let (held, grown) = (table(&["a", "c"]), table(&["a", "b1", "b2", "c", "d"]));
        let got: Vec<(String, Option<u64>)> = placements(&held, &grown, &handles(&[7, 9]))
            .expect("placed")
            .into_iter()
            .map(|p| (p.rule.text, p.before))
            .collect();
        let want = [("b1", Some(9)), ("b2", Some(9)), ("d", None)].map(|(r, h)| (r.to_string(), h));
        assert_eq!(got, want);
    }

    #[test]
    fn a_new_chain_gets_all_its_rules_at_its_end() {
        let held = table(&["a"]);
        let mut grown = table(&["a", "jump b"]);
        grown.chains.push(Chain {
            rules: vec![Rule::new("x"), Rule::new("y")],
            ..Chain::new("b")
        });
        let got: Vec<(String, String, Option<u64>)> = placements(&held, &grown, &handles(&[7]))
            .expect("placed")
            .into_iter()
            .map(|p| (p.chain, p.rule.text, p.before))
            .collect();
        let want = [("b", "x", None), ("b", "y", None), ("services", "jump b", None)]
            .map(|(c, r, h)| (c.to_string(), r.to_string(), h));
        assert_eq!(got, want);
        assert!(
            placements(&grown, &held, &handles(&[7, 8])).is_err(),
            "a held chain gone"
        );
    }

    #[test]
    fn a_table_that_is_not_the_held_one_grown_is_refused() {
        let held = table(&["a", "c"]);
        assert!(
            placements(&held, &table(&["c", "a", "b"]), &handles(&[7, 9])).is_err(),
            "reordered"
        );
        assert!(
            placements(&held, &table(&["a", "b"]), &handles(&[7, 9])).is_err(),
            "a rule gone"
        );
        assert!(
            placements(&held, &table(&["a", "b", "c"]), &handles(&[7])).is_err(),
            "kernel differs"
        );
        assert!(
            placements(&held, &table(&["a", "b", "c"]), &BTreeMap::new()).is_err(),
            "no handles"
        );
    }
}
