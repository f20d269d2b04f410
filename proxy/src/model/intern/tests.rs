use super::*;

#[test]
fn shares_and_prunes() {
    let mut i = Interner::default();
    let a = i.get("node-1");
    let b = i.get("node-1");
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(&*a, "node-1");
    // Unused names go once the set has grown enough; used ones stay shared.
    for n in 0..200 {
        drop(i.get(&format!("gone-{n}")));
    }
    assert!(i.len() < 200, "{}", i.len());
    assert!(Arc::ptr_eq(&a, &i.get("node-1")));
}
