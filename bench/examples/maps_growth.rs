//! What the kernel spends on a growth of the maps table (a new endpoint count: a new key set and a
//! dispatch rule, docs/nftables-maps.md "Where the goals stand"), by what the new rule's `dnat ...
//! map` binds: a populated map (the synthetic state's one count, `@eps-<E>`, holds every endpoint,
//! as one map shared by every count did), or a new empty map of its own (the layout's). The
//! table is P2's synthetic state written as the daemon's first sync writes it, in a throwaway
//! network namespace; each growth is one netlink batch with no element, and only its `apply` (the
//! kernel's commit and answer) is timed. `cargo run --release -p svcnet-bench --example maps_growth
//! -- SERVICES,... [ENDPOINTS_PER_SERVICE]` (root).

use std::collections::BTreeMap;
use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use svcnet_bench::synth;
use svcnet_netns::Netns;
use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::model::Family;
use svcnet_proxy::nftables::netlink::{encode_growth, encode_replacement};
use svcnet_proxy::nftables::render::Rule;
use svcnet_proxy::nftables::render::maps::{MapsCache, MapsSet, MapsTable};
use svcnet_proxy::nftables::socket::NftSocket;

/// Growths timed per variant and size.
const RUNS: usize = 7;

/// `table` with a new key set for count `n` and its dispatch rule at the end of `services`, the
/// rule's map `full` (populated) or (`own`) a new empty map declared as `full` is.
fn grown(table: &MapsTable, n: usize, full: &str, own: bool) -> Result<MapsTable, Box<dyn Error>> {
    let mut t = table.clone();
    let eps = t
        .sets
        .iter()
        .find(|s| s.name == full)
        .ok_or("no populated map")?
        .clone();
    let key = "ip daddr . meta l4proto . th dport";
    t.sets.push(MapsSet {
        name: format!("svcs-{n}"),
        is_map: false,
        decl: "type ipv4_addr . inet_proto . inet_service".into(),
        flags: Vec::new(),
    });
    let map = match own {
        true => {
            let name = format!("eps-{n}");
            t.sets.push(MapsSet {
                name: name.clone(),
                ..eps
            });
            name
        }
        false => eps.name,
    };
    let rule =
        format!("meta l4proto tcp {key} @svcs-{n} dnat ip to {key} . numgen random mod {n} map @{map}");
    let services = t
        .chains
        .iter_mut()
        .find(|c| c.name == "services")
        .ok_or("no services chain")?;
    services.rules.push(Rule::new(rule));
    Ok(t)
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v.get(v.len() / 2).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = args
        .first()
        .map_or("1000,10000", String::as_str)
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let endpoints: usize = args.get(1).map(|a| a.parse()).transpose()?.unwrap_or(10);
    let cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        ..RenderConfig::default()
    };
    for services in sizes {
        let ns = Netns::new("growth")?;
        let mut socket =
            NftSocket::open_in(&Path::new("/run/netns").join(ns.name()), Duration::from_secs(120))?;
        let state = synth::state(&synth::cluster_ips(services, 0x5eed), endpoints);
        let mut cache = MapsCache::new(synth::node(), cfg.clone());
        for (name, svc) in &state.services {
            cache.set_port(name, Some((svc.clone(), state.endpoints.get(name).cloned())));
        }
        cache.take_change(true);
        let mut table = cache.skeleton();
        let load = encode_replacement(&table, cache.elements(), &[], None, socket.next_start())?;
        socket.apply(&load)?;
        let mut next = 1000;
        let full = format!("eps-{endpoints}");
        for (label, own) in [
            ("binds the populated map", false),
            ("binds a new empty map", true),
        ] {
            let mut times = Vec::new();
            for _ in 0..RUNS {
                let after = grown(&table, next, &full, own)?;
                next += 1;
                let handles = BTreeMap::from([(
                    "services".to_string(),
                    socket.rule_handles(Family::V4, "services")?,
                )]);
                let batch = encode_growth(&table, &after, &handles, &[], &[], socket.next_start())?;
                let t = Instant::now();
                socket.apply(&batch)?;
                times.push(t.elapsed());
                table = after;
            }
            let all: Vec<String> = times
                .iter()
                .map(|d| format!("{:.2}", d.as_secs_f64() * 1e3))
                .collect();
            println!(
                "{services} services x {endpoints} ({} elements): a growth that {label}: {:.2} ms median ({})",
                cache.len(),
                median(times),
                all.join(" ")
            );
        }
    }
    Ok(())
}
