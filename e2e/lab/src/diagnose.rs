//! `svcnet-lab diagnose`: what a failed step needs to be understood, on stderr: every node's
//! `iptables-save` (run inside the node namespace), the VPC router's routes and its filter table with
//! counters (GCE firewall rules, internal addresses: which rule dropped), the fake GCE's state and
//! injected faults, the Services, Pods and EndpointSlices as the API server holds them, and the tail of
//! every component's log.

use std::path::Path;

use anyhow::Result;
use svcnet_netns::link;

use crate::state::{self, State};
use crate::{gce, http, kube, netns, procs};

pub fn run(dir: &Path) -> Result<()> {
    print(dir, &state::load(dir)?);
    Ok(())
}

fn get_in_vpc(st: &State, url: &str) -> String {
    match http::request_in(&st.vpc(), "GET", url, "application/json", "") {
        Ok((_, body)) => body,
        Err(e) => format!("(unavailable: {e:#})"),
    }
}

pub fn print(dir: &Path, st: &State) {
    for node in &st.nodes {
        eprintln!("---- iptables-save on {} ({}) ----", node.name, node.ns);
        match netns::exec(&node.ns, &["iptables-save"]) {
            Ok(rules) => eprintln!("{rules}"),
            Err(e) => eprintln!("(unavailable: {e:#})"),
        }
    }
    eprintln!("---- routes in the vpc router ----");
    eprintln!("{}", link::ip(&st.vpc(), &["route"]).unwrap_or_default());
    eprintln!("---- filter table in the vpc router (iptables-save -c) ----");
    match netns::exec(&st.vpc(), &["iptables-save", "-c", "-t", "filter"]) {
        Ok(rules) => eprintln!("{rules}"),
        Err(e) => eprintln!("(unavailable: {e:#})"),
    }
    eprintln!("---- fake GCE state ----");
    eprintln!("{}", get_in_vpc(st, &gce::url("/_fake/state")));
    eprintln!("---- fake GCE faults ----");
    eprintln!("{}", get_in_vpc(st, &gce::url("/_fake/faults")));
    eprintln!("---- services, pods, endpointslices, nodes (kubectl get -A -o wide) ----");
    match kube::kubectl_ok(
        dir,
        st,
        &["get", "svc,pods,endpointslices,nodes", "-A", "-o", "wide"],
    ) {
        Ok(out) => eprintln!("{out}"),
        Err(e) => eprintln!("(unavailable: {e:#})"),
    }
    let mut names: Vec<String> = [
        "etcd",
        "apiserver",
        "controller-manager",
        "api-proxy",
        "fake-gce",
        "cloud-controller",
        "vpc-agent",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.extend(st.nodes.iter().map(|n| format!("proxy-{}", n.name)));
    // Upstream kube-proxy, where the takeover step started it.
    names.extend(st.procs.keys().filter(|k| k.starts_with("kube-proxy-")).cloned());
    for name in names {
        let text = std::fs::read_to_string(procs::log_path(dir, &name)).unwrap_or_default();
        eprintln!("---- {name}.log (tail) ----\n{}", procs::tail(&text, 40));
    }
}
