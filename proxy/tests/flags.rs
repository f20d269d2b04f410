//! `svcnet-proxy run` with a bad flag exits during argument checking, naming the flag. Needs no root
//! and no network namespace: the binary runs with an empty `PATH`, so even a proxy that got past its
//! checks could not run iptables, nft or conntrack on this machine; it would fail naming the missing
//! tool instead of the flag.

use std::process::Command;

#[test]
fn run_with_a_bad_flag_fails_before_touching_the_node() {
    let empty = tempfile::tempdir().expect("tmp dir");
    for (flag, value) in [
        ("--detect-local-mode", "Bogus"),
        ("--nodeport-addresses", "10.0.0.0/99"),
        ("--iptables-masquerade-bit", "40"),
        ("--healthz-bind-address", "nowhere"),
        ("--metrics-bind-address", "1.2.3:99"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_svcnet-proxy"))
            .args([
                "run",
                "--kubeconfig",
                "/nonexistent/kubeconfig",
                "--hostname-override",
                "node-a",
                flag,
                value,
            ])
            .env_clear()
            .env("PATH", empty.path())
            .output()
            .expect("run svcnet-proxy");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} accepted:\n{stderr}");
        assert!(
            stderr.contains("invalid flags") && stderr.contains(flag),
            "{flag} {value}:\n{stderr}"
        );
        assert!(!stderr.contains("starting svcnet-proxy"), "{stderr}");
    }
}
