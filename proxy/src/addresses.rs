//! The node's live interface addresses, for `--nodeport-addresses CIDR` and `primary`: upstream
//! matches the CIDRs against the addresses of the local interfaces (not only the Node's InternalIPs),
//! and reads them at every sync. Read with one rtnetlink address dump (no process per sync: a fork
//! of `ip` cost 3-10 ms of every sync on a loaded node); `ip -o addr show` if netlink fails.

use std::net::IpAddr;

use crate::exec::exec;

/// Parses `ip -o addr show`: `2: eth0    inet 10.0.0.2/24 brd ... scope global eth0\ ...`.
pub(crate) fn parse_ip_addr(output: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = output
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let i = words.iter().position(|w| *w == "inet" || *w == "inet6")?;
            let cidr = words.get(i + 1)?;
            cidr.split('/').next()?.parse().ok()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every address on a local interface; empty when neither netlink nor `ip` can list them (the
/// Node's IPs still apply).
pub(crate) async fn local_addresses() -> Vec<IpAddr> {
    match netlink::addresses() {
        Ok(ips) => return ips,
        Err(err) => tracing::debug!(%err, "listing addresses over rtnetlink failed; running ip"),
    }
    match exec("ip", &["-o", "addr", "show"], None).await {
        Ok(out) if out.success => parse_ip_addr(&out.stdout),
        Ok(out) => {
            tracing::warn!(stderr = out.stderr.trim(), "ip -o addr show failed");
            Vec::new()
        }
        Err(err) => {
            tracing::warn!(%err, "cannot list interface addresses");
            Vec::new()
        }
    }
}

mod netlink;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v4_and_v6() {
        let out = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n\
                   2: eth0    inet 172.30.0.2/24 scope global eth0\\       valid_lft forever\n\
                   2: eth0    inet6 fe80::1/64 scope link \\       valid_lft forever\n\
                   3: br0    inet 10.244.1.1/24 scope global br0\\ \n";
        let ips: Vec<String> = parse_ip_addr(out).iter().map(ToString::to_string).collect();
        assert_eq!(ips, vec!["10.244.1.1", "127.0.0.1", "172.30.0.2", "fe80::1"]);
        assert!(parse_ip_addr("garbage\n").is_empty());
    }
}
