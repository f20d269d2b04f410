//! The calls only RBS NetLBs make against [`MiniGce`] (regional health checks; their backend
//! services, groups, rules, addresses and firewalls are the other kinds' calls), and what the
//! I/O layer would read for one RBS NetLB.

use super::{MiniGce, insert, update_check};
use crate::naming::l4::RbsNames;
use crate::objects::action::Action;
use crate::objects::observed::RbsObserved;

impl MiniGce {
    /// None: not a regional health check call.
    pub(super) fn apply_rbs(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateRegionHealthCheck(h) => insert(&mut self.region_health_checks, &h.name, h),
            Action::UpdateRegionHealthCheck(h) => update_check(&mut self.region_health_checks, h),
            Action::DeleteRegionHealthCheck { name, .. } => self.delete_check(name, true),
            _ => return None,
        })
    }

    /// What the I/O layer would GET for this RBS NetLB (`gce::observe_rbs`).
    pub(crate) fn observed_rbs(&self, names: &RbsNames, want_ip: Option<&str>) -> RbsObserved {
        let firewall = |name: &String| self.firewalls.get(name).cloned();
        let check = |name: &String| self.region_health_checks.get(name).cloned();
        RbsObserved {
            address: self.addresses.get(&names.lb).cloned(),
            ip_holder: self.address_holding(want_ip),
            forwarding_rule: self.forwarding_rules.get(&names.lb).cloned(),
            backend_service: self.backend_services.get(&names.backend).cloned(),
            shared_health_check: check(&names.shared_health_check),
            local_health_check: check(&names.backend),
            nodes_firewall: firewall(&names.backend),
            shared_health_check_firewall: firewall(&names.shared_health_check_firewall),
            local_health_check_firewall: firewall(&names.local_health_check_firewall),
            ipv6_forwarding_rule: self.forwarding_rules.get(&names.ipv6.rule).cloned(),
            ipv6_nodes_firewall: firewall(&names.ipv6.firewall),
            ipv6_address: self.addresses.get(&names.ipv6.rule).cloned(),
            ipv6_shared_health_check_firewall: firewall(&names.ipv6.shared_health_check_firewall),
            ipv6_local_health_check_firewall: firewall(&names.ipv6.local_health_check_firewall),
            instance_groups: self.groups_named(&names.instance_group),
            kept_in_use: Default::default(),
        }
    }
}
