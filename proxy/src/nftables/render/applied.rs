//! What the kernel holds after the last successful transaction, kept small: the inputs it was
//! rendered from (records shared with the model), the base objects and the element index. Service
//! ports' chains and rules are not kept: a changed port's old objects are rendered again from its
//! old inputs, which costs a render of the changed ports only and saves a copy of every rule.

use super::Inputs;
use super::base::Base;
use super::element_index::{Delta, ElementIndex};

/// Service ports without local endpoints (a metric).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoLocal {
    /// For internal traffic (`internalTrafficPolicy: Local`).
    pub internal: usize,
    /// For external traffic (`externalTrafficPolicy: Local`).
    pub external: usize,
}

impl NoLocal {
    pub(super) fn count(&mut self, s: &super::ServiceObjects, sign: isize) {
        self.internal = self
            .internal
            .saturating_add_signed(sign * isize::from(s.no_local_internal));
        self.external = self
            .external
            .saturating_add_signed(sign * isize::from(s.no_local_external));
    }
}

#[derive(Clone, Debug, Default)]
pub struct Applied {
    /// None before the first successful transaction.
    pub(super) inputs: Option<Inputs>,
    pub(super) base: Base,
    pub(super) index: ElementIndex,
    pub(super) no_local: NoLocal,
}

/// What the kernel holds once a transaction succeeds.
#[derive(Debug)]
pub(super) struct After {
    pub(super) inputs: Inputs,
    pub(super) base: Base,
    pub(super) index: IndexChange,
    pub(super) no_local: NoLocal,
}

#[derive(Debug)]
pub(super) enum IndexChange {
    Replace(ElementIndex),
    Delta(Delta),
}

impl Applied {
    /// The inputs of what the kernel holds (none before the first success).
    pub fn inputs(&self) -> Option<&Inputs> {
        self.inputs.as_ref()
    }

    pub fn no_local(&self) -> NoLocal {
        self.no_local
    }

    /// What the kernel holds now that a transaction (or a full stream) succeeded.
    pub(super) fn commit_after(&mut self, after: After) {
        match after.index {
            IndexChange::Replace(index) => self.index = index,
            IndexChange::Delta(delta) => self.index.apply(&delta),
        }
        self.inputs = Some(after.inputs);
        self.base = after.base;
        self.no_local = after.no_local;
    }
}
