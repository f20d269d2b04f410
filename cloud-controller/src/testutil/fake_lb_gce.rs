//! `FakeLbGce`: the round driver's GCE ([`LbGce`], every LB kind) over a [`MiniGce`], with GCE's error answers
//! classified by the real executor's rules (`gce::outcome::outcome`), injected failures, and a log
//! of what was read and called, for unit tests of the service controller's decisions.

use std::sync::Mutex;

use crate::controllers::lb::rounds::{Announce, IlbObservation, LbGce, RbsObservation};
use crate::gce::error::{GceError, REASON_IN_USE};
use crate::gce::observe::ObservedLb;
use crate::gce::outcome::{Outcome, outcome};
use crate::gce::read::Touched;
use crate::naming::l4::RbsNames;
use crate::naming::{IlbNames, LbNames};
use crate::objects::action::Action;

use super::MiniGce;

#[derive(Default)]
pub(crate) struct FakeLbGce {
    pub gce: Mutex<MiniGce>,
    /// Per observe call: the objects it was asked to read again (None = everything).
    pub reads: Mutex<Vec<Option<Touched>>>,
    /// Every call, in the order it was made.
    pub calls: Mutex<Vec<Action>>,
    /// The next call with this label fails with this error (once).
    pub fail_call: Mutex<Option<(&'static str, GceError)>>,
    /// The next observe fails with this error (once).
    pub fail_read: Mutex<Option<GceError>>,
    /// Calls with this label answer DONE but change nothing (a GCE that loses writes).
    pub lossy: Option<&'static str>,
}

/// MiniGce's "NNN reason: detail" errors as GCE reports them.
fn gce_error(call: &str, e: &str) -> GceError {
    let mut err = GceError::new(call, e);
    err.status = e.get(..3).and_then(|s| s.parse().ok());
    err.reason = if e.contains(REASON_IN_USE) {
        Some(REASON_IN_USE.into())
    } else {
        e.get(4..)
            .and_then(|r| r.split([':', ' ']).next())
            .map(str::to_owned)
    };
    err
}

impl FakeLbGce {
    pub(crate) fn new(gce: MiniGce) -> Self {
        FakeLbGce {
            gce: Mutex::new(gce),
            ..Self::default()
        }
    }

    pub(crate) fn state(&self) -> MiniGce {
        self.gce.lock().expect("fake lock").clone()
    }

    pub(crate) fn call_labels(&self) -> Vec<&'static str> {
        self.calls
            .lock()
            .expect("fake lock")
            .iter()
            .map(Action::label)
            .collect()
    }

    pub(crate) fn reads(&self) -> Vec<Option<Touched>> {
        self.reads.lock().expect("fake lock").clone()
    }
}

impl LbGce for FakeLbGce {
    /// Reads the whole state; `reuse` is only logged (within a sync nothing else changes the
    /// LB's objects, so a real partial read returns the same).
    async fn observe(
        &self,
        names: &LbNames,
        want_ip: Option<&str>,
        reuse: Option<(&ObservedLb, &Touched)>,
    ) -> Result<ObservedLb, GceError> {
        self.reads
            .lock()
            .expect("fake lock")
            .push(reuse.map(|(_, t)| t.clone()));
        if let Some(e) = self.fail_read.lock().expect("fake lock").take() {
            return Err(e);
        }
        Ok(ObservedLb {
            observed: self.gce.lock().expect("fake lock").observed(names, want_ip),
            self_links: Default::default(),
        })
    }

    /// Logged as a read of everything.
    async fn observe_internal(
        &self,
        names: &IlbNames,
        want_ip: Option<&str>,
    ) -> Result<IlbObservation, GceError> {
        self.reads.lock().expect("fake lock").push(None);
        if let Some(e) = self.fail_read.lock().expect("fake lock").take() {
            return Err(e);
        }
        let observed = self.gce.lock().expect("fake lock").observed_ilb(names, want_ip);
        Ok((observed, ObservedLb::default()))
    }

    /// Logged as a read of everything.
    async fn observe_rbs(&self, names: &RbsNames, want_ip: Option<&str>) -> Result<RbsObservation, GceError> {
        self.reads.lock().expect("fake lock").push(None);
        if let Some(e) = self.fail_read.lock().expect("fake lock").take() {
            return Err(e);
        }
        let observed = self.gce.lock().expect("fake lock").observed_rbs(names, want_ip);
        Ok((observed, ObservedLb::default()))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, GceError> {
        self.calls.lock().expect("fake lock").push(action.clone());
        let label = action.label();
        let mut fail = self.fail_call.lock().expect("fake lock");
        if fail.as_ref().is_some_and(|(l, _)| *l == label) {
            return Err(fail.take().expect("checked").1);
        }
        drop(fail);
        if self.lossy == Some(label) {
            return Ok(Outcome::Done);
        }
        let result = self.gce.lock().expect("fake lock").apply(action);
        outcome(action, result.map_err(|e| gce_error(label, &e)))
    }
}

/// Records the events a sync announces.
#[derive(Default)]
pub(crate) struct Events(pub Mutex<Vec<&'static str>>);

impl Events {
    pub(crate) fn reasons(&self) -> Vec<&'static str> {
        self.0.lock().expect("events lock").clone()
    }
}

impl Announce for Events {
    async fn event(&self, reason: &'static str, _note: &'static str) {
        self.0.lock().expect("events lock").push(reason);
    }
}
