//! The skip rule: a test that cannot get what it needs says `SKIPPED: reason` on a developer machine,
//! and fails under CI, where the image has everything and a skip would pass for a green run.

use crate::Netns;

/// Whether this runs in CI: `CI` is set to anything but empty, `0` or `false`.
pub fn in_ci() -> bool {
    ci_value(std::env::var("CI").ok().as_deref())
}

fn ci_value(v: Option<&str>) -> bool {
    v.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// A capability the test needs is missing: under CI this panics, otherwise it prints `SKIPPED: why`
/// and the caller returns without asserting anything.
pub fn skip_or_panic(why: &str) {
    skip_in(in_ci(), why);
}

fn skip_in(ci: bool, why: &str) {
    if ci {
        panic!("required in CI but unavailable: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

/// A namespace for the test, or `None` after [`skip_or_panic`] (which panics under CI).
pub fn netns_or_skip(tag: &str) -> Option<Netns> {
    match Netns::new(tag) {
        Ok(ns) => Some(ns),
        Err(e) => {
            skip_or_panic(&format!("cannot create a network namespace (not root?): {e}"));
            None
        }
    }
}

#[cfg(test)]
mod tests;
