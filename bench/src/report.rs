//! The printed table: every figure with its ratio and what it means for a user.

use std::fmt::Write as _;
use std::time::Duration;

use svcnet_proxy::config::Layout;

use crate::p1::{P1, P1Case, Rules, rules_name};
use crate::p2::{P2, Sync};
use crate::stats::{median, ms, percentile, ratio};

/// First-packet cost of the nftables mode at the largest size over the smallest (issue 18; the
/// maps layout's too, issue 32).
const P1_NFT_GROWTH_TARGET: f64 = 1.1;

/// Targets from the benchmarks issue.
pub const P1_TREE_GROWTH_TARGET: f64 = 1.3;
pub const P2_PARTIAL_MS_TARGET: f64 = 50.0;
pub const P3_RENDER_SHARE_TARGET: f64 = 0.05;

fn verdict(ok: bool) -> &'static str {
    if ok { "MET" } else { "MISSED" }
}

fn x(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else {
        format!("{v:.2}x")
    }
}

pub fn header(restore_version: &str, cores: usize, quick: bool) -> String {
    format!(
        "svcnet-bench{}: {restore_version}; {cores} CPU cores visible; timings are medians, other processes may share the machine\n",
        if quick {
            " --quick (smoke run, sizes too small to mean anything)"
        } else {
            ""
        }
    )
}

pub fn p1(r: &P1) -> String {
    let mut s = String::new();
    let base = r.cases.iter().map(|c| c.services).min().unwrap_or(0);
    let top = r.cases.iter().map(|c| c.services).max().unwrap_or(0);
    p1_table(&mut s, r, base);
    let _ = writeln!(
        s,
        "    (rules walked: KUBE-SERVICES + KUBE-DST-* rules compared before the service rule matches; a service with"
    );
    let _ = writeln!(
        s,
        "    E endpoints adds (E+1)/2 probability rules on average (flat; tree up to 64 endpoints), ~16.5 at 1000 with the tree's KUBE-EPG groups; 'vs smallest' compares"
    );
    let _ = writeln!(
        s,
        "    with the same layout at {base} services, or for many endpoints with the 1-endpoint service; nft: one verdict-map"
    );
    let _ = writeln!(
        s,
        "    lookup; maps: the services rules up to the probe's, one per distinct endpoint count ('counts'), its many-endpoint"
    );
    let _ = writeln!(s, "    rows against the same probe at {base} services)");
    let flat = p1_growth(&mut s, r, top, base);
    maps_spread(&mut s, r, top, base);
    for c in r
        .cases
        .iter()
        .filter(|c| c.endpoints > 1 && c.layout != Rules::Maps)
    {
        let g = vs_one_endpoint(r, c);
        let _ = writeln!(
            s,
            "    stretch: {}-endpoint service / 1-endpoint service: {} (target <= {P1_TREE_GROWTH_TARGET}x) {}",
            c.endpoints,
            x(g),
            verdict(g <= P1_TREE_GROWTH_TARGET)
        );
    }
    if let Some(flat) = flat {
        let _ = writeln!(
            s,
            "    means: with the tree, the first packet of a connection costs about the same with {top} services as with {base};"
        );
        let _ = writeln!(
            s,
            "    with upstream's flat list every new connection to a late service walks every rule before it ({} the cost).",
            x(flat)
        );
    }
    s
}

/// The maps layout's spread cases: the probe's walk over many distinct endpoint counts at `top`
/// against the same probe at `base` (the cost the layout's distinct-count risk adds).
fn maps_spread(s: &mut String, r: &P1, top: usize, base: usize) {
    for c in r
        .cases
        .iter()
        .filter(|c| c.layout == Rules::Maps && c.services == top && c.endpoints > 1)
    {
        let (g, g10) = match r.case_eps(Rules::Maps, base, c.endpoints) {
            Some(b) => (
                ratio(c.median_us(), b.median_us()),
                ratio(
                    percentile(&c.samples_us, 10.0).unwrap_or(f64::NAN),
                    percentile(&b.samples_us, 10.0).unwrap_or(f64::NAN),
                ),
            ),
            None => (f64::NAN, f64::NAN),
        };
        let _ = writeln!(
            s,
            "    maps, {} distinct endpoint counts (probe walks {} rules): maps@{top} / maps@{base}, {}-endpoint probe: {} (target <= {P1_NFT_GROWTH_TARGET}x) {}; at p10: {}",
            c.counts,
            c.walked,
            c.endpoints,
            x(g),
            verdict(g <= P1_NFT_GROWTH_TARGET),
            x(g10)
        );
    }
}

