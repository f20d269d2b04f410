//! Parsing slices one by one and merging them must give exactly what the single-pass merge gave
//! (`reference` below is that merge, kept as the oracle): same endpoints per port, same errors in the
//! same order, for both families.

use std::collections::BTreeMap;
use std::net::IpAddr;

use proptest::prelude::*;

use super::*;
use crate::model::arbitrary;

/// The merge before records: sort the family's slices by namespace/name, then dedup by `ip:port`.
fn reference(
    slices: &[EndpointSlice],
    family: Family,
) -> (BTreeMap<ServicePortName, Vec<Endpoint>>, Vec<String>) {
    let mut errors = Vec::new();
    let wanted = family.label();
    let mut sorted: Vec<&EndpointSlice> = slices.iter().filter(|s| s.address_type == wanted).collect();
    sorted.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
    let mut out: BTreeMap<ServicePortName, BTreeMap<String, Endpoint>> = BTreeMap::new();
    for slice in sorted {
        let ns = slice
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let object = format!(
            "{}/{}",
            printable(&ns),
            printable(slice.metadata.name.as_deref().unwrap_or_default())
        );
        let Some(svc) = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
        else {
            continue;
        };
        if !is_dns1123_label(&ns) || !is_dns1035_label(svc) {
            errors.push(format!(
                "EndpointSlice {object}: field metadata.labels[{SERVICE_NAME_LABEL}]"
            ));
            continue;
        }
        for (pi, port) in slice.ports.iter().flatten().enumerate() {
            let port_name = port.name.clone().unwrap_or_default();
            if !port_name.is_empty() && !is_dns1123_label(&port_name) {
                errors.push(format!("EndpointSlice {object}: field ports[{pi}].name"));
                continue;
            }
            let Some(protocol) = Protocol::parse_k8s(port.protocol.as_deref().unwrap_or("TCP")) else {
                errors.push(format!("EndpointSlice {object}: field ports[{pi}].protocol"));
                continue;
            };
            let Some(p) = port.port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0) else {
                continue;
            };
            let key = ServicePortName {
                namespace: ns.clone(),
                name: svc.clone(),
                port: port_name,
                protocol,
            };
            let entry = out.entry(key).or_default();
            for (ei, ep) in slice.endpoints.iter().enumerate() {
                let Some(addr) = ep.addresses.first() else {
                    continue;
                };
                let ip = match addr.parse::<IpAddr>() {
                    Ok(ip) if family.matches(&ip) => ip,
                    _ => {
                        if pi == 0 {
                            errors.push(format!(
                                "EndpointSlice {object}: field endpoints[{ei}].addresses[0]"
                            ));
                        }
                        continue;
                    }
                };
                let cond = ep.conditions.as_ref();
                let h = ep.hints.as_ref();
                let zones: Vec<String> = h
                    .and_then(|h| h.for_zones.as_ref())
                    .map(|z| z.iter().map(|z| z.name.clone()).collect())
                    .unwrap_or_default();
                let nodes: Vec<String> = h
                    .and_then(|h| h.for_nodes.as_ref())
                    .map(|z| z.iter().map(|z| z.name.clone()).collect())
                    .unwrap_or_default();
                let e = Endpoint {
                    ip,
                    port: p,
                    ready: cond.and_then(|c| c.ready).unwrap_or(true),
                    serving: cond.and_then(|c| c.serving).unwrap_or(true),
                    terminating: cond.and_then(|c| c.terminating).unwrap_or(false),
                    node_name: ep.node_name.as_deref().map(Arc::from),
                    hints: (!zones.is_empty() || !nodes.is_empty()).then(|| Box::new(Hints { zones, nodes })),
                };
                entry.entry(e.addr()).or_insert(e);
            }
        }
    }
    let out = out
        .into_iter()
        .map(|(k, v)| (k, v.into_values().collect()))
        .collect();
    (out, errors)
}

/// Errors reduced to object and field (the reference does not repeat the messages).
fn located(errors: &[ModelError]) -> Vec<String> {
    errors
        .iter()
        .map(|e| {
            let s = e.to_string();
            s.split(':').take(2).collect::<Vec<_>>().join(":")
        })
        .collect()
}

