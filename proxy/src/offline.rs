//! The offline commands: `render`, `trace` and `explain` read objects or rules from files and print
//! what a node would do; nothing here touches the machine.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::cli::{ExplainArgs, NodeCaps, ProxyMode, RenderArgs, RuleArgs, TraceArgs};
use crate::config::RenderConfig;
use crate::input::{Objects, parse_objects};
use crate::model::{Family, NodeFacts, ProxyState};
use crate::render::{FullOptions, render};
use crate::trace;

fn read(path: &PathBuf) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Loads objects and builds the model for one family; model errors are printed as warnings.
pub fn load(
    file: &PathBuf,
    rules: &RuleArgs,
    caps: NodeCaps,
    family: Family,
) -> Result<(Objects, NodeFacts, ProxyState, RenderConfig)> {
    let objects = parse_objects(&read(file)?).with_context(|| format!("parsing {}", file.display()))?;
    let node = rules.node_facts(&objects);
    let mut cfg = rules.render_config(family, &node)?;
    cfg.random_fully = caps.random_fully;
    cfg.nfacct = caps.nfacct;
    let state = ProxyState::from_k8s(&objects.services, &objects.slices, family);
    for e in &state.errors {
        eprintln!("warning: {e}");
    }
    Ok((objects, node, state, cfg))
}

pub fn run_render(args: &RenderArgs) -> Result<String> {
    let family = if args.ipv6 { Family::V6 } else { Family::V4 };
    let (_, node, state, cfg) = load(&args.file, &args.rules, args.caps, family)?;
    if args.proxy_mode == ProxyMode::Nftables {
        return Ok(crate::nft::render(&state, &node, &cfg).text());
    }
    let rendered = render(&state, &node, &cfg);
    let opts = FullOptions {
        jumps: !args.no_jumps,
        canaries: false,
        ..Default::default()
    };
    Ok(rendered.payload(&opts, &cfg).0)
}

pub fn run_trace(args: &TraceArgs) -> Result<String> {
    let text = read(&args.rules)?;
    let proto: trace::Proto = args
        .proto
        .parse()
        .map_err(|e: trace::UnknownProto| anyhow::anyhow!("--proto: {}", e.0))?;
    let packet = trace::Packet {
        src: args.src,
        dst: args.dst,
        dport: args.dport,
        proto,
        in_iface: args.in_iface.clone(),
    };
    let opts = trace::TraceOptions {
        node_ips: args.node_ip.clone(),
        hook: if args.from_node {
            trace::Hook::Output
        } else {
            trace::Hook::Prerouting
        },
    };
    // Either mode's rules: an nftables table (render output or `nft list table`) or iptables-save text.
    let t = if trace::nft::is_nft(&text) {
        let ruleset =
            trace::nft::parse(&text).with_context(|| format!("parsing {}", args.rules.display()))?;
        trace::nft::trace(&ruleset, &packet, &opts)
    } else {
        let ruleset = trace::parse(&text).with_context(|| format!("parsing {}", args.rules.display()))?;
        trace::trace(&ruleset, &packet, &opts)
    };
    Ok(format!(
        "packet {} {}:{} -> {}:{}\n{t}",
        args.proto, args.src, "*", args.dst, args.dport
    ))
}

pub fn run_explain(args: &ExplainArgs) -> Result<String> {
    crate::explain::explain(&args.file, &args.service, &args.rules, args.caps, args.proxy_mode)
}
