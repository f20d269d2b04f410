//! CREATE: names, generateName, namespace checks, and per-kind preparation.

use serde_json::{Value, json};

use super::{WriteOpts, check_body, key, meta, normalize_meta, str_at};
use crate::error::ApiError;
use crate::resources::{ResourceType, crd_status};
use crate::services;
use crate::store::{EventType, Inner, Key};
use crate::time::now_rfc3339;
use crate::workloads;

pub fn create(
    inner: &mut Inner,
    rt: &ResourceType,
    ns: &str,
    obj: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    check_body(rt, &obj)?;
    let mut obj = crate::convert::to_stored(rt, obj);
    obj["apiVersion"] = json!(crate::convert::stored_api_version(rt));
    obj["kind"] = json!(rt.kind);
    let mut name = str_at(&obj, "/metadata/name").to_string();
    if name.is_empty() {
        let prefix = str_at(&obj, "/metadata/generateName").to_string();
        if prefix.is_empty() {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                "",
                &[(
                    "metadata.name".into(),
                    "Required value: name or generateName is required".into(),
                )],
            ));
        }
        name = format!("{prefix}{}", inner.random_suffix());
    }
    validate_name(rt, &name)?;
    let body_ns = str_at(&obj, "/metadata/namespace").to_string();
    if rt.namespaced {
        if !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if !inner.objects.contains_key(&Key {
            storage: "/namespaces".into(),
            ns: String::new(),
            name: ns.into(),
        }) {
            return Err(ApiError::not_found("", "namespaces", ns));
        }
    }
    let k = key(rt, ns, &name);
    if inner.get(&k).is_some() {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
    }
    let uid = inner.new_uid();
    let m = meta(&mut obj);
    m.insert("name".into(), json!(name));
    if rt.namespaced {
        m.insert("namespace".into(), json!(ns));
    } else {
        m.remove("namespace");
    }
    m.insert("uid".into(), json!(uid));
    m.insert("creationTimestamp".into(), json!(now_rfc3339()));
    if rt.tracks_generation() {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    for f in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        m.remove(f);
    }
    if opts.field_manager.is_none() || !m.contains_key("managedFields") {
        m.remove("managedFields");
    }
    prepare_create(inner, rt, &mut obj, &name)?;
    normalize_meta(&mut obj);
    if opts.dry_run {
        return Ok(obj);
    }
    let stored = inner.commit(k, EventType::Added, obj);
    if rt.is("apiextensions.k8s.io", "customresourcedefinitions") {
        inner.registry.set_crd(&stored);
    }
    Ok(stored)
}

fn validate_name(rt: &ResourceType, name: &str) -> Result<(), ApiError> {
    let ok = name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            name,
            &[(
                "metadata.name".into(),
                format!(
                    "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
                ),
            )],
        ))
    }
}

/// What the real registries do on create (status resets, defaults, allocation).
fn prepare_create(inner: &mut Inner, rt: &ResourceType, obj: &mut Value, name: &str) -> Result<(), ApiError> {
    let core = rt.group.is_empty();
    if core && rt.plural == "namespaces" {
        let m = meta(obj);
        let labels = m.entry("labels").or_insert(json!({}));
        labels["kubernetes.io/metadata.name"] = json!(name);
        // spec.finalizers belongs to the (absent) namespace controller; only metadata.finalizers hold deletion.
        obj["spec"] = json!({"finalizers": ["kubernetes"]});
        obj["status"] = json!({"phase": "Active"});
    } else if core && rt.plural == "services" {
        obj["status"] = json!({"loadBalancer": {}});
        services::admit(&inner.services, &inner.alloc, obj, None)
            .map_err(|c| ApiError::invalid("", "Service", name, &c))?;
    } else if core && rt.plural == "pods" {
        obj["status"] = json!({"phase": "Pending"});
    } else if rt.is("apiextensions.k8s.io", "customresourcedefinitions") {
        validate_crd(obj, name)?;
        obj["status"] = crd_status(obj);
    } else if rt.group == "apps" && rt.crd.is_none() {
        let causes = workloads::admit(&rt.kind, obj, None);
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.group, &rt.kind, name, &causes));
        }
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
    } else if core && rt.plural == "nodes" {
        // Nodes may be created with their status (kubelets do so).
    } else if rt.status
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    Ok(())
}

pub(super) fn validate_crd(obj: &Value, name: &str) -> Result<(), ApiError> {
    let group = str_at(obj, "/spec/group");
    let plural = str_at(obj, "/spec/names/plural");
    let mut causes = Vec::new();
    if name != format!("{plural}.{group}") {
        causes.push((
            "metadata.name".to_string(),
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    if str_at(obj, "/spec/names/kind").is_empty() {
        causes.push(("spec.names.kind".into(), "Required value".into()));
    }
    if obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        causes.push(("spec.versions".into(), "Required value".into()));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            &causes,
        ))
    }
}
