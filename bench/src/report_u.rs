//! The printed table of part U: each proxy's figures side by side, and every svcnet figure as a
//! ratio to each upstream kube-proxy mode's (below 1: svcnet is smaller or faster).

use std::fmt::Write as _;

use crate::stats::{median, percentile, ratio};
use crate::upstream::{UResult, URow};

type Figure = (&'static str, fn(&URow) -> Val);

/// One figure of one proxy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    Missing,
    Exact(f64),
    /// Not done when the wait ended after this long: the figure is above it.
    Over(f64),
}

impl From<Option<f64>> for Val {
    fn from(v: Option<f64>) -> Val {
        v.map_or(Val::Missing, Val::Exact)
    }
}

fn mib(kb: u64) -> Option<f64> {
    (kb > 0).then_some(kb as f64 / 1024.0)
}

/// The rows of the table: label and how to read the figure from a row.
pub const FIGURES: &[Figure] = &[
    ("full sync from start (s)", |r| {
        match (r.full_sync, r.full_sync_over) {
            (Some(d), _) => Val::Exact(d.as_secs_f64()),
            (None, Some(d)) => Val::Over(d.as_secs_f64()),
            (None, None) => Val::Missing,
        }
    }),
    ("VmHWM after full sync (MiB)", |r| mib(r.hwm_sync_kb).into()),
    ("VmHWM at the end (MiB)", |r| mib(r.hwm_end_kb).into()),
    ("endpoint replaced -> live p50 (ms)", |r| {
        median(&r.replace_ms).into()
    }),
    ("endpoint replaced -> live p90 (ms)", |r| {
        percentile(&r.replace_ms, 90.0).into()
    }),
    ("  its slice PUT answered p50 (ms)", |r| {
        median(&r.replace_put_ms).into()
    }),
    ("Service added -> live p50 (ms)", |r| median(&r.add_ms).into()),
    ("Service added -> live p90 (ms)", |r| {
        percentile(&r.add_ms, 90.0).into()
    }),
    ("  its Service POST answered p50 (ms)", |r| {
        median(&r.add_post_ms).into()
    }),
    ("first packet (connect) p50 (us)", |r| {
        median(&r.connect_us).into()
    }),
    ("CPU s per 1000 endpoint changes", |r| r.cpu_per_1000.into()),
];

fn is_upstream(r: &URow) -> bool {
    r.name.starts_with("kube-proxy")
}

fn number(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn cell(v: Val) -> String {
    match v {
        Val::Exact(v) => number(v),
        Val::Over(v) => format!(">{}", number(v)),
        Val::Missing => "-".into(),
    }
}

/// svcnet's figure over upstream's; a bound on either side bounds the ratio.
fn ratio_cell(ours: Val, up: Val) -> String {
    let (r, mark) = match (ours, up) {
        (Val::Exact(a), Val::Exact(b)) => (ratio(a, b), ""),
        (Val::Exact(a), Val::Over(b)) => (ratio(a, b), "<"),
        (Val::Over(a), Val::Exact(b)) => (ratio(a, b), ">"),
        _ => (f64::NAN, ""),
    };
    if r.is_finite() {
        format!("{mark}{r:.2}x")
    } else {
        "n/a".into()
    }
}

/// Short column names: "kube-proxy iptables" -> "kp-ipt", "svcnet tree" -> "tree".
fn short(name: &str) -> String {
    name.replace("kube-proxy iptables", "kp-ipt")
        .replace("kube-proxy nftables", "kp-nft")
        .replace("svcnet ", "")
}

pub fn u(r: &UResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nU   upstream anchor: {} services x {} endpoints loaded once through the real kube-apiserver ({:.1} s); \
         each proxy alone in its node namespace, shipped defaults (min-sync-period 1 s both), {}",
        r.services,
        r.endpoints,
        r.load.as_secs_f64(),
        r.iptables.name()
    );
    let ups: Vec<&URow> = r.rows.iter().filter(|x| is_upstream(x)).collect();
    let ours: Vec<&URow> = r.rows.iter().filter(|x| !is_upstream(x)).collect();
    let mut head = format!("    {:<36}", "");
    for row in &r.rows {
        let _ = write!(head, " {:>8}", short(&row.name));
    }
    for o in &ours {
        for u in &ups {
            let _ = write!(head, " {:>12}", format!("{}/{}", short(&o.name), short(&u.name)));
        }
    }
    let _ = writeln!(s, "{}", head.trim_end());
    for (label, get) in FIGURES {
        let mut line = format!("    {label:<36}");
        for row in &r.rows {
            let _ = write!(line, " {:>8}", cell(get(row)));
        }
        for o in &ours {
            for u in &ups {
                let _ = write!(line, " {:>12}", ratio_cell(get(o), get(u)));
            }
        }
        let _ = writeln!(s, "{line}");
    }
    // The counts of the row that got furthest (an upstream row may have stopped early).
    if let Some(r0) = r
        .rows
        .iter()
        .max_by_key(|x| x.replace_ms.len() + x.connect_us.len())
    {
        let _ = writeln!(
            s,
            "    latency: median/p90 over {} changes of each kind, each from an idle proxy; first packet over {} connects; \
             churn: {:.1} s of writes per proxy",
            r0.replace_ms.len(),
            r0.connect_us.len(),
            r0.churn_wall.as_secs_f64()
        );
    }
    for row in r.rows.iter().filter(|x| x.error.is_some()) {
        let err = row.error.as_deref().unwrap_or_default();
        let _ = writeln!(s, "    {}: {}", row.name, err.lines().next().unwrap_or_default());
    }
    s
}

#[cfg(test)]
mod tests;
