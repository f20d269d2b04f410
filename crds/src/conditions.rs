//! Conditions of a `CloudLoadBalancer`, kept with the same rules as apimachinery's
//! `meta.SetStatusCondition`: one entry per type, and `lastTransitionTime` moves only when the
//! status flips, so "Ready since" stays meaningful across resyncs.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::status::CloudLoadBalancerStatus;

/// Condition types the cloud controller sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionType {
    /// Every GCE object exists and matches the Service.
    Ready,
    /// A sync is changing GCE objects.
    Progressing,
    /// The last sync failed; the message says why.
    Failed,
}

impl ConditionType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "Ready",
            Self::Progressing => "Progressing",
            Self::Failed => "Failed",
        }
    }
}

/// metav1 condition status values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }

    pub fn from_bool(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// Builds a condition stamped with `now` (taken as an argument so callers and tests control time).
pub fn new_condition(
    type_: ConditionType,
    status: ConditionStatus,
    reason: impl Into<String>,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: Time,
) -> Condition {
    Condition {
        type_: type_.as_str().to_owned(),
        status: status.as_str().to_owned(),
        reason: reason.into(),
        message: message.into(),
        observed_generation,
        last_transition_time: now,
    }
}

impl CloudLoadBalancerStatus {
    /// Adds or updates the condition of `new.type_`. When the status is unchanged the existing
    /// `lastTransitionTime` is kept; reason, message and observedGeneration always follow `new`.
    /// Returns whether anything changed, so callers can skip no-op status writes.
    pub fn set_condition(&mut self, new: Condition) -> bool {
        let Some(existing) = self.conditions.iter_mut().find(|c| c.type_ == new.type_) else {
            self.conditions.push(new);
            return true;
        };
        let mut changed = false;
        if existing.status != new.status {
            existing.status = new.status;
            existing.last_transition_time = new.last_transition_time;
            changed = true;
        }
        if existing.reason != new.reason {
            existing.reason = new.reason;
            changed = true;
        }
        if existing.message != new.message {
            existing.message = new.message;
            changed = true;
        }
        if existing.observed_generation != new.observed_generation {
            existing.observed_generation = new.observed_generation;
            changed = true;
        }
        changed
    }

    /// Removes the condition of that type; returns whether one was there.
    pub fn remove_condition(&mut self, type_: ConditionType) -> bool {
        let before = self.conditions.len();
        self.conditions.retain(|c| c.type_ != type_.as_str());
        self.conditions.len() != before
    }

    /// The condition of that type, if set.
    pub fn condition(&self, type_: ConditionType) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_.as_str())
    }

    /// True when the Ready condition is set and has status True.
    pub fn is_ready(&self) -> bool {
        self.condition(ConditionType::Ready)
            .is_some_and(|c| c.status == ConditionStatus::True.as_str())
    }
}

#[cfg(test)]
mod tests;
