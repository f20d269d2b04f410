//! The calls of external LBs (and the addresses, firewalls and forwarding rules both kinds use)
//! against [`MiniGce`].

use super::{MiniGce, insert, remove};
use crate::objects::action::Action;
use crate::objects::{self, Address, SCHEME_INTERNAL};

impl MiniGce {
    /// None: not one of these calls.
    pub(super) fn apply_external(&mut self, action: &Action) -> Option<Result<(), String>> {
        self.apply_shared(action)
            .or_else(|| self.apply_legacy_check(action))
            .or_else(|| self.apply_pool(action))
            .or_else(|| self.apply_rule(action))
    }

    /// A new address gets the next IP of its kind when it names none.
    fn create_address(&mut self, a: &Address) -> Result<(), String> {
        let mut a = a.clone();
        match &a.address {
            Some(ip) => {
                if self.addresses.values().any(|x| x.address.as_deref() == Some(ip)) {
                    return Err(format!("400 IP {ip} already reserved"));
                }
            }
            None => {
                self.next_ip += 1;
                let net = if a.address_type == SCHEME_INTERNAL {
                    "10.128.0"
                } else {
                    "203.0.113"
                };
                a.address = Some(format!("{net}.{}", self.next_ip));
            }
        }
        insert(&mut self.addresses, &a.name.clone(), &a)
    }

    fn apply_shared(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateAddress(a) => self.create_address(a),
            Action::DeleteAddress { name } => remove(&mut self.addresses, name).map(drop),
            Action::CreateFirewall(f) => insert(&mut self.firewalls, &f.name, f),
            Action::PatchFirewall(f) => match self.firewalls.get_mut(&f.name) {
                Some(have) => {
                    *have = f.clone();
                    Ok(())
                }
                None => Err("404 firewall".into()),
            },
            Action::DeleteFirewall { name } => remove(&mut self.firewalls, name).map(drop),
            _ => return None,
        })
    }

    fn apply_legacy_check(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateHealthCheck(h) => insert(&mut self.health_checks, &h.name, h),
            Action::UpdateHealthCheck(h) => match self.health_checks.get_mut(&h.name) {
                Some(have) => {
                    *have = h.clone();
                    Ok(())
                }
                None => Err("404 health check".into()),
            },
            Action::DeleteHealthCheck { name, .. } => {
                if self
                    .pools
                    .values()
                    .any(|p| p.health_checks.iter().any(|l| objects::link_name(l) == name))
                {
                    return Some(Err(format!(
                        "400 resourceInUseByAnotherResource: health check {name}"
                    )));
                }
                remove(&mut self.health_checks, name).map(drop)
            }
            _ => return None,
        })
    }

    fn apply_pool(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateTargetPool(p) => {
                if p.health_checks.len() > 1 {
                    return Some(Err("400 at most one health check".into()));
                }
                if let Some(hc) = p
                    .health_checks
                    .iter()
                    .find(|hc| !self.health_checks.contains_key(objects::link_name(hc)))
                {
                    return Some(Err(format!("404 health check {hc}")));
                }
                insert(&mut self.pools, &p.name, p)
            }
            Action::DeleteTargetPool { name } => {
                if self
                    .forwarding_rules
                    .values()
                    .any(|f| objects::link_name(&f.target) == name)
                {
                    return Some(Err(format!("400 resourceInUseByAnotherResource: pool {name}")));
                }
                remove(&mut self.pools, name).map(drop)
            }
            Action::AddInstances { pool, instances } => self.add_instances(pool, instances),
            Action::RemoveInstances { pool, instances } => self.remove_instances(pool, instances),
            Action::AddHealthCheck { pool, health_check } => self.add_health_check(pool, health_check),
            Action::RemoveHealthCheck { pool, health_check } => {
                let Some(p) = self.pools.get_mut(pool) else {
                    return Some(Err("404 pool".into()));
                };
                let before = p.health_checks.len();
                p.health_checks.retain(|l| !objects::same_link(l, health_check));
                if before == p.health_checks.len() {
                    return Some(Err("400 health check not in pool".into()));
                }
                Ok(())
            }
            _ => return None,
        })
    }

    fn add_instances(&mut self, pool: &str, instances: &[String]) -> Result<(), String> {
        let p = self.pools.get_mut(pool).ok_or("404 pool")?;
        for i in instances {
            if p.instances
                .iter()
                .any(|x| objects::instance_key(x) == objects::instance_key(i))
            {
                return Err(format!("400 instance {i} already in pool"));
            }
            p.instances.push(i.clone());
        }
        Ok(())
    }

    fn remove_instances(&mut self, pool: &str, instances: &[String]) -> Result<(), String> {
        let p = self.pools.get_mut(pool).ok_or("404 pool")?;
        for i in instances {
            let before = p.instances.len();
            p.instances
                .retain(|x| objects::instance_key(x) != objects::instance_key(i));
            if p.instances.len() == before {
                return Err(format!("400 instance {i} not in pool"));
            }
        }
        Ok(())
    }

    fn add_health_check(&mut self, pool: &str, health_check: &str) -> Result<(), String> {
        if !self.health_checks.contains_key(objects::link_name(health_check)) {
            return Err(format!("404 health check {health_check}"));
        }
        let p = self.pools.get_mut(pool).ok_or("404 pool")?;
        if !p.health_checks.is_empty() {
            return Err("400 pool already has a health check".into());
        }
        p.health_checks.push(health_check.to_owned());
        Ok(())
    }

    /// A rule's target: the pool of an external rule, the backend service of an internal one.
    fn rule_target_exists(&self, f: &objects::ForwardingRule) -> Result<(), String> {
        let found = if f.backend_service.is_empty() {
            self.pools.contains_key(objects::link_name(&f.target))
        } else {
            self.backend_services
                .contains_key(objects::link_name(&f.backend_service))
        };
        if found {
            Ok(())
        } else {
            Err(format!("404 target {}{}", f.target, f.backend_service))
        }
    }

    fn apply_rule(&mut self, action: &Action) -> Option<Result<(), String>> {
        Some(match action {
            Action::CreateForwardingRule(f) => self
                .rule_target_exists(f)
                .and_then(|()| insert(&mut self.forwarding_rules, &f.name, f)),
            Action::DeleteForwardingRule { name } => remove(&mut self.forwarding_rules, name).map(drop),
            Action::SetTarget {
                forwarding_rule,
                target,
            } => {
                if !self.pools.contains_key(objects::link_name(target)) {
                    return Some(Err(format!("404 target {target}")));
                }
                match self.forwarding_rules.get_mut(forwarding_rule) {
                    Some(f) => {
                        f.target = target.clone();
                        Ok(())
                    }
                    None => Err("404 forwarding rule".into()),
                }
            }
            _ => return None,
        })
    }
}
