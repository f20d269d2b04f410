//! DELETE: preconditions, finalizers (deletionTimestamp first), and what the apiserver cascades itself.

use serde_json::{Value, json};

use super::{get, key, meta, str_at};
use crate::error::ApiError;
use crate::resources::ResourceType;
use crate::store::{EventType, Inner, Key};
use crate::time::now_rfc3339;

/// DELETE: with finalizers the object only gets a deletionTimestamp; otherwise it goes away.
pub fn delete(
    inner: &mut Inner,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    options: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let old = get(inner, rt, ns, name)?;
    if let Some(uid) = options.pointer("/preconditions/uid").and_then(Value::as_str)
        && uid != str_at(&old, "/metadata/uid")
    {
        return Err(ApiError::conflict(
            &rt.group,
            &rt.plural,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                str_at(&old, "/metadata/uid")
            ),
        ));
    }
    if let Some(rv) = options
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
        && rv != str_at(&old, "/metadata/resourceVersion")
    {
        return Err(ApiError::stale(&rt.group, &rt.plural, name));
    }
    let has_finalizers = old
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if has_finalizers {
        if old.pointer("/metadata/deletionTimestamp").is_some() || dry_run {
            return Ok(old);
        }
        let mut new = old.clone();
        let m = meta(&mut new);
        m.insert("deletionTimestamp".into(), json!(now_rfc3339()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        let k = key(rt, ns, name);
        return Ok(inner.commit(k, EventType::Modified, new));
    }
    if dry_run {
        return Ok(old);
    }
    let last = old.clone();
    Ok(remove(inner, rt, &old, last))
}

/// Removes an object for good (DELETED event carries `last`), cascading what the apiserver itself cascades:
/// a CRD takes its custom resources with it, a namespace its contents (finalizers on contents still hold them).
pub(super) fn remove(inner: &mut Inner, rt: &ResourceType, old: &Value, last: Value) -> Value {
    let name = str_at(old, "/metadata/name").to_string();
    let k = key(rt, str_at(old, "/metadata/namespace"), &name);
    let gone = inner.commit(k, EventType::Deleted, last);
    let (group, plural) = (str_at(old, "/spec/group"), str_at(old, "/spec/names/plural"));
    // A CRD shadowed by a built-in kind (say daemonsets.apps) never served anything: its deletion must not
    // take the built-in kind's objects with it.
    if rt.is("apiextensions.k8s.io", "customresourcedefinitions") && !inner.registry.is_builtin(group, plural)
    {
        let storage = format!("{group}/{plural}");
        let keys: Vec<Key> = inner
            .objects
            .keys()
            .filter(|k| k.storage == storage)
            .cloned()
            .collect();
        for k in keys {
            if let Some(o) = inner.objects.get(&k).cloned() {
                inner.commit(k, EventType::Deleted, o);
            }
        }
        inner.registry.remove_crd(&name);
    } else if rt.group.is_empty() && rt.plural == "namespaces" {
        let keys: Vec<Key> = inner.objects.keys().filter(|k| k.ns == name).cloned().collect();
        for k in keys {
            let Some(o) = inner.objects.get(&k).cloned() else {
                continue;
            };
            let rt2 = inner
                .registry
                .types
                .iter()
                .find(|t| t.storage() == k.storage)
                .cloned();
            if let Some(rt2) = rt2 {
                let _ = delete(inner, &rt2, &k.ns, &k.name, &Value::Null, false);
            } else {
                inner.commit(k, EventType::Deleted, o);
            }
        }
    }
    gone
}
