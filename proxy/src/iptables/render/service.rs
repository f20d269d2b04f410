//! Rules for one service port, following upstream kube-proxy's syncProxyRules per-service section.
//! The result is plain data: contributions to the shared chains (written here) plus the chains this
//! port owns ([`super::port_chains`]), both from the port's [`Plan`].

use std::net::IpAddr;
use std::sync::Arc;

use super::naming::*;
use super::plan::{Ctx, Plan, comment_arg, endpoints_of};
use super::port_chains::own_chains;
use super::{Chain, comment};
use crate::config::RenderConfig;
use crate::model::{Categorized, ProxyState, ServicePort, ServicePortName, categorize};

/// What one service port adds to the ruleset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceRules {
    /// nat KUBE-SERVICES rules with their destination (dispatch key).
    pub nat_services: Vec<(IpAddr, String)>,
    pub nat_nodeports: Vec<String>,
    pub filter_services: Vec<String>,
    pub filter_external: Vec<String>,
    pub filter_nodeports: Vec<String>,
    pub filter_firewall: Vec<String>,
    /// nat chains owned by this port (SVC/SVL/EXT/FW/SEP, and KUBE-EPG-* after their SVC/SVL chain),
    /// in upstream order.
    pub chains: Vec<Arc<Chain>>,
    /// For metrics: no local endpoints for internal / external traffic.
    pub no_local_internal: bool,
    pub no_local_external: bool,
}

impl ServiceRules {
    /// Drops spare capacity (the render cache keeps these lines between syncs).
    pub fn shrink_to_fit(&mut self) {
        self.nat_services.shrink_to_fit();
        for v in [
            &mut self.nat_nodeports,
            &mut self.filter_services,
            &mut self.filter_external,
            &mut self.filter_nodeports,
            &mut self.filter_firewall,
        ] {
            v.shrink_to_fit();
        }
        self.chains.shrink_to_fit();
    }
}

impl Ctx<'_> {
    /// Renders one port of `state`.
    pub(super) fn render(
        &self,
        state: &ProxyState,
        name: &ServicePortName,
        svc: &ServicePort,
    ) -> ServiceRules {
        let eps = endpoints_of(state, name);
        render_service_port(svc, &categorize(eps, svc, self.node), self)
    }
}

pub(super) fn render_service_port(svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> ServiceRules {
    let plan = Plan::new(svc, cat);
    let mut out = ServiceRules {
        no_local_internal: plan.has_endpoints && !plan.has_internal,
        no_local_external: plan.has_endpoints && !plan.has_external,
        ..Default::default()
    };
    entry_rules(&plan, svc, ctx.cfg, &mut out);
    out.chains = own_chains(&plan, svc, cat, ctx);
    out
}

/// Rules in the shared chains that catch this port's addresses: nat KUBE-SERVICES and KUBE-NODEPORTS when
/// there are endpoints, filter REJECT/DROP when there are none (for that kind of traffic).
fn entry_rules(p: &Plan, svc: &ServicePort, cfg: &RenderConfig, out: &mut ServiceRules) {
    cluster_ip_rules(p, svc, out);
    external_ip_rules(p, svc, out);
    load_balancer_rules(p, svc, out);
    if let Some(np) = svc.node_port {
        node_port_rules(p, np, cfg, out);
    }
    // Health check node port: always accepted, local endpoints or not.
    if let Some(hc) = svc.health_check_node_port {
        let c = comment_arg(&format!("{} health check node port", p.name));
        out.filter_nodeports
            .push(format!("{c} -m tcp -p tcp --dport {hc} -j ACCEPT"));
    }
}

/// The cluster IP: to the internal chain, or filter's verdict when internal traffic has no endpoint.
fn cluster_ip_rules(p: &Plan, svc: &ServicePort, out: &mut ServiceRules) {
    let (name, m, port, cip) = (&p.name, &p.m, svc.port, svc.cluster_ip);
    let (int_target, int_comment) = &p.internal_filter;
    if p.has_internal {
        let c = comment_arg(&format!("{name} cluster IP"));
        out.nat_services.push((
            cip,
            format!("{c} {m} -d {cip} --dport {port} -j {}", p.internal_chain(svc)),
        ));
    } else {
        out.filter_services.push(format!(
            "-m comment --comment {int_comment} {m} -d {cip} --dport {port} -j {int_target}"
        ));
    }
}

fn external_ip_rules(p: &Plan, svc: &ServicePort, out: &mut ServiceRules) {
    let (name, m, port) = (&p.name, &p.m, svc.port);
    let (ext_target, ext_comment) = &p.external_filter;
    for ip in &svc.external_ips {
        if p.has_endpoints {
            let c = comment_arg(&format!("{name} external IP"));
            out.nat_services
                .push((*ip, format!("{c} {m} -d {ip} --dport {port} -j {}", p.ext_chain)));
        }
        if !p.has_external {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} {m} -d {ip} --dport {port} -j {ext_target}"
            ));
        }
    }
}

/// Load balancer VIPs: through KUBE-FW when source ranges apply (the rest is dropped in filter).
fn load_balancer_rules(p: &Plan, svc: &ServicePort, out: &mut ServiceRules) {
    let (name, m, port) = (&p.name, &p.m, svc.port);
    let (ext_target, ext_comment) = &p.external_filter;
    let lb_chain = if p.uses_fw_chain {
        &p.fw_chain
    } else {
        &p.ext_chain
    };
    for ip in &svc.load_balancer_vips {
        if p.has_endpoints {
            let c = comment_arg(&format!("{name} loadbalancer IP"));
            out.nat_services
                .push((*ip, format!("{c} {m} -d {ip} --dport {port} -j {lb_chain}")));
        }
        if p.uses_fw_chain {
            let c = comment_arg(&format!("{name} traffic not accepted by {}", p.fw_chain));
            out.filter_firewall
                .push(format!("{c} {m} -d {ip} --dport {port} -j DROP"));
        }
    }
    if !p.has_external {
        for ip in &svc.load_balancer_vips {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} {m} -d {ip} --dport {port} -j {ext_target}"
            ));
        }
    }
}

fn node_port_rules(p: &Plan, np: u16, cfg: &RenderConfig, out: &mut ServiceRules) {
    let (name, m) = (&p.name, &p.m);
    let (ext_target, ext_comment) = &p.external_filter;
    if p.has_endpoints {
        if cfg.nfacct && cfg.effective_localhost_nodeports() {
            // Counts NodePort connections to 127.0.0.0/8 (upstream's localhost-NodePort metric);
            // the rule after it would take them to the same chain.
            out.nat_nodeports.push(format!(
                "-m comment --comment {} {m} -d 127.0.0.0/8 --dport {np} -m nfacct --nfacct-name {} -j {}",
                comment(name),
                NFACCT_LOCALHOST_NODEPORTS,
                p.ext_chain
            ));
        }
        out.nat_nodeports.push(format!(
            "-m comment --comment {} {m} --dport {np} -j {}",
            comment(name),
            p.ext_chain
        ));
    }
    if !p.has_external {
        out.filter_external.push(format!(
            "-m comment --comment {ext_comment} -m addrtype --dst-type LOCAL {m} --dport {np} -j {ext_target}"
        ));
    }
}
