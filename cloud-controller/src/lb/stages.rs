//! Which actions of a plan may run at the same time.
//!
//! A plan is an ordered list; most of its order is real (the pool references the health check,
//! the forwarding rule references the address and the pool, deletes go in reverse). Firewalls and
//! HTTP health checks reference nothing of the LB, so a run of consecutive firewall / health-check
//! creates and updates has no order inside it: those calls run concurrently and the stage ends when
//! all of their operations are DONE. A new LB then waits for 3 operations in a row (health check,
//! pool, forwarding rule) after its address instead of 5. Every other action is a stage of its own.
//! Nothing is planned differently: a crash between stages leaves the same named objects a serial
//! run could leave, and the next sync (or the delete path) finds them by name.

use crate::objects::action::Action;

fn independent(a: &Action) -> bool {
    matches!(
        a,
        Action::CreateFirewall(_)
            | Action::PatchFirewall(_)
            | Action::CreateHealthCheck(_)
            | Action::UpdateHealthCheck(_)
    )
}

/// Splits `actions` into consecutive stages, in order; the actions of one stage may run at once.
pub(crate) fn stages(actions: &[Action]) -> Vec<&[Action]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < actions.len() {
        let mut end = start + 1;
        if actions.get(start).is_some_and(independent) {
            while actions.get(end).is_some_and(independent) {
                end += 1;
            }
        }
        out.push(&actions[start..end]);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests;
