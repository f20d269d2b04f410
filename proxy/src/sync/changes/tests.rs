use super::*;
use std::time::Duration;

#[test]
fn pending_counts_distinct_objects_and_take_resets() {
    let mut c = Changes::default();
    assert!(c.oldest().is_none());
    c.service_changed("default/a".into());
    c.service_changed("default/a".into());
    c.slice_changed("default/a-xyz".into(), None);
    assert_eq!(c.pending(), (1, 1));
    assert!(c.oldest().is_some());
    let t = c.take();
    assert_eq!(t.services.len(), 1);
    assert_eq!(c.pending(), (0, 0));
    assert!(c.oldest().is_none());
}

#[test]
fn restore_keeps_the_oldest_time() {
    let mut c = Changes::default();
    c.service_changed("default/a".into());
    let since = c.oldest().expect("set");
    let taken = c.take();
    std::thread::sleep(Duration::from_millis(5));
    c.service_changed("default/b".into());
    c.restore(taken, since);
    assert_eq!(c.pending(), (2, 0));
    assert_eq!(c.oldest(), Some(since));
}
