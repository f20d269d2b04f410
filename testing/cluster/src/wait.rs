//! Polling until a condition holds, for tests and test tools that watch a system converge (a Service
//! getting its rules, a Pod its IP): one loop, so every caller times out and reports the same way.

use std::time::{Duration, Instant};

/// Calls `f` every `every` until it returns Some; None when it has not by `timeout` after the first
/// call. `f` runs at least once, so a zero timeout is a single check.
pub fn poll<T>(timeout: Duration, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// [`poll`], panicking with `timed out after {timeout:?} waiting for {what}` when `f` never answers.
#[track_caller]
pub fn wait_for<T>(what: &str, timeout: Duration, every: Duration, f: impl FnMut() -> Option<T>) -> T {
    match poll(timeout, every, f) {
        Some(v) => v,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn poll_returns_the_first_answer() {
        let mut calls = 0;
        let got = poll(Duration::from_secs(5), MS, || {
            calls += 1;
            (calls == 3).then_some(calls)
        });
        assert_eq!(got, Some(3));
    }

    #[test]
    fn poll_gives_up_after_the_timeout_having_checked_at_least_once() {
        let mut calls = 0;
        let got: Option<()> = poll(Duration::ZERO, MS, || {
            calls += 1;
            None
        });
        assert_eq!((got, calls), (None, 1));
        let start = Instant::now();
        assert_eq!(poll::<()>(20 * MS, MS, || None), None);
        assert!(start.elapsed() >= 20 * MS);
    }

    #[test]
    #[should_panic(expected = "timed out after 0ns waiting for the moon")]
    fn wait_for_panics_naming_what_it_waited_for() {
        wait_for::<()>("the moon", Duration::ZERO, MS, || None);
    }
}
