use super::*;
use std::io::Write;

#[test]
fn durations() {
    assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
    assert!(parse_duration("5").is_err());
    assert!(parse_duration("5d").is_err());
    assert!(parse_duration("").is_err());
}

fn load(text: &str) -> Result<KubeProxyConfiguration, ConfigFileError> {
    let mut f = tempfile::NamedTempFile::new().expect("tmp");
    f.write_all(text.as_bytes()).expect("write");
    KubeProxyConfiguration::load(f.path())
}

#[test]
fn upstream_file_loads() {
    let cfg = load(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n\
         clientConnection:\n  kubeconfig: /var/lib/kube-proxy/kubeconfig\n  qps: 5\nclusterCIDR: 10.244.0.0/16\n\
         iptables:\n  masqueradeBit: 14\n  minSyncPeriod: 2s\n  syncPeriod: 1m\nnodePortAddresses: [primary]\n\
         conntrack:\n  maxPerCore: 32768\n",
    )
    .expect("loads");
    assert_eq!(cfg.cluster_cidr.as_deref(), Some("10.244.0.0/16"));
    assert_eq!(
        cfg.iptables.as_ref().and_then(|i| i.min_sync_period.as_deref()),
        Some("2s")
    );
    assert_eq!(cfg.node_port_addresses, Some(vec!["primary".to_string()]));
}

#[test]
fn rejects_other_modes_and_bad_durations() {
    assert!(matches!(
        load("mode: ipvs\n"),
        Err(ConfigFileError::Invalid { .. })
    ));
    assert!(matches!(
        load("iptables:\n  syncPeriod: soon\n"),
        Err(ConfigFileError::Invalid { .. })
    ));
    assert!(matches!(
        load("kind: Pod\n"),
        Err(ConfigFileError::Invalid { .. })
    ));
    assert!(matches!(load(": :"), Err(ConfigFileError::Parse { .. })));
}
