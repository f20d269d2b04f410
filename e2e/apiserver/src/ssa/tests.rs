use super::*;

fn lease(holder: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
           "spec": {"holderIdentity": holder}})
}

#[test]
fn second_applier_conflicts_until_forced_or_released() {
    let base = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {}});
    let a = apply(Some(&base), &lease("a"), "mgr-a", false).unwrap();
    assert_eq!(a["spec"]["holderIdentity"], "a");
    let err = apply(Some(&a), &lease("b"), "mgr-b", false).unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    // Same value is no conflict.
    apply(Some(&a), &lease("a"), "mgr-b", false).unwrap();
    // A plain patch clearing the field takes ownership away.
    let mut released = a.clone();
    released["spec"]["holderIdentity"] = Value::Null;
    after_update(&a, &mut released);
    let b = apply(Some(&released), &lease("b"), "mgr-b", false).unwrap();
    assert_eq!(b["spec"]["holderIdentity"], "b");
    let forced = apply(Some(&b), &lease("c"), "mgr-c", true).unwrap();
    assert_eq!(forced["spec"]["holderIdentity"], "c");
}
