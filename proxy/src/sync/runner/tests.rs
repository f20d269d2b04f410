use super::*;

fn runner(min: u64, max: u64) -> (Runner, Shutdown) {
    let s = Shutdown::new();
    (
        Runner::new(Duration::from_secs(min), Duration::from_secs(max), s.clone()),
        s,
    )
}

/// Waits for the next run and checks why and when it came (`after` since `from`), then ends it.
async fn next_run(r: &mut Runner, reason: Reason, from: Instant, after: Duration) {
    assert!(r.wait().await);
    assert_eq!(r.last_reason, Some(reason));
    assert_eq!(Instant::now() - from, after);
    r.done(true);
}

#[tokio::test(start_paused = true)]
async fn first_run_is_immediate_then_changes_respect_min_interval() {
    let (mut r, _s) = runner(1, 30);
    let t0 = Instant::now();
    assert!(r.wait().await);
    assert_eq!(r.last_reason, Some(Reason::First));
    assert_eq!(Instant::now(), t0);
    r.done(true);
    r.trigger().request();
    r.trigger().request(); // coalesces with the first request
    next_run(&mut r, Reason::Changed, t0, Duration::from_secs(1)).await;
    // No further request: the next run is the periodic one.
    next_run(&mut r, Reason::Periodic, t0, Duration::from_secs(31)).await;
}

#[tokio::test(start_paused = true)]
async fn change_after_quiet_period_runs_at_once() {
    let (mut r, _s) = runner(1, 30);
    assert!(r.wait().await);
    r.done(true);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let t = Instant::now();
    r.trigger().request();
    assert!(r.wait().await);
    assert_eq!(Instant::now(), t);
}

#[tokio::test(start_paused = true)]
async fn failures_retry_with_growing_delay_capped_by_max() {
    let (mut r, _s) = runner(1, 5);
    assert!(r.wait().await);
    let mut t = Instant::now();
    let mut gaps = Vec::new();
    for _ in 0..4 {
        r.done(false);
        assert!(r.wait().await);
        assert_eq!(r.last_reason, Some(Reason::Retry));
        gaps.push((Instant::now() - t).as_secs());
        t = Instant::now();
    }
    assert_eq!(gaps, vec![1, 2, 4, 5]);
    r.done(true);
    assert!(r.wait().await);
    assert_eq!(r.last_reason, Some(Reason::Periodic));
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_waiting() {
    let (mut r, s) = runner(1, 30);
    assert!(r.wait().await);
    r.done(true);
    s.trigger();
    assert!(!r.wait().await);
}

#[tokio::test(start_paused = true)]
async fn requests_before_a_run_starts_are_covered_by_it() {
    let (mut r, _s) = runner(1, 30);
    let t0 = Instant::now();
    // The watches' first lists request runs before the first one.
    r.trigger().request();
    assert!(r.wait().await);
    assert_eq!(r.last_reason, Some(Reason::First));
    r.done(true);
    // A change, and another while the runner holds the run back for the min interval.
    r.trigger().request();
    let trigger = r.trigger();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.request();
    });
    next_run(&mut r, Reason::Changed, t0, Duration::from_secs(1)).await;
    // Both were taken by that run: nothing until the periodic one.
    next_run(&mut r, Reason::Periodic, t0, Duration::from_secs(31)).await;
}

