//! The calls of internal LBs against [`MiniGce`] (instance groups, health checks of the
//! healthChecks collection, backend services), what GCE refuses as in use, and what the I/O
//! layer would read for one internal LB.

use super::{MiniGce, insert, remove, update_check};
use crate::naming::IlbNames;
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::objects::{self, BackendService};

fn in_use(what: &str, name: &str) -> Result<(), String> {
    Err(format!("400 resourceInUseByAnotherResource: {what} {name}"))
}

/// `zone/name`: how [`MiniGce::instance_groups`] keys a group.
fn group_id(zone: &str, name: &str) -> String {
    format!("{zone}/{name}")
}

impl MiniGce {
    /// None: not an internal LB call.
    pub(super) fn apply_internal(&mut self, action: &Action) -> Option<Result<(), String>> {
        self.apply_group(action).or_else(|| self.apply_backend(action))
    }

    fn group_in_use(&self, zone: &str, name: &str) -> bool {
        let tail = format!("zones/{zone}/instanceGroups/{name}");
        self.backend_services
            .values()
            .any(|b| b.backends.iter().any(|g| g.group.ends_with(&tail)))
    }

    fn apply_group(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateInstanceGroup { zone, name } => {
                insert(&mut self.instance_groups, &group_id(zone, name), &Vec::new())
            }
            Action::DeleteInstanceGroup { zone, name } => {
                if self.group_in_use(zone, name) {
                    return Some(in_use("instance group", name));
                }
                remove(&mut self.instance_groups, &group_id(zone, name)).map(drop)
            }
            Action::AddGroupInstances {
                zone,
                group,
                instances,
            } => self.change_members(zone, group, instances, true),
            Action::RemoveGroupInstances {
                zone,
                group,
                instances,
            } => self.change_members(zone, group, instances, false),
            _ => return None,
        })
    }

    /// addInstances (`add`) or removeInstances: GCE refuses the whole call when one instance
    /// already is (is not) a member.
    fn change_members(
        &mut self,
        zone: &str,
        group: &str,
        instances: &[String],
        add: bool,
    ) -> Result<(), String> {
        let Some(members) = self.instance_groups.get_mut(&group_id(zone, group)) else {
            return Err(format!("404 notFound: instance group {group}"));
        };
        if let Some(i) = instances.iter().find(|i| members.contains(i) == add) {
            let reason = if add {
                "memberAlreadyExists"
            } else {
                "memberNotFound"
            };
            return Err(format!("400 {reason}: {i}"));
        }
        if add {
            members.extend(instances.iter().cloned());
            members.sort();
        } else {
            members.retain(|m| !instances.contains(m));
        }
        Ok(())
    }

    /// A backend service references existing groups and checks only.
    fn backend_refs_exist(&self, b: &BackendService) -> Result<(), String> {
        for g in &b.backends {
            let found = self.instance_groups.keys().any(|id| {
                let (zone, name) = id.split_once('/').unwrap_or_default();
                g.group.ends_with(&format!("zones/{zone}/instanceGroups/{name}"))
            });
            if !found {
                return Err(format!("404 notFound: instance group {}", g.group));
            }
        }
        // A regional check (RBS NetLBs) lives in its own collection.
        let exists = |l: &String| {
            let name = objects::link_name(l);
            if l.contains("/regions/") {
                self.region_health_checks.contains_key(name)
            } else {
                self.health_checks_v1.contains_key(name)
            }
        };
        match b.health_checks.iter().find(|l| !exists(l)) {
            Some(l) => Err(format!("404 notFound: health check {l}")),
            None => Ok(()),
        }
    }

    fn apply_backend(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateHealthCheckV1(h) => insert(&mut self.health_checks_v1, &h.name, h),
            Action::UpdateHealthCheckV1(h) => update_check(&mut self.health_checks_v1, h),
            Action::DeleteHealthCheckV1 { name, .. } => self.delete_check(name, false),
            Action::CreateBackendService(b) => self
                .backend_refs_exist(b)
                .and_then(|()| insert(&mut self.backend_services, &b.name, b)),
            Action::UpdateBackendService(b) => {
                if let Err(e) = self.backend_refs_exist(b) {
                    return Some(Err(e));
                }
                match self.backend_services.get_mut(&b.name) {
                    Some(have) => {
                        *have = b.clone();
                        Ok(())
                    }
                    None => Err(format!("404 notFound: backend service {}", b.name)),
                }
            }
            Action::DeleteBackendService { name } => {
                let used = self
                    .forwarding_rules
                    .values()
                    .any(|f| objects::link_name(&f.backend_service) == name);
                if used {
                    return Some(in_use("backend service", name));
                }
                remove(&mut self.backend_services, name).map(drop)
            }
            _ => return None,
        })
    }

    /// What the I/O layer would GET for this internal load balancer (`gce::observe_ilb`).
    pub(crate) fn observed_ilb(&self, names: &IlbNames, want_ip: Option<&str>) -> IlbObserved {
        let address = self.addresses.get(&names.lb).cloned();
        let firewall = |name: &String| self.firewalls.get(name).cloned();
        let check = |name: &String| self.health_checks_v1.get(name).cloned();
        IlbObserved {
            address,
            ip_holder: self.address_holding(want_ip),
            forwarding_rule: self.forwarding_rules.get(&names.lb).cloned(),
            backend_service: self.backend_services.get(&names.lb).cloned(),
            nodes_health_check: check(&names.nodes_health_check),
            local_health_check: check(&names.local_health_check),
            firewall: firewall(&names.firewall),
            legacy_firewall: firewall(&names.legacy_firewall),
            nodes_health_check_firewall: firewall(&names.nodes_health_check_firewall),
            local_health_check_firewall: firewall(&names.local_health_check_firewall),
            ipv6_forwarding_rule: self.forwarding_rules.get(&names.ipv6.rule).cloned(),
            ipv6_address: self.addresses.get(&names.ipv6.rule).cloned(),
            ipv6_firewall: firewall(&names.ipv6.firewall),
            ipv6_nodes_health_check_firewall: firewall(&names.ipv6.shared_health_check_firewall),
            ipv6_local_health_check_firewall: firewall(&names.ipv6.local_health_check_firewall),
            instance_groups: self.groups_named(&names.instance_group),
            // Learnt from kept deletes during a sync, never read.
            kept_in_use: Default::default(),
        }
    }
}
