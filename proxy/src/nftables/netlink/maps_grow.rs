//! The maps layout's table grown in place: when a port needs dispatch rules the kernel's table
//! lacks (a new endpoint count, an affinity port), one batch adds the new sets and chains (a
//! count's first bucket chains, an affinity port's map and chains), puts each new rule in front of
//! the rule it precedes in a fresh render (by the handles the kernel gave the chain's rules), then
//! the element steps, then deletes the chains and maps of affinity ports gone (their verdict
//! elements deleted before). The table's hundreds of thousands of elements are not written again,
//! as a replacement would.

use std::collections::BTreeMap;

use super::decl::Decl;
use super::maps::element_steps;
use super::maps_table::{interval_sets, set_message};
use super::objects::Encoder;
use super::{Batch, EncodeError, Start};
use crate::nftables::render::maps::{MapsElement, MapsSet, MapsTable, Sticky};
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
    let held = chains(held);
    grown
        .chains
        .iter()
        .filter(|c| held.get(c.name.as_str()).is_some_and(|h| h.rules != c.rules))
        .map(|c| c.name.as_str())
        .collect()
}

/// A table's chains by name: an affinity port has two, so a table can hold tens of thousands, and
/// comparing two tables chain by chain through [`MapsTable::chain`] would be quadratic.
fn chains(t: &MapsTable) -> BTreeMap<&str, &Chain> {
    t.chains.iter().map(|c| (c.name.as_str(), c)).collect()
}

/// A table's sets by name (an affinity port has its own map).
fn sets(t: &MapsTable) -> BTreeMap<&str, &MapsSet> {
    t.sets.iter().map(|s| (s.name.as_str(), s)).collect()
}

/// The chains `grown` has and `held` has not.
fn new_chains<'a>(held: &MapsTable, grown: &'a MapsTable) -> Vec<&'a Chain> {
    let held = chains(held);
    grown
        .chains
        .iter()
        .filter(|c| !held.contains_key(c.name.as_str()))
        .collect()
}

fn refuse(chain: &str, why: &str) -> EncodeError {
    EncodeError::Chain(chain.into(), why.into())
}

/// The chains `held` has and `grown` has not: an affinity port's, or the growth is refused.
fn gone_chains<'a>(held: &'a MapsTable, grown: &MapsTable) -> Result<Vec<&'a str>, EncodeError> {
    let grown = chains(grown);
    let gone = held
        .chains
        .iter()
        .filter(|c| !grown.contains_key(c.name.as_str()));
    gone.map(|c| match Sticky::of_chain(&c.name) {
        Some(_) => Ok(c.name.as_str()),
        None => Err(refuse(&c.name, "a held chain is gone")),
    })
    .collect()
}

/// The sets `held` has and `grown` has not: an affinity port's map, or the growth is refused (also
/// when a set is declared otherwise).
fn gone_sets<'a>(held: &'a MapsTable, grown: &MapsTable) -> Result<Vec<&'a MapsSet>, EncodeError> {
    let (mut out, grown) = (Vec::new(), sets(grown));
    for s in &held.sets {
        match grown.get(s.name.as_str()) {
            Some(g) if *g == s => {}
            None if Sticky::of_map(&s.name).is_some() => out.push(s),
            _ => return Err(EncodeError::SetType(s.name.clone(), "declared otherwise".into())),
        }
    }
    Ok(out)
}

/// Where each rule `grown` adds goes. `handles`: for each grown chain, the kernel's handles of its
/// rules in order, as `held` has them. Refused unless `grown`'s chains are `held`'s with rules
/// inserted (and new chains, whose rules all go to their end; gone ones must be an affinity port's)
/// and the kernel's chains hold as many rules as `held`.
pub fn placements(
    held: &MapsTable,
    grown: &MapsTable,
    handles: &BTreeMap<String, Vec<u64>>,
) -> Result<Vec<Placement>, EncodeError> {
    gone_chains(held, grown)?;
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
    let (old_chains, new_chains) = (chains(held), chains(grown));
    for name in grown_chains(held, grown) {
        let (Some(old), Some(new)) = (old_chains.get(name), new_chains.get(name)) else {
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
    let (gone_chains, gone_sets) = (gone_chains(held, grown)?, gone_sets(held, grown)?);
    let (mut w, first_seq) = super::batch_begin(start.seq);
    let types = BTreeMap::new();
    let mut enc = Encoder::new(&mut w, family, &types, start.anon, interval_sets(grown));
    let held_sets = sets(held);
    for s in grown
        .sets
        .iter()
        .filter(|s| held_sets.get(s.name.as_str()) != Some(s))
    {
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
    enc.op_index = 5;
    for c in gone_chains {
        enc.ops(&[Op::FlushChain(c.into())])?;
        enc.ops(&[Op::DeleteChain(c.into())])?;
    }
    for s in gone_sets {
        enc.ops(&[Op::DeleteSet {
            name: s.name.clone(),
            is_map: s.is_map,
        }])?;
    }
    let (messages, op_of) = (enc.messages, std::mem::take(&mut enc.op_of));
    let next_anon = start.anon.wrapping_add(u64::from(enc.next_set_id));
    Ok(super::batch_end(w, first_seq, messages, op_of, next_anon))
}

/// The step of a growth that message `index` of its batch belongs to.
pub fn growth_step(batch: &Batch, index: usize) -> &'static str {
    const STEPS: [&str; 6] = [
        "a new set",
        "a new chain",
        "a new rule",
        "an element deletion",
        "an element addition",
        "deleting a gone affinity port's chain or map",
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
