//! `nfacct list` parsing, from the output of nfacct 1.0.2 (Debian bookworm).

use super::*;

#[test]
fn parses_counts_by_name() {
    let out = "{ pkts = 00000000000000000000, bytes = 00000000000000000000 } = ct_state_invalid_dropped_pkts;\n\
               { pkts = 00000000000000000012, bytes = 00000000000000000720 } = localhost_nps_accepted_pkts;\n";
    let m = parse_list(out);
    assert_eq!(m.get("ct_state_invalid_dropped_pkts"), Some(&0));
    assert_eq!(m.get("localhost_nps_accepted_pkts"), Some(&12));
    assert_eq!(m.len(), 2);
}

#[test]
fn ignores_what_it_cannot_read() {
    let out = "garbage\n{ pkts = x, bytes = 1 } = bad;\n{ pkts = 5, bytes = 1 } = no-semicolon\n";
    assert!(parse_list(out).is_empty());
}
