//! Sharing of repeated strings: 100k endpoints name only ~100 nodes, so each node name is stored once.

use std::collections::HashSet;
use std::sync::Arc;

/// A set of shared strings. Names no longer used anywhere else are dropped now and then, so a cluster
/// whose nodes come and go does not grow it without bound.
#[derive(Debug, Default)]
pub struct Interner {
    names: HashSet<Arc<str>>,
    /// Size after the last pruning; the next one runs when the set has doubled.
    pruned_at: usize,
}

impl Interner {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.names.get(s) {
            return Arc::clone(a);
        }
        if self.names.len() >= 2 * self.pruned_at.max(64) {
            self.names.retain(|a| Arc::strong_count(a) > 1);
            self.pruned_at = self.names.len();
        }
        let a: Arc<str> = Arc::from(s);
        self.names.insert(Arc::clone(&a));
        a
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests;