fn check(slices: &[EndpointSlice]) -> Result<(), TestCaseError> {
    for family in [Family::V4, Family::V6] {
        let (got, errors) = endpoints_from_slices(slices, family);
        let (want, want_errors) = reference(slices, family);
        let got: BTreeMap<ServicePortName, Vec<Endpoint>> =
            got.into_iter().map(|(k, v)| (k, v.to_vec())).collect();
        prop_assert_eq!(&got, &want, "{:?}", family);
        prop_assert_eq!(located(&errors), want_errors, "{:?}", family);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn per_slice_parse_and_merge_equals_the_single_pass_merge(
        slices in prop::collection::vec(arbitrary::slice(), 0..8),
    ) {
        check(&slices)?;
    }
}

fn yaml(s: &str) -> EndpointSlice {
    crate::yaml::from_str(s).expect("slice yaml")
}

#[test]
fn duplicates_across_slices_first_by_name_wins_and_single_slices_are_shared() {
    let a = yaml(
        "metadata: {name: s-b, namespace: default, labels: {kubernetes.io/service-name: web}}\naddressType: IPv4\nports: [{port: 80}]\nendpoints:\n- {addresses: [10.0.0.2], conditions: {ready: true}, nodeName: n1}\n- {addresses: [10.0.0.10], conditions: {ready: true}}\n",
    );
    let b = yaml(
        "metadata: {name: s-a, namespace: default, labels: {kubernetes.io/service-name: web}}\naddressType: IPv4\nports: [{port: 80}]\nendpoints:\n- {addresses: [10.0.0.2], conditions: {ready: false}, nodeName: n1}\n",
    );
    let c = yaml(
        "metadata: {name: s-c, namespace: default, labels: {kubernetes.io/service-name: db}}\naddressType: IPv4\nports: [{port: 5432}]\nendpoints:\n- {addresses: [10.0.1.1], nodeName: n1}\n",
    );
    check(&[a.clone(), b.clone(), c.clone()]).expect("same as the reference");
    let mut names = Interner::default();
    let recs: Vec<SliceRecord> = [a, b, c].iter().map(|s| parse_slice(s, &mut names)).collect();
    let (eps, errors) = merge_slices(&recs, Family::V4);
    assert!(errors.is_empty(), "{errors:?}");
    let web: Vec<(String, bool)> = eps
        .iter()
        .find(|(k, _)| k.name == "web")
        .map(|(_, v)| v.iter().map(|e| (e.addr(), e.ready)).collect())
        .expect("web");
    // Sorted as strings; s-a sorts first, so its not-ready copy of 10.0.0.2 wins.
    assert_eq!(
        web,
        vec![("10.0.0.10:80".into(), true), ("10.0.0.2:80".into(), false)]
    );
    // db has one slice: the merged list is that slice's list, not a copy.
    let db = eps
        .iter()
        .find(|(k, _)| k.name == "db")
        .map(|(_, v)| v)
        .expect("db");
    assert!(Arc::ptr_eq(db, &recs[2].ports[0].endpoints));
    // One node name, one allocation.
    let n1: Vec<&Arc<str>> = recs
        .iter()
        .flat_map(|r| r.ports.iter().flat_map(|p| p.endpoints.iter()))
        .filter_map(|e| e.node_name.as_ref())
        .collect();
    assert_eq!(n1.len(), 3);
    assert!(n1.iter().all(|n| Arc::ptr_eq(n, n1[0])));
}

#[test]
fn errors_name_the_slice_and_the_field() {
    let s = yaml(
        "metadata: {name: s-a, namespace: default, labels: {kubernetes.io/service-name: web}}\naddressType: IPv6\nports: [{port: 80}, {port: 81, protocol: XTP}]\nendpoints:\n- {addresses: [10.0.0.1]}\n- {addresses: ['fd00::1']}\n",
    );
    let rec = parse_slice(&s, &mut Interner::default());
    assert_eq!(rec.family, Some(Family::V6));
    let errs: Vec<String> = rec.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "EndpointSlice default/s-a: field endpoints[0].addresses[0]: \"10.0.0.1\" is not an IPv6 address"
        ),
        "{errs:?}"
    );
    assert!(errs[1].contains("field ports[1].protocol"), "{errs:?}");
    assert_eq!(rec.ports.len(), 1);
    assert_eq!(rec.ports[0].endpoints.len(), 1);
    // The V4 family sees nothing of an IPv6 slice, errors included.
    let (eps, errors) = merge_slices([&rec], Family::V4);
    assert!(eps.is_empty() && errors.is_empty());
}

#[test]
fn trigger_time_parses_rfc3339_and_ignores_garbage() {
    let mut s = EndpointSlice::default();
    assert_eq!(trigger_time(&s), None);
    s.metadata.annotations = Some(
        [(
            TRIGGER_TIME_ANNOTATION.to_string(),
            "2024-05-01T10:00:00Z".to_string(),
        )]
        .into(),
    );
    let t = trigger_time(&s).expect("parsed");
    assert_eq!(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .expect("after epoch")
            .as_secs(),
        1_714_557_600
    );
    s.metadata.annotations = Some([(TRIGGER_TIME_ANNOTATION.to_string(), "yesterday".to_string())].into());
    assert_eq!(trigger_time(&s), None);
}
