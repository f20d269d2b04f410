use super::*;

#[test]
fn cpu_ticks_sums_own_and_reaped_children_time() {
    // A command with spaces and a ')' in it: fields are counted from the last ')'.
    let stat = "4242 (kube proxy) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                150 25 7 3 20 0 12 0 123456 800000000 20000 18446744073709551615";
    assert_eq!(cpu_ticks(stat), Some(150 + 25 + 7 + 3));
}

#[test]
fn cpu_ticks_rejects_short_or_garbled_lines() {
    assert_eq!(cpu_ticks("4242 (p) S 1 2 3"), None);
    assert_eq!(cpu_ticks("no parenthesis here"), None);
    assert_eq!(cpu_ticks("1 (p) S 1 1 1 0 -1 0 0 0 0 0 x 2 3 4"), None);
}

#[test]
fn our_own_stat_parses() {
    let text = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    assert!(cpu_ticks(&text).is_some(), "{text}");
}

#[test]
fn proxies_run_upstream_first_with_distinct_namespace_tags() {
    assert_eq!(Proxy::ALL[0], Proxy::KubeIptables);
    let every: Vec<Proxy> = Proxy::ALL.iter().copied().chain([Proxy::SvcnetMaps]).collect();
    let tags: std::collections::HashSet<_> = every.iter().map(|p| p.tag()).collect();
    assert_eq!(tags.len(), every.len());
}

#[test]
fn quick_and_full_defaults() {
    let a = args::UArgs::default();
    let full = a.params(false);
    assert_eq!((full.services, full.endpoints), (10_000, 10));
    assert_eq!(full.churn, 1000);
    assert!(
        full.gap > Duration::from_secs(1),
        "gap must exceed the 1 s min-sync-period"
    );
    let quick = a.params(true);
    assert!(quick.services < full.services && quick.churn < full.churn);
    assert_eq!(quick.proxies, Proxy::ALL.to_vec());
}

#[test]
fn legacy_names_run_iptables_legacy_under_the_plain_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = match legacy_names(dir.path()) {
        Ok(bin) => bin,
        Err(e) => {
            // The bench's own check: the machine has no iptables-legacy to link to.
            println!("SKIPPED: {e}");
            return;
        }
    };
    for tool in ["iptables", "ip6tables", "iptables-save", "iptables-restore"] {
        let out = std::process::Command::new(bin.join(tool))
            .arg("--version")
            .output()
            .expect("run the link");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("(legacy)"), "{tool} --version: {text}");
    }
}
