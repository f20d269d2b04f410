use super::*;
use serde_json::json;

#[test]
fn strategic_merges_service_ports_by_port() {
    let mut svc =
        json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}], "type": "ClusterIP"}});
    strategic_merge(
        &mut svc,
        &json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 8443}]}}),
    );
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}, {"port": 443}, {"port": 8443}])
    );
    strategic_merge(
        &mut svc,
        &json!({"spec": {"ports": [{"port": 443, "$patch": "delete"}], "type": null}}),
    );
    assert_eq!(
        svc["spec"],
        json!({"ports": [{"port": 80, "targetPort": 9090}, {"port": 8443}]})
    );
}

#[test]
fn strategic_finalizers_union_and_delete_from_primitive_list() {
    let mut o = json!({"metadata": {"finalizers": ["a"]}, "spec": {"x": [1, 2]}});
    strategic_merge(
        &mut o,
        &json!({"metadata": {"finalizers": ["b", "a"]}, "spec": {"x": [3]}}),
    );
    assert_eq!(
        o,
        json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"x": [3]}})
    );
    strategic_merge(
        &mut o,
        &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    );
    assert_eq!(o["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn json_patch_test_op_fails_with_422() {
    let mut o = json!({"spec": {"a": 1}});
    let err = json_patch(
        &mut o,
        &json!([{"op": "test", "path": "/spec/a", "value": 2}]),
        "Foo",
        "f",
    )
    .unwrap_err();
    assert_eq!(err.code, 422);
    json_patch(&mut o, &json!([{"op": "test", "path": "/spec/a", "value": 1}, {"op": "replace", "path": "/spec/a", "value": 3}]), "Foo", "f").unwrap();
    assert_eq!(o["spec"]["a"], 3);
}

#[test]
fn json_patch_test_null_passes_on_missing_path() {
    let mut o = json!({"metadata": {"name": "x"}});
    let p = json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                   {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]);
    json_patch(&mut o, &p, "Foo", "x").unwrap();
    assert_eq!(o["metadata"]["finalizers"], json!(["f"]));
    // Now present: the same patch must fail.
    assert!(json_patch(&mut o, &p, "Foo", "x").is_err());
}

#[test]
fn strategic_merges_containers_by_name_but_replaces_rbac_subjects() {
    let mut ds = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "a", "image": "a:1", "args": ["--x"]}, {"name": "b", "image": "b:1"}]}}}});
    strategic_merge(
        &mut ds,
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["--y"]}]}}}}),
    );
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "a:1", "args": ["--y"]}, {"name": "b", "image": "b:1"}])
    );
    // RoleBinding.subjects has no patchMergeKey upstream: the patch's list replaces the stored one.
    let mut rb = json!({"subjects": [{"kind": "ServiceAccount", "name": "old", "namespace": "x"}]});
    strategic_merge(
        &mut rb,
        &json!({"subjects": [{"kind": "ServiceAccount", "name": "new", "namespace": "x"}]}),
    );
    assert_eq!(
        rb["subjects"],
        json!([{"kind": "ServiceAccount", "name": "new", "namespace": "x"}])
    );
}