#[tokio::test(start_paused = true)]
async fn a_request_during_a_run_causes_one_more() {
    let (mut r, _s) = runner(1, 30);
    let t0 = Instant::now();
    assert!(r.wait().await);
    // The run is in progress: its changes were already taken.
    r.trigger().request();
    r.done(true);
    next_run(&mut r, Reason::Changed, t0, Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn intervals_count_from_the_end_of_a_run() {
    let (mut r, _s) = runner(1, 30);
    assert!(r.wait().await);
    // A run that takes 3 s, with a change arriving during it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    r.trigger().request();
    r.done(true);
    next_run(&mut r, Reason::Changed, Instant::now(), Duration::from_secs(1)).await;
    next_run(&mut r, Reason::Periodic, Instant::now(), Duration::from_secs(30)).await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_runner_with_a_burst_of_two_runs_a_second_change_at_once() {
    let (r, _s) = runner(1, 30);
    let mut r = r.with_burst(2);
    assert!(r.wait().await);
    r.done(true);
    tokio::time::sleep(Duration::from_secs(5)).await;
    // A Service, then its EndpointSlice while the first run is in progress.
    let t = Instant::now();
    r.trigger().request();
    assert!(r.wait().await);
    assert_eq!(Instant::now(), t);
    r.trigger().request();
    r.done(true);
    next_run(&mut r, Reason::Changed, t, Duration::ZERO).await;
    // The bank is spent: a third change waits out the min interval.
    r.trigger().request();
    next_run(&mut r, Reason::Changed, t, Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn under_steady_churn_a_burst_adds_no_runs_beyond_the_banked_ones() {
    for burst in [1, 2] {
        let (r, _s) = runner(1, 30);
        let mut r = r.with_burst(burst);
        assert!(r.wait().await);
        r.done(true);
        tokio::time::sleep(Duration::from_secs(10)).await;
        // Every run takes 0.5 s and a change is always pending.
        let t0 = Instant::now();
        let mut runs = 0;
        while Instant::now() - t0 < Duration::from_secs(20) {
            r.trigger().request();
            assert!(r.wait().await);
            tokio::time::sleep(Duration::from_millis(500)).await;
            r.done(true);
            runs += 1;
        }
        // 1.5 s a run once the bank (burst - 1 extra runs) is spent: 20 s hold 14 runs with
        // burst 1 (the first at once), one more with burst 2.
        assert_eq!(runs, 13 + burst, "burst {burst}");
    }
}

const HOLD: Duration = Duration::from_millis(50);

/// An idle runner with a burst of two, after its first run and a quiet 5 s.
async fn idle_runner() -> (Runner, Shutdown) {
    let (r, s) = runner(1, 30);
    let mut r = r.with_burst(2);
    assert!(r.wait().await);
    r.done(true);
    tokio::time::sleep(Duration::from_secs(5)).await;
    (r, s)
}

/// Asks for a run `after` from now, from another task (a watch event arriving while the runner waits).
fn request_later(r: &Runner, after: Duration, held: bool) {
    let trigger = r.trigger();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        if held {
            trigger.request_held(HOLD);
        } else {
            trigger.request();
        }
    });
}

#[tokio::test(start_paused = true)]
async fn a_held_request_alone_runs_when_its_hold_ends() {
    let (mut r, _s) = idle_runner().await;
    let t = Instant::now();
    r.trigger().request_held(HOLD);
    next_run(&mut r, Reason::Changed, t, HOLD).await;
    next_run(&mut r, Reason::Periodic, t, HOLD + Duration::from_secs(30)).await;
}

#[tokio::test(start_paused = true)]
async fn a_service_and_its_slice_arriving_within_the_hold_take_one_run_when_the_slice_arrives() {
    let (mut r, _s) = idle_runner().await;
    let t = Instant::now();
    r.trigger().request_held(HOLD);
    request_later(&r, Duration::from_millis(8), false);
    next_run(&mut r, Reason::Changed, t, Duration::from_millis(8)).await;
    // Both were covered: the next run is the periodic one, not a second run for the slice.
    let end = Duration::from_millis(8) + Duration::from_secs(30);
    next_run(&mut r, Reason::Periodic, t, end).await;
}

#[tokio::test(start_paused = true)]
async fn a_later_service_does_not_extend_the_first_ones_hold() {
    let (mut r, _s) = idle_runner().await;
    let t = Instant::now();
    r.trigger().request_held(HOLD);
    request_later(&r, Duration::from_millis(30), true);
    next_run(&mut r, Reason::Changed, t, HOLD).await;
}

#[tokio::test(start_paused = true)]
async fn a_slice_arriving_after_the_hold_still_runs_at_once_from_the_bank() {
    let (mut r, _s) = idle_runner().await;
    let t = Instant::now();
    r.trigger().request_held(HOLD);
    next_run(&mut r, Reason::Changed, t, HOLD).await;
    // The slice comes 200 ms after the Service: the banked burst runs it without a min interval.
    tokio::time::sleep(Duration::from_millis(150)).await;
    r.trigger().request();
    next_run(&mut r, Reason::Changed, t, Duration::from_millis(200)).await;
}

#[tokio::test(start_paused = true)]
async fn a_hold_inside_the_min_interval_adds_nothing_to_it() {
    let (mut r, _s) = runner(1, 30);
    let t0 = Instant::now();
    assert!(r.wait().await);
    r.done(true);
    // Without a bank, the min interval decides; a hold that ends inside it delays nothing.
    r.trigger().request_held(HOLD);
    next_run(&mut r, Reason::Changed, t0, Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_a_hold() {
    let (mut r, s) = idle_runner().await;
    r.trigger().request_held(HOLD);
    let stop = s.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        stop.trigger();
    });
    assert!(!r.wait().await);
}

#[tokio::test(start_paused = true)]
async fn under_steady_churn_holds_add_no_runs() {
    // Runs of 0.5 s with a slice change always pending and a Service change every other run:
    // the same run count as the churn test above with burst 2.
    let (r, _s) = runner(1, 30);
    let mut r = r.with_burst(2);
    assert!(r.wait().await);
    r.done(true);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let t0 = Instant::now();
    let mut runs = 0;
    while Instant::now() - t0 < Duration::from_secs(20) {
        r.trigger().request();
        if runs % 2 == 0 {
            r.trigger().request_held(HOLD);
        }
        assert!(r.wait().await);
        tokio::time::sleep(Duration::from_millis(500)).await;
        r.done(true);
        runs += 1;
    }
    assert_eq!(runs, 15);
}
