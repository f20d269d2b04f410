//! The maps layout's first load in userspace, stage by stage, with the process's VmRSS / VmHWM
//! after each (docs/nftables-maps.md, "Memory"): the model (P2's synthetic state), the cache
//! filled, the load in pieces encoded one batch at a time (as the daemon loads a table no packet
//! reaches yet), the whole-table netlink batch encoded and dropped (as it replaces a live table),
//! and (`text`) the `nft -f` text.
//! Nothing is written to a kernel. `cargo run --release -p svcnet-bench --example maps_memory --
//! SERVICES ENDPOINTS_PER_SERVICE [text]`.

use std::error::Error;

use svcnet_bench::synth;
use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::nftables::netlink::{PIECE_BYTES, Pieces, Start, encode_replacement};
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
