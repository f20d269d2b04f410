use super::*;

#[test]
fn status_fields_are_read_in_kb() {
    let text =
        "Name:\tsvcnet-proxy\nVmPeak:\t  900 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40960 kB\nThreads:\t4\n";
    assert_eq!(
        parse_status(text),
        Some(Mem {
            rss_kb: 40960,
            hwm_kb: 51234
        })
    );
    assert_eq!(parse_status("Name:\tx\nVmRSS:\t1 kB\n"), None, "no VmHWM");
}

#[test]
fn own_status_is_readable() {
    let m = read_mem(std::process::id()).expect("own /proc status");
    assert!(m.rss_kb > 0 && m.hwm_kb >= m.rss_kb);
}

#[test]
fn first_sync_outcome_comes_from_the_log() {
    assert_eq!(sync_state("starting\nwaiting for Services\n"), None);
    assert_eq!(
        sync_state("x\nINFO synced family=ipv4 seq=1\n"),
        Some(SyncState::Synced)
    );
    let failed = sync_state("ERROR sync failed; previous rules stay\nINFO synced\n");
    assert!(matches!(failed, Some(SyncState::Failed(l)) if l.contains("sync failed")));
}

#[test]
fn endpoint_addresses_are_unique_and_in_the_cluster_cidr() {
    let a = endpoint_ip(0);
    let b = endpoint_ip(99_999);
    assert_eq!(a, Ipv4Addr::new(10, 128, 0, 1));
    assert_eq!(b, Ipv4Addr::new(10, 129, 134, 160));
    let net: ipnet::Ipv4Net = "10.128.0.0/9".parse().unwrap();
    assert!(net.contains(&a) && net.contains(&b));
}

#[test]
fn slice_belongs_to_its_service_and_has_every_endpoint() {
    let s = slice(7, 10);
    assert_eq!(s["metadata"]["labels"]["kubernetes.io/service-name"], "svc-00007");
    assert_eq!(s["endpoints"].as_array().unwrap().len(), 10);
    assert_eq!(s["endpoints"][0]["addresses"][0], endpoint_ip(70).to_string());
    assert_eq!(service(7)["metadata"]["name"], "svc-00007");
}

#[test]
fn log_message_drops_colour_time_and_target() {
    let line = "\u{1b}[2m2026-11-21T10:57:47Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2msvcnet_proxy::daemon\u{1b}[0m\u{1b}[2m:\u{1b}[0m waiting for Services";
    assert_eq!(log_message(line), "waiting for Services");
    assert_eq!(log_message("plain"), "plain");
}

#[test]
fn caches_count_as_loaded_once_every_kind_is_listed() {
    let two = "DEBUG list complete kind=Service\nDEBUG list complete kind=Node\n";
    assert!(!lists_complete(two));
    assert!(lists_complete(&format!(
        "{two}DEBUG list complete kind=EndpointSlice\n"
    )));
}

#[test]
fn load_time_is_the_loaders_last_word() {
    assert_eq!(
        load_seconds("loaded 10 services x 2 endpoints in 2.500\n"),
        Duration::from_millis(2500)
    );
    assert_eq!(load_seconds(""), Duration::ZERO, "no output: 0, as before");
    assert_eq!(load_seconds("loaded in ?\n"), Duration::ZERO, "not a number: 0");
}
