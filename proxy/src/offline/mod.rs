//! The offline commands: `render`, `trace` and `explain` read objects or rules from files and print
//! what a node would do; nothing here touches the machine. Their input ([`input`]: Services,
//! EndpointSlices and Nodes from YAML), the packet tracer of both modes' rules ([`trace`]) and the
//! explanation in words (`explain`) live here; rendering is each mode's own renderer. Nothing of
//! the agent's runs here:
//!
//! Never imports: crate::daemon, crate::sync, crate::watch, crate::cleanup.

mod explain;
pub mod input;
pub mod trace;

use anyhow::{Context, Result};

use crate::cli::{ExplainArgs, RenderArgs, TraceArgs};
use crate::config::{NftLayout, ProxyMode};
use crate::iptables::render::{FullOptions, render};
use crate::model::Family;
use crate::settings::RuleSettings;
use input::{load, read};

pub fn run_render(args: &RenderArgs) -> Result<String> {
    let family = if args.ipv6 { Family::V6 } else { Family::V4 };
    let rules = RuleSettings::from_args(&args.rules, args.proxy_mode)?;
    let (_, node, state, cfg) = load(&args.file, &rules, args.caps, family)?;
    if args.proxy_mode == ProxyMode::Nftables {
        return Ok(match cfg.nft_layout {
            NftLayout::Upstream => crate::nftables::render::render(&state, &node, &cfg).text(),
            NftLayout::Maps => crate::nftables::render::maps::render(&state, &node, &cfg).text(),
        });
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
    let rules = RuleSettings::from_args(&args.rules, args.proxy_mode)?;
    explain::explain(&args.file, &args.service, &rules, args.caps, args.proxy_mode)
}
