use std::time::Duration;

use tokio::time::Instant;

use super::RateLimiter;

#[tokio::test(start_paused = true)]
async fn burst_is_free_then_calls_are_spaced_by_the_rate() {
    let limiter = RateLimiter::new(10.0, 3);
    let start = Instant::now();
    for _ in 0..3 {
        limiter.acquire().await;
    }
    assert_eq!(start.elapsed(), Duration::ZERO, "the burst needs no wait");
    for _ in 0..5 {
        limiter.acquire().await;
    }
    let waited = start.elapsed();
    // 5 tokens at 10/s = 500 ms.
    assert!(
        waited >= Duration::from_millis(490) && waited <= Duration::from_millis(520),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn tokens_refill_while_idle_up_to_the_burst() {
    let limiter = RateLimiter::new(2.0, 2);
    limiter.acquire().await;
    limiter.acquire().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let start = Instant::now();
    limiter.acquire().await;
    limiter.acquire().await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    limiter.acquire().await;
    assert!(start.elapsed() >= Duration::from_millis(490), "burst capped at 2");
}

#[tokio::test(start_paused = true)]
async fn zero_qps_means_unlimited() {
    let limiter = RateLimiter::unlimited();
    let start = Instant::now();
    for _ in 0..1000 {
        limiter.acquire().await;
    }
    assert_eq!(start.elapsed(), Duration::ZERO);
}