/// What a case's "vs smallest" compares with: 1-endpoint cases and maps probes with the same
/// layout and probe at `base` services, other many-endpoint cases with the 1-endpoint service.
fn vs_smallest(r: &P1, c: &P1Case, base: usize) -> f64 {
    match (c.endpoints, c.layout) {
        (1, _) => r.growth(c.layout, c.services, base),
        (e, Rules::Maps) => match r.case_eps(Rules::Maps, base, e) {
            Some(b) => ratio(c.median_us(), b.median_us()),
            None => f64::NAN,
        },
        _ => vs_one_endpoint(r, c),
    }
}

/// A case's median over the 1-endpoint service's of the same layout and size (NaN without one).
fn vs_one_endpoint(r: &P1, c: &P1Case) -> f64 {
    match r.case(c.layout, c.services) {
        Some(one) => ratio(c.median_us(), one.median_us()),
        None => f64::NAN,
    }
}

/// P1's title and one row per case; 1-endpoint cases compare with the same layout at `base` services.
fn p1_table(s: &mut String, r: &P1, base: usize) {
    let _ = writeln!(
        s,
        "\nP1  new-connection cost through the real kernel rules (connect() to a ClusterIP, DNAT in nat OUTPUT)"
    );
    let _ = writeln!(
        s,
        "    probe: the LAST rule of the flat list, which also has one of the longest tree walks"
    );
    let _ = writeln!(
        s,
        "    {:<6} {:>9} {:>10} {:>13} {:>10} {:>9} {:>9} {:>12} {:>8} {:>7}",
        "layout",
        "services",
        "endpoints",
        "rules walked",
        "median us",
        "p10 us",
        "p90 us",
        "vs smallest",
        "samples",
        "counts"
    );
    for c in &r.cases {
        let vs = vs_smallest(r, c, base);
        let _ = writeln!(
            s,
            "    {:<6} {:>9} {:>10} {:>13} {:>10.1} {:>9.1} {:>9.1} {:>12} {:>8} {:>7}",
            rules_name(c.layout),
            c.services,
            c.endpoints,
            c.walked,
            c.median_us(),
            percentile(&c.samples_us, 10.0).unwrap_or(f64::NAN),
            percentile(&c.samples_us, 90.0).unwrap_or(f64::NAN),
            x(vs),
            c.samples_us.len(),
            c.counts
        );
    }
}

/// The growth lines from `base` to `top` services (tree against its target, flat, nftables when
/// measured against its own); returns the flat growth the closing line quotes, `None` when the
/// iptables layouts were not measured (`--p1-maps-only`).
fn p1_growth(s: &mut String, r: &P1, top: usize, base: usize) -> Option<f64> {
    let flat = r
        .case(Rules::Iptables(Layout::Tree), top)
        .map(|_| p1_iptables_growth(s, r, top, base));
    p1_nft_growth(s, r, top, base);
    flat
}

fn p1_iptables_growth(s: &mut String, r: &P1, top: usize, base: usize) -> f64 {
    let tree = r.growth(Rules::Iptables(Layout::Tree), top, base);
    let flat = r.growth(Rules::Iptables(Layout::Flat), top, base);
    let vs = match (
        r.case(Rules::Iptables(Layout::Flat), top),
        r.case(Rules::Iptables(Layout::Tree), top),
    ) {
        (Some(f), Some(t)) => ratio(f.median_us(), t.median_us()),
        _ => f64::NAN,
    };
    let _ = writeln!(
        s,
        "    tree@{top} / tree@{base}: {} (target <= {P1_TREE_GROWTH_TARGET}x) {}; at p10: {}",
        x(tree),
        verdict(tree <= P1_TREE_GROWTH_TARGET),
        x(r.growth_at(Rules::Iptables(Layout::Tree), top, base, 10.0))
    );
    let _ = writeln!(
        s,
        "    flat@{top} / flat@{base}: {} (p10: {})   flat@{top} / tree@{top}: {}",
        x(flat),
        x(r.growth_at(Rules::Iptables(Layout::Flat), top, base, 10.0)),
        x(vs)
    );
    flat
}

fn p1_nft_growth(s: &mut String, r: &P1, top: usize, base: usize) {
    // Issue 18's and 32's goal: map lookups make the first packet's cost independent of the services.
    for layout in [Rules::Nftables, Rules::Maps] {
        if r.case(layout, top).is_none() {
            continue;
        }
        let g = r.growth(layout, top, base);
        let name = rules_name(layout);
        let _ = writeln!(
            s,
            "    {name}@{top} / {name}@{base}: {} (target <= {P1_NFT_GROWTH_TARGET}x) {}; at p10: {}",
            x(g),
            verdict(g <= P1_NFT_GROWTH_TARGET),
            x(r.growth_at(layout, top, base, 10.0))
        );
    }
}

fn med(v: &[Sync], f: impl Fn(&Sync) -> Duration) -> f64 {
    let xs: Vec<f64> = v.iter().map(|s| ms(f(s))).collect();
    median(&xs).unwrap_or(f64::NAN)
}

