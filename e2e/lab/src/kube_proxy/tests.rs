#![allow(clippy::unwrap_used)]

use std::path::Path;

use super::swap_kubeconfig;

const CONFIG: &str = "apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: /lab/config/svcnet-proxy/config/kubeconfig.conf
# kubeconfig: a comment naming the word stays
clusterCIDR: 10.64.0.0/14
";

#[test]
fn only_the_client_connection_kubeconfig_changes() {
    let out = swap_kubeconfig(CONFIG, Path::new("/lab/config/kube-proxy/kubeconfig.conf")).unwrap();
    let want = CONFIG.replace(
        "  kubeconfig: /lab/config/svcnet-proxy/config/kubeconfig.conf",
        "  kubeconfig: /lab/config/kube-proxy/kubeconfig.conf",
    );
    assert_eq!(out, want);
}

#[test]
fn a_config_without_a_kubeconfig_line_is_an_error() {
    let text = "mode: iptables\nclusterCIDR: 10.64.0.0/14\n";
    let err = swap_kubeconfig(text, Path::new("/k")).unwrap_err();
    assert!(err.to_string().contains("found 0"), "{err}");
}
