//! Which of the maps layout's sets a full sync over a live table (a restart, the hourly sync, a
//! recovery) may leave as they are: those the kernel declares as the skeleton does and that hold the
//! very elements the cache holds (the other sets declared the same are flushed and filled again). The comparison is by count and an order-free digest of each
//! element's bytes (the kernel lists a hash set in bucket order), streamed from the kernel's dump,
//! so neither side is held as a list; the sync then writes only the other sets' elements
//! (docs/nftables-maps.md, "Loading in pieces").

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hasher};

use super::decl::Decl;
use super::maps::{key_bytes, value_bytes};
use super::read::{KernelSet, TableObjects, elements_of};
use crate::model::Family;
use crate::nftables::render::maps::{MapsElement, MapsSet, MapsTable};

/// A set's elements as a count and the wrapping sum of a 128-bit hash of each one's key and data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetDigest {
    pub count: usize,
    sum: u128,
}

impl SetDigest {
    fn add(&mut self, key: &[u8], data: Option<&[u8]>) {
        let half = |seed: u8| {
            // The same in every hasher `new` makes: both sides are hashed in this process.
            let mut h = DefaultHasher::new();
            h.write_u8(seed);
            h.write(key);
            match data {
                Some(d) => {
                    h.write_u8(1);
                    h.write(d);
                }
                None => h.write_u8(0),
            }
            h.finish()
        };
        let hash = (u128::from(half(0)) << 64) | u128::from(half(1));
        self.count += 1;
        self.sum = self.sum.wrapping_add(hash);
    }

    /// Adds one element as the netlink writer sends it.
    pub fn add_element(&mut self, e: &MapsElement) {
        let value = e.value.map(|(ip, port)| value_bytes(ip, port));
        self.add(&key_bytes(e, false), value.as_deref());
    }

    /// Adds the elements of one answer of the kernel's element dump; `None` when it is malformed.
    pub fn add_answer(&mut self, message: &[u8]) -> Option<()> {
        for e in elements_of(message)? {
            self.add(&e.key, e.data.as_deref());
        }
        Some(())
    }
}

/// Whether a set may be kept at all: not an interval set (the kernel holds a prefix as its two
/// ends, not as the one element the cache holds) and not a dynamic one (the packet path writes
/// it; its entries are carried over with their time left) nor a verdict map (the affinity ports'
/// keys: few, and their data is a verdict, not bytes the digest reads).
fn comparable(s: &MapsSet) -> bool {
    !s.decl.ends_with(": verdict")
        && !s
            .flags
            .iter()
            .any(|f| matches!(*f, "interval" | "dynamic" | "timeout"))
}

/// Whether the kernel's set is declared as `s` is: flags, key and data types and lengths, and
/// nft's user data (what `nft list` prints as its `type` or `typeof`).
fn declared_as(s: &MapsSet, family: Family, k: &KernelSet) -> bool {
    Decl::parse(s, family).is_ok_and(|d| {
        (d.flags, d.key_type, d.key_len, d.data, d.udata.as_slice())
            == (k.flags, k.key_type, k.key_len, k.data, k.udata.as_slice())
    })
}

/// What a refresh does with each set of the skeleton the kernel's table declares the same way
/// ([`declared_as`]); the others are declared again (deleted first when the kernel has them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefreshPlan {
    /// Left as they are: they hold the cache's very elements.
    pub keep: BTreeSet<String>,
    /// Flushed and filled again (their place in `nft list` stays).
    pub flush: BTreeSet<String>,
}

/// The plan of a refresh of the kernel's table `kernel` to `skeleton` holding `elements` (the
/// cache's, grouped by set): a set the kernel declares as the skeleton does is kept when it can be
/// compared ([`comparable`]) and `read(name)` (the digest of the kernel's elements of that set)
/// equals the cache's, else flushed. An error of `read` is returned as it is.
pub fn plan_refresh<E>(
    skeleton: &MapsTable,
    elements: impl Iterator<Item = MapsElement>,
    kernel: &TableObjects,
    mut read: impl FnMut(&str) -> Result<SetDigest, E>,
) -> Result<RefreshPlan, E> {
    let mut plan = RefreshPlan::default();
    let mut want: BTreeMap<String, SetDigest> = BTreeMap::new();
    // By name: an affinity port has its own map, so there can be tens of thousands.
    let kernel_sets: BTreeMap<&str, &KernelSet> = kernel.sets.iter().map(|k| (k.name.as_str(), k)).collect();
    for s in &skeleton.sets {
        let k = kernel_sets.get(s.name.as_str()).copied();
        if !k.is_some_and(|k| declared_as(s, skeleton.family, k)) {
            continue;
        }
        if comparable(s) {
            want.insert(s.name.clone(), SetDigest::default());
        } else {
            plan.flush.insert(s.name.clone());
        }
    }
    if want.is_empty() {
        return Ok(plan);
    }
    // The set being summed (the cache's elements come grouped by set), and its digest so far when
    // it is one to compare.
    let mut current: Option<(String, Option<SetDigest>)> = None;
    for e in elements {
        let name = e.set.name();
        if current.as_ref().is_none_or(|(n, _)| *n != name) {
            if let Some((done, Some(d))) = current.take() {
                want.insert(done, d);
            }
            let d = want.get(&name).copied();
            current = Some((name, d));
        }
        if let Some((_, Some(d))) = current.as_mut() {
            d.add_element(&e);
        }
    }
    if let Some((done, Some(d))) = current {
        want.insert(done, d);
    }
    for (name, d) in want {
        match read(&name)? == d {
            true => plan.keep.insert(name),
            false => plan.flush.insert(name),
        };
    }
    Ok(plan)
}
