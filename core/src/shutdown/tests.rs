use super::*;
use std::time::Duration;

#[tokio::test]
async fn clones_see_the_trigger() {
    let shutdown = Shutdown::new();
    let waiter = shutdown.clone();
    let task = tokio::spawn(async move {
        waiter.wait().await;
        "stopped"
    });
    tokio::task::yield_now().await;
    assert!(!task.is_finished());
    assert!(!shutdown.is_triggered());
    shutdown.trigger();
    let result = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("waiter wakes up")
        .expect("task");
    assert_eq!(result, "stopped");
    assert!(shutdown.is_triggered());
}

#[tokio::test]
async fn waiting_after_trigger_returns_at_once() {
    let shutdown = Shutdown::new();
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(1), shutdown.wait_owned())
        .await
        .expect("already triggered");
}