fn med_lines(v: &[Sync]) -> f64 {
    let xs: Vec<f64> = v.iter().map(|s| s.lines as f64).collect();
    median(&xs).unwrap_or(f64::NAN)
}

/// One row; `layout` is padded to the longest layout name (at least 6).
fn sync_row(s: &mut String, layout: (&str, usize), what: &str, v: &[Sync], full_lines: usize) {
    // A killed restore only gives a lower bound.
    let gt = if v.iter().any(|x| x.killed) { ">" } else { "" };
    let (layout, w) = layout;
    let _ = writeln!(
        s,
        "    {:<w$} {:<18} {:>8.0} {:>10} {:>10.1} {:>10.1} {:>9.1} {:>10} {:>10}",
        layout,
        what,
        med_lines(v),
        full_lines,
        med(v, |x| x.render),
        med(v, |x| x.payload),
        med(v, |x| x.save),
        format!("{gt}{:.1}", med(v, |x| x.restore)),
        format!("{gt}{:.1}", med(v, Sync::total))
    );
}

pub fn p2(r: &P2) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nP2  one service changed at {} services / {} endpoints: one sync end to end (median over changes)",
        r.services, r.endpoints
    );
    let w = r.layouts.iter().map(|l| l.name.len()).max().unwrap_or(0).max(6);
    let _ = writeln!(
        s,
        "    {:<w$} {:<18} {:>8} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10}",
        "layout",
        "sync",
        "lines",
        "full lines",
        "render ms",
        "payload ms",
        "save ms",
        "restore ms",
        "total ms"
    );
    for l in &r.layouts {
        let name = (l.name.as_str(), w);
        sync_row(
            &mut s,
            name,
            "endpoint replaced",
            &l.endpoint_change,
            l.full_lines,
        );
        sync_row(&mut s, name, "service added", &l.service_added, l.full_lines);
        if !l.new_count.is_empty() {
            sync_row(&mut s, name, "new endpoint count", &l.new_count, l.full_lines);
        }
        if !l.affinity_added.is_empty() {
            sync_row(
                &mut s,
                name,
                "affinity svc added",
                &l.affinity_added,
                l.full_lines,
            );
        }
        if let Some(f) = &l.full {
            sync_row(&mut s, name, "FULL sync", std::slice::from_ref(f), l.full_lines);
        }
    }
    for l in &r.layouts {
        let name = l.name.as_str();
        let worst = med(&l.service_added, Sync::total).max(med(&l.endpoint_change, Sync::total));
        let lines = med_lines(&l.service_added).max(med_lines(&l.endpoint_change));
        let _ = write!(
            s,
            "    {name}: partial {lines:.0} of {} lines, {worst:.1} ms (target <= {P2_PARTIAL_MS_TARGET} ms) {}",
            l.full_lines,
            verdict(worst <= P2_PARTIAL_MS_TARGET)
        );
        if let Some(f) = &l.full {
            let gt = if f.killed { ">" } else { "" };
            let _ = write!(s, "; full sync / partial: {gt}{}", x(ratio(ms(f.total()), worst)));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "    means: how long after an endpoint or Service changes the node's rules reflect it (plus watch latency);"
    );
    let _ = writeln!(
        s,
        "    a full sync is what every change would cost without partial payloads."
    );
    s
}

/// One P3 row: render + payload text vs restore of that full payload.
pub struct P3Row {
    pub what: String,
    pub render: Duration,
    pub restore: Duration,
    /// The restore was killed at a time limit: `restore` is a lower bound, the share an upper one.
    pub killed: bool,
}

pub fn p3(rows: &[P3Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nP3  render (render + payload text) vs iptables-restore of the same full payload (restore calls as the daemon batches them)"
    );
    let _ = writeln!(
        s,
        "    {:<34} {:>10} {:>11} {:>8}",
        "case", "render ms", "restore ms", "share"
    );
    for r in rows {
        let share = ratio(ms(r.render), ms(r.restore));
        let (gt, lt) = if r.killed { (">", "<") } else { ("", "") };
        let _ = writeln!(
            s,
            "    {:<34} {:>10.1} {:>11} {:>8} {}",
            r.what,
            ms(r.render),
            format!("{gt}{:.1}", ms(r.restore)),
            format!("{lt}{:.1}%", share * 100.0),
            match (share <= P3_RENDER_SHARE_TARGET, r.killed) {
                (true, _) => "MET",
                (false, false) => "MISSED",
                (false, true) => "UNKNOWN (restore killed: share is an upper bound)",
            }
        );
    }
    let _ = writeln!(
        s,
        "    means: the kernel side (iptables-restore) is the floor of a full sync; share is svcnet's own CPU on top (target <= {:.0}%).",
        P3_RENDER_SHARE_TARGET * 100.0
    );
    s
}

#[cfg(test)]
mod tests;
