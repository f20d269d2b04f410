//! `explain`: where packets to one Service go, in words. It renders the ruleset (iptables or, with
//! `--proxy-mode nftables`, the `kube-proxy` table), then traces representative packets through it
//! with [`crate::offline::trace`], so the explanation is exactly what the kernel would do with these rules.

mod port;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, bail};

use crate::config::NodeCaps;
use crate::config::{NftLayout, ProxyMode, RenderConfig};
use crate::iptables::render::{FullOptions, render};
use crate::model::{Family, NodeFacts, ProxyState, ServicePort, ServicePortName};
use crate::offline::input::load;
use crate::offline::trace;
use crate::settings::RuleSettings;
use port::{Rules, Scene, explain_port};

pub(crate) fn explain(
    file: &Path,
    service: &str,
    rules: &RuleSettings,
    caps: NodeCaps,
    mode: ProxyMode,
) -> Result<String> {
    let Some((ns, name)) = service.split_once('/') else {
        bail!("--service {service:?}: expected namespace/name");
    };
    let mut out = String::new();
    let mut found = false;
    for family in [Family::V4, Family::V6] {
        let (objects, node, state, cfg) = load(file, rules, caps, family)?;
        if family == Family::V4 {
            let Some(svc) = objects.services.iter().find(|s| {
                s.metadata.name.as_deref() == Some(name)
                    && s.metadata.namespace.as_deref().unwrap_or("default") == ns
            }) else {
                bail!("service {service} is not in {}", file.display());
            };
            if let Some(reason) = crate::model::service::skip_reason(svc) {
                let _ = writeln!(out, "{service}: svcnet-proxy writes no rules for it: {reason}.");
                return Ok(out);
            }
        }
        let ports: Vec<&ServicePort> = state
            .services
            .values()
            .map(AsRef::as_ref)
            .filter(|p| p.name.namespace == ns && p.name.name == name)
            .collect();
        if ports.is_empty() {
            continue;
        }
        found = true;
        let (ruleset, owners, what) = rules_of(mode, &state, &node, &cfg)?;
        let _ = writeln!(
            out,
            "Service {service} ({}, node {:?}, {what})",
            family.label(),
            node.name,
        );
        let scene = Scene {
            state: &state,
            node: &node,
            ruleset: &ruleset,
            family,
            cfg: &cfg,
        };
        for p in ports {
            let owned: Vec<&str> = owners
                .get(&p.name)
                .map(|c| c.iter().map(String::as_str).collect())
                .unwrap_or_default();
            explain_port(&mut out, p, &owned, &scene);
        }
    }
    if !found {
        let _ = writeln!(
            out,
            "{service}: no usable port or cluster IP; see the warnings above."
        );
    }
    Ok(out)
}

/// The chains of each service port (in the maps layout: the sets and maps holding its elements).
type Owners = BTreeMap<ServicePortName, Vec<String>>;

/// The ruleset of `mode`, parsed for tracing; the chains each port owns; how the rules are laid out.
fn rules_of(
    mode: ProxyMode,
    state: &ProxyState,
    node: &NodeFacts,
    cfg: &RenderConfig,
) -> Result<(Rules, Owners, String)> {
    Ok(match mode {
        ProxyMode::Iptables => {
            let rendered = render(state, node, cfg);
            let opts = FullOptions {
                jumps: true,
                ..Default::default()
            };
            let text = rendered.payload(&opts, cfg).0;
            (
                Rules::Iptables(trace::parse(&text)?),
                rendered.owners(),
                format!("layout {:?}", cfg.layout),
            )
        }
        ProxyMode::Nftables if cfg.nft_layout == NftLayout::Maps => {
            let table = crate::nftables::render::maps::render(state, node, cfg);
            let owners = state
                .services
                .iter()
                .map(|(k, svc)| {
                    let eps = state.endpoints.get(k).map_or(&[][..], |e| &e[..]);
                    (
                        k.clone(),
                        crate::nftables::render::maps::port_sets(svc, eps, node, cfg),
                    )
                })
                .collect();
            (
                Rules::NftMaps(trace::nft::parse(&table.text())?),
                owners,
                "nftables mode, maps layout".to_string(),
            )
        }
        ProxyMode::Nftables => {
            let rendered = crate::nftables::render::render(state, node, cfg);
            let owners = rendered
                .services
                .iter()
                .map(|(k, o)| (k.clone(), o.chains.iter().map(|c| c.name.clone()).collect()))
                .collect();
            (
                Rules::Nftables(trace::nft::parse(&rendered.text())?),
                owners,
                "nftables mode".to_string(),
            )
        }
    })
}
