//! P1's `maps` rows: the nftables mode's maps layout (issue 32, docs/nftables-maps.md), its table
//! written as the daemon's first sync writes it (P2's `maps-nl` path: [`MapsCache`] and one
//! netlink batch). Its dispatch is one rule per distinct endpoint count, tried in order (counts
//! past the direct ones in two levels of bucket chains), so the probe is the service with the
//! largest count (the last buckets; a count at an inner bucket's end is also its last rule), and a
//! "spread" case gives the table many distinct counts to measure that walk.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use svcnet_proxy::config::{NftLayout, RenderConfig};
use svcnet_proxy::model::ProxyState;
use svcnet_proxy::nftables::render::maps::{Bucket, Group, MapsCache};
use svcnet_proxy::nftables::render::naming::SERVICES;

use super::{Loaded, P1Case, Rules, finish, state_of};
use crate::error::BenchError;
use crate::lab::Lab;
use crate::synth::{self, ENDPOINT_PORT};

/// Distinct endpoint counts among the services of `state` (the maps layout's dispatch rules per
/// protocol and scope).
pub(super) fn distinct_counts(state: &ProxyState) -> usize {
    let counts: BTreeSet<usize> = state
        .services
        .keys()
        .map(|name| state.endpoints.get(name).map_or(0, |e| e.len()))
        .collect();
    counts.len()
}

/// Gives services `0..eps-2` the endpoint counts `2..eps` (exclusive), so that with the probe's
/// `eps` and everyone else's 1 the table holds `eps` distinct counts and the probe's is the largest.
fn spread_counts(state: &mut ProxyState, n: usize, eps: usize) -> Result<(), BenchError> {
    if eps > n + 1 {
        return Err(BenchError::Check(format!(
            "{eps} distinct endpoint counts need at least {} services, not {n}",
            eps - 1
        )));
    }
    let mut next_pod = n;
    for (i, count) in (2..eps).enumerate() {
        let endpoints = (0..count)
            .map(|k| synth::endpoint(synth::pod_ip(next_pod + k), ENDPOINT_PORT))
            .collect();
        next_pod += count;
        state.endpoints.insert(synth::service_name(i), endpoints);
    }
    Ok(())
}

/// The rules a TCP connection to a key with `eps` endpoints is compared against, its dispatch
/// rule included: `services` up to its count's rule (marks first, then one rule per direct count,
/// ascending, then one jump per outer bucket of larger counts) and, for a bucketed count, its outer
/// bucket's chain up to the jump to its inner bucket, and that chain up to the count's rule.
fn walked(cache: &MapsCache, eps: usize) -> Result<usize, BenchError> {
    let table = cache.skeleton();
    let g = Group::Addr;
    let position = |chain: &str, needle: &str| {
        table
            .chain(chain)
            .and_then(|c| c.rules.iter().position(|r| r.text.contains(needle)))
            .map(|i| i + 1)
    };
    let direct = |chain: &str| {
        position(
            chain,
            &format!(
                "meta l4proto tcp ip daddr . meta l4proto . th dport @{} ",
                g.set(eps)
            ),
        )
    };
    let jump = |chain: &str, to: Bucket| position(chain, &format!("@{} jump ", g.bucket_set(to)));
    let walked = match g.buckets(eps) {
        None => direct(SERVICES),
        Some([outer, inner]) => [
            jump(SERVICES, outer),
            jump(&g.bucket_chain(outer), inner),
            direct(&g.bucket_chain(inner)),
        ]
        .into_iter()
        .sum::<Option<usize>>(),
    };
    walked.ok_or_else(|| BenchError::Check(format!("no maps dispatch rule for {eps} endpoints")))
}

/// `n` services, the probed one (the last) with `eps` endpoints; `spread`: many distinct counts.
pub(super) fn load(n: usize, ips: &[Ipv4Addr], eps: usize, spread: bool) -> Result<Loaded, BenchError> {
    let mut state = state_of(n, ips, eps)?;
    if spread {
        spread_counts(&mut state, n, eps)?;
    }
    let cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        ..RenderConfig::default()
    };
    let tag = format!("p1-maps{n}-{eps}{}", if spread { "s" } else { "" });
    let mut lab = Lab::start(&tag)?;
    let mut cache = MapsCache::new(synth::node(), cfg);
    let written = crate::p2::maps::sync(&mut lab, &state, &mut cache, None, true, &mut None)?;
    let walked = walked(&cache, eps)?;
    finish(
        lab,
        P1Case {
            layout: Rules::Maps,
            services: n,
            endpoints: eps,
            counts: distinct_counts(&state),
            walked,
            payload_lines: written.lines,
            render: written.render,
            restore: written.restore,
            chunks: 1,
            samples_us: Vec::new(),
        },
        IpAddr::V4(ips[n - 1]),
    )
}
