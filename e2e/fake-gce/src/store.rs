//! The in-memory project: resources as GCE JSON objects, keyed by "<scope>/<name>".
//!
//! Resources are kept as `serde_json::Value` in exactly the API's shape (same field names), so the
//! `/_fake/state` dump and the state file read like GCE listings.
use std::collections::BTreeMap;

use serde_json::Value;

use crate::kind::Kind;
use crate::operations::Operation;
use crate::scope::Scope;

/// Key of a resource inside its collection map.
pub fn key(scope: &Scope, name: &str) -> String {
    format!("{}/{name}", scope.path())
}

/// Every resource, by kind then key.
#[derive(Clone, Debug, Default)]
pub struct Resources {
    pub by_kind: BTreeMap<Kind, BTreeMap<String, Value>>,
}

impl Resources {
    pub fn map(&self, kind: Kind) -> Option<&BTreeMap<String, Value>> {
        self.by_kind.get(&kind)
    }

    pub fn map_mut(&mut self, kind: Kind) -> &mut BTreeMap<String, Value> {
        self.by_kind.entry(kind).or_default()
    }

    pub fn get(&self, kind: Kind, scope: &Scope, name: &str) -> Option<&Value> {
        self.map(kind).and_then(|m| m.get(&key(scope, name)))
    }

    pub fn iter(&self, kind: Kind) -> impl Iterator<Item = (&String, &Value)> {
        self.map(kind).into_iter().flat_map(|m| m.iter())
    }

    /// Resources of one scope, in name order.
    pub fn in_scope<'a>(&'a self, kind: Kind, scope: &Scope) -> impl Iterator<Item = &'a Value> {
        let prefix = format!("{}/", scope.path());
        self.iter(kind)
            .filter(move |(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
    }

    pub fn count(&self, kind: Kind) -> usize {
        self.map(kind).map_or(0, |m| m.len())
    }

    /// Find by selfLink (exact string compare after normalisation by the caller).
    pub fn find_by_link(&self, kind: Kind, link: &str) -> Option<&Value> {
        self.iter(kind).map(|(_, v)| v).find(|v| v["selfLink"] == link)
    }
}

/// Everything the fake remembers (the part that survives in the state file is `Persisted`).
#[derive(Debug, Default)]
pub struct Data {
    pub resources: Resources,
    pub operations: BTreeMap<String, Operation>,
    pub next_id: u64,
}

impl Data {
    /// GCE ids are unsigned 64-bit numbers sent as strings.
    pub fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("{}", 4_000_000_000_000_000_000u64 + self.next_id)
    }
}
