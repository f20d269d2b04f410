use super::*;

#[test]
fn ci_means_set_and_not_false() {
    assert!(ci_value(Some("true")));
    assert!(ci_value(Some("1")));
    assert!(ci_value(Some("TRUE")));
    assert!(!ci_value(None));
    assert!(!ci_value(Some("")));
    assert!(!ci_value(Some("0")));
    assert!(!ci_value(Some("false")));
}

#[test]
#[should_panic(expected = "required in CI but unavailable: no ip")]
fn a_missing_capability_fails_in_ci() {
    skip_in(true, "no ip");
}

#[test]
fn a_missing_capability_is_a_printed_skip_elsewhere() {
    // Returns (the caller then returns early); the SKIPPED line goes to stderr.
    skip_in(false, "no ip");
}
