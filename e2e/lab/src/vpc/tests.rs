//! The weight a weighted backend service reads from a check answer, and how hops take it.

use serde_json::json;

use super::*;
use crate::lb_targets::Target;

fn hop(ip: &str) -> (String, String) {
    (ip.to_owned(), format!("dev-{ip}"))
}

fn target(weighted: bool) -> Target {
    Target {
        ip: "203.0.113.9".into(),
        members: vec![hop("10.0.0.1"), hop("10.0.0.2"), hop("10.0.0.3")],
        checks: vec![json!({"name": "regionHealthChecks/hc"})],
        weighted,
    }
}

fn weights(w: &[(&str, u64)]) -> BTreeMap<(String, String), u64> {
    w.iter()
        .map(|(ip, w)| (((*ip).to_owned(), "regionHealthChecks/hc".to_owned()), *w))
        .collect()
}

#[test]
fn the_weight_header_is_read_case_insensitively() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nX-Load-Balancing-Endpoint-Weight: 3\r\n";
    assert_eq!(header_weight(head), Some(3));
    assert_eq!(header_weight("HTTP/1.1 200 OK\r\nx-other: 3\r\n"), None);
    assert_eq!(
        header_weight("HTTP/1.1 200 OK\r\nx-load-balancing-endpoint-weight: many\r\n"),
        None
    );
}

#[test]
fn weighted_targets_take_the_answered_weights_and_zero_takes_nothing() {
    let members = target(true).members;
    let w = weights(&[("10.0.0.1", 1), ("10.0.0.2", 3), ("10.0.0.3", 0)]);
    let got: Vec<(String, u64)> = weigh(&target(true), members.clone(), &w)
        .into_iter()
        .map(|(ip, _, w)| (ip, w))
        .collect();
    assert_eq!(got, [("10.0.0.1".to_owned(), 1), ("10.0.0.2".to_owned(), 3)]);
    // Unweighted: every hop 1, whatever the checks said.
    let flat: Vec<u64> = weigh(&target(false), members.clone(), &w)
        .into_iter()
        .map(|h| h.2)
        .collect();
    assert_eq!(flat, [1, 1, 1]);
    // All zero: all share.
    let zero = weights(&[("10.0.0.1", 0), ("10.0.0.2", 0), ("10.0.0.3", 0)]);
    assert_eq!(weigh(&target(true), members.clone(), &zero).len(), 3);
    // Above the kernel's 256: scaled, ratios kept.
    let big = weights(&[("10.0.0.1", 250), ("10.0.0.2", 1000), ("10.0.0.3", 500)]);
    let scaled: Vec<u64> = weigh(&target(true), members, &big)
        .into_iter()
        .map(|h| h.2)
        .collect();
    assert_eq!(scaled, [62, 250, 125]);
}
