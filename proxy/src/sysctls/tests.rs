//! Expected values from kube-proxy's conntrack settings (cmd/kube-proxy: getConntrackMax, the 1.36 cap
//! and the 1.37 "already large enough" rule) and its flag defaults.

use std::collections::HashMap;

use clap::Parser;

use super::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    ct: ConntrackArgs,
}

fn defaults() -> ConntrackArgs {
    Cli::parse_from(["x"]).ct
}

fn node(values: &[(&str, u64)]) -> impl Fn(&Path) -> Option<u64> {
    let m: HashMap<PathBuf, u64> = values
        .iter()
        .map(|(n, v)| (Path::new(NETFILTER).join(n), *v))
        .collect();
    move |p: &Path| m.get(p).copied()
}

fn names(w: &[Write]) -> Vec<(String, u64)> {
    w.iter()
        .map(|w| {
            let n = w.path.file_name().map(|n| n.to_string_lossy().to_string());
            (n.unwrap_or_default(), w.value)
        })
        .collect()
}

#[test]
fn max_scales_by_cores_with_a_floor_and_the_cap() {
    let d = defaults();
    assert_eq!(desired_max(&d, 2), Some(131072)); // 2 x 32768 < the floor
    assert_eq!(desired_max(&d, 8), Some(262144));
    assert_eq!(desired_max(&d, 96), Some(MAX_CAP)); // 3,145,728 capped
    let off = ConntrackArgs {
        conntrack_max_per_core: 0,
        ..d
    };
    assert_eq!(desired_max(&off, 8), None);
}

#[test]
fn defaults_on_a_fresh_kernel() {
    let fresh = node(&[
        ("nf_conntrack_max", 65536),
        ("nf_conntrack_tcp_timeout_established", 432000),
        ("nf_conntrack_tcp_timeout_close_wait", 60),
        ("nf_conntrack_udp_timeout", 30),
        ("nf_conntrack_udp_timeout_stream", 120),
    ]);
    assert_eq!(
        names(&plan(&defaults(), 8, fresh)),
        [
            ("nf_conntrack_max".to_string(), 262144),
            ("nf_conntrack_tcp_timeout_established".to_string(), 86400),
            ("nf_conntrack_tcp_timeout_close_wait".to_string(), 3600),
        ]
    );
}

#[test]
fn a_larger_table_is_kept_and_equal_values_are_not_rewritten() {
    let tuned = node(&[
        ("nf_conntrack_max", 2_000_000),
        ("nf_conntrack_tcp_timeout_established", 86400),
        ("nf_conntrack_tcp_timeout_close_wait", 3600),
    ]);
    assert!(plan(&defaults(), 8, tuned).is_empty());
}

#[test]
fn udp_timeouts_and_liberal_when_asked() {
    let args = ConntrackArgs {
        conntrack_max_per_core: 0,
        conntrack_tcp_timeout_established: Duration::ZERO,
        conntrack_tcp_timeout_close_wait: Duration::ZERO,
        conntrack_udp_timeout: Duration::from_secs(45),
        conntrack_udp_timeout_stream: Duration::from_secs(150),
        conntrack_tcp_be_liberal: true,
        ..defaults()
    };
    let n = node(&[
        ("nf_conntrack_udp_timeout", 30),
        ("nf_conntrack_tcp_be_liberal", 0),
    ]);
    assert_eq!(
        names(&plan(&args, 8, n)),
        [
            ("nf_conntrack_udp_timeout".to_string(), 45),
            ("nf_conntrack_udp_timeout_stream".to_string(), 150),
            ("nf_conntrack_tcp_be_liberal".to_string(), 1),
        ]
    );
}
