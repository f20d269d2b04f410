//! The maps layout's first load in userspace, stage by stage, with the process's VmRSS / VmHWM
//! after each (docs/nftables-maps.md, "Memory"): the model (P2's synthetic state), the cache
//! filled, the load in pieces encoded one batch at a time (as the daemon loads a table no packet
//! reaches yet), a refresh of a live table that holds the same elements (the cache's digests, and
//! the batch that leaves every comparable set as it is), the whole-table netlink batch encoded and
//! dropped (a replacement that writes every set), and (`text`) the `nft -f` text.
//! Nothing is written to a kernel. `cargo run --release -p svcnet-bench --example maps_memory --
//! SERVICES ENDPOINTS_PER_SERVICE [text]`.

use std::error::Error;

use svcnet_bench::synth;
use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::nftables::netlink::read::{KernelChain, KernelSet, TableObjects};
use svcnet_proxy::nftables::netlink::{
    PIECE_BYTES, Pieces, RefreshPlan, SetDigest, Start, encode_refresh, encode_replacement,
};
use svcnet_proxy::nftables::render::maps::MapsCache;

fn status(stage: &str) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .map_or("?", str::trim)
            .to_string()
    };
    println!(
        "{stage:<16} VmRSS {:>10}  VmHWM {:>10}",
        field("VmRSS:"),
        field("VmHWM:")
    );
}

/// A refresh over a kernel table that holds what the cache holds.
fn refresh(cache: &MapsCache) -> Result<(), Box<dyn Error>> {
    let skeleton = cache.skeleton();
    let kernel = TableObjects {
        chains: (skeleton.chains.iter().enumerate())
            .map(|(i, c)| KernelChain {
                name: c.name.clone(),
                handle: i as u64 + 1,
                hooked: c.hook.is_some(),
            })
            .collect(),
        sets: skeleton
            .sets
            .iter()
            .map(|s| KernelSet {
                name: s.name.clone(),
                ..KernelSet::default()
            })
            .collect(),
        dormant: false,
    };
    // No kernel here: the cache's digests are summed as the plan sums them, and the batch is
    // encoded for the plan a kernel table holding the same elements gets (every set without
    // intervals or timeouts kept).
    let mut digests = std::collections::BTreeMap::<String, SetDigest>::new();
    for e in cache.elements() {
        digests.entry(e.set.name()).or_default().add_element(&e);
    }
    status("digests summed");
    let plan = RefreshPlan {
        keep: (skeleton.sets.iter())
            .filter(|s| {
                !s.flags
                    .iter()
                    .any(|f| ["interval", "dynamic", "timeout"].contains(f))
            })
            .map(|s| s.name.clone())
            .collect(),
        flush: Default::default(),
    };
    let batch = encode_refresh(&skeleton, cache.elements(), &[], &kernel, &plan, Start::default())?;
    status("refresh encoded");
    println!(
        "refresh: {} of {} sets kept, batch {} bytes, {} sets' digests",
        plan.keep.len(),
        skeleton.sets.len(),
        batch.bytes.len(),
        digests.len()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: usize| -> Result<usize, Box<dyn Error>> {
        Ok(args.get(i).map(|a| a.parse()).transpose()?.unwrap_or(default))
    };
    let (services, endpoints) = (number(0, 10_000)?, number(1, 10)?);
    status("start");
    let state = synth::state(&synth::cluster_ips(services, 0x5eed), endpoints);
    status("model");
    let cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        ..RenderConfig::default()
    };
    let mut cache = MapsCache::new(synth::node(), cfg);
    for (name, svc) in &state.services {
        cache.set_port(name, Some((svc.clone(), state.endpoints.get(name).cloned())));
    }
    status("cache filled");
    cache.take_change(true);
    let skeleton = cache.skeleton();
    let mut pieces = Pieces::new(&skeleton, cache.elements(), &[], PIECE_BYTES);
    let (mut n, mut bytes, mut largest) = (0, 0, 0);
    while let Some(batch) = pieces.next_batch(Start::default())? {
        (n, bytes, largest) = (n + 1, bytes + batch.bytes.len(), largest.max(batch.bytes.len()));
    }
    status("pieces encoded");
    println!("pieces: {n} batches, {bytes} bytes, the largest {largest} bytes");
    refresh(&cache)?;
    let batch = encode_replacement(&cache.skeleton(), cache.elements(), &[], None, Start::default())?;
    status("batch encoded");
    println!(
        "{} elements; batch {} bytes in {} messages",
        cache.len(),
        batch.bytes.len(),
        batch.messages
    );
    drop(batch);
    status("batch dropped");
    if args.get(2).is_some_and(|a| a == "text") {
        let text = cache.replace_text();
        status("text written");
        println!("text {} bytes", text.len());
    }
    Ok(())
}
