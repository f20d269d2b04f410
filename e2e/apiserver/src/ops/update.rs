//! UPDATE and PATCH: optimistic concurrency, status separation, generation, and apply ownership.

use serde_json::{Value, json};

use super::create::validate_crd;
use super::delete::remove;
use super::{WriteOpts, check_body, create, get, key, meta, normalize_meta, str_at};
use crate::error::ApiError;
use crate::patch::{self, PatchType};
use crate::resources::{ResourceType, crd_status};
use crate::services;
use crate::ssa;
use crate::store::{EventType, Inner};
use crate::workloads;

pub fn update(
    inner: &mut Inner,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    body: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    check_body(rt, &body)?;
    let body_name = str_at(&body, "/metadata/name");
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let old = get(inner, rt, ns, name)?;
    finish_update(inner, rt, old, crate::convert::to_stored(rt, body), opts)
}

/// Shared tail of update and patch: `body` is the full desired object.
fn finish_update(
    inner: &mut Inner,
    rt: &ResourceType,
    old: Value,
    new: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    finish_update_owned(inner, rt, old, new, opts, false)
}

/// `applied`: `new` carries managedFields computed by server-side apply, which replace the old ones.
fn finish_update_owned(
    inner: &mut Inner,
    rt: &ResourceType,
    old: Value,
    mut new: Value,
    opts: &WriteOpts,
    applied: bool,
) -> Result<Value, ApiError> {
    let applied_fields = if applied {
        new.pointer("/metadata/managedFields").cloned()
    } else {
        None
    };
    let name = str_at(&old, "/metadata/name").to_string();
    let want_rv = str_at(&new, "/metadata/resourceVersion");
    if !want_rv.is_empty() && want_rv != str_at(&old, "/metadata/resourceVersion") {
        return Err(ApiError::stale(&rt.group, &rt.plural, &name));
    }
    if opts.status_only() {
        // Status writes change status (and labels/annotations), nothing else.
        let mut merged = old.clone();
        merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        for f in ["labels", "annotations"] {
            match new.pointer(&format!("/metadata/{f}")) {
                Some(v) => meta(&mut merged).insert(f.into(), v.clone()),
                None => meta(&mut merged).remove(f),
            };
        }
        new = merged;
    } else if rt.status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    new["apiVersion"] = old
        .get("apiVersion")
        .cloned()
        .unwrap_or(json!(crate::convert::stored_api_version(rt)));
    new["kind"] = json!(rt.kind);
    let om = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let nm = meta(&mut new);
    for f in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generateName",
        "managedFields",
        "resourceVersion",
    ] {
        match om.get(f) {
            Some(v) => nm.insert(f.into(), v.clone()),
            None => nm.remove(f),
        };
    }
    let gen_of = |v: &Value| {
        let mut c = v.clone();
        if let Some(o) = c.as_object_mut() {
            o.remove("metadata");
            o.remove("status");
        }
        c
    };
    if rt.tracks_generation() {
        let generation = om.get("generation").and_then(Value::as_i64).unwrap_or(1);
        let bumped = if gen_of(&old) != gen_of(&new) {
            generation + 1
        } else {
            generation
        };
        meta(&mut new).insert("generation".into(), json!(bumped));
    } else {
        meta(&mut new).remove("generation");
    }

    if rt.group.is_empty() && rt.plural == "services" && !opts.status_only() {
        services::admit(&inner.services, &inner.alloc, &mut new, Some(&old))
            .map_err(|c| ApiError::invalid("", "Service", &name, &c))?;
    }
    if rt.group == "apps" && rt.crd.is_none() && !opts.status_only() {
        let causes = workloads::admit(&rt.kind, &new, Some(&old));
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.group, &rt.kind, &name, &causes));
        }
    }
    if rt.is("apiextensions.k8s.io", "customresourcedefinitions") && !opts.status_only() {
        validate_crd(&new, &name)?;
        new["status"] = crd_status(&new);
    }
    if applied {
        match applied_fields {
            Some(mf) => meta(&mut new).insert("managedFields".into(), mf),
            None => meta(&mut new).remove("managedFields"),
        };
    } else {
        ssa::after_update(&old, &mut new);
    }

    normalize_meta(&mut new);
    let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
    let no_finalizers = new
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if deleting && no_finalizers {
        if opts.dry_run {
            return Ok(new);
        }
        return Ok(remove(inner, rt, &old, new));
    }
    if without_times(&new) == without_times(&old) {
        // A no-op write keeps the resourceVersion and emits no event, like the real apiserver.
        return Ok(old);
    }
    if opts.dry_run {
        return Ok(new);
    }
    let k = key(rt, str_at(&old, "/metadata/namespace"), &name);
    let stored = inner.commit(k, EventType::Modified, new);
    if rt.is("apiextensions.k8s.io", "customresourcedefinitions") {
        inner.registry.set_crd(&stored);
    }
    Ok(stored)
}

pub fn patch(
    inner: &mut Inner,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    ptype: PatchType,
    body: &[u8],
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    let p = patch::parse_body(ptype, body)?;
    let existing = inner.get(&key(rt, ns, name)).cloned();
    let Some(old) = existing else {
        if ptype == PatchType::Apply && !opts.status_only() {
            let manager = apply_manager(opts)?;
            check_body(rt, &p)?;
            let mut obj = ssa::apply(None, &p, &manager, opts.force)?;
            meta(&mut obj).insert("name".into(), json!(name));
            let mut o = opts.clone();
            o.field_manager = Some(manager);
            return create(inner, rt, ns, obj, &o);
        }
        return Err(ApiError::not_found(&rt.group, &rt.plural, name));
    };
    // Patches apply to the object as this kind serves it.
    let mut target = crate::convert::to_served(rt, &old);
    match ptype {
        PatchType::Merge => patch::merge_patch(&mut target, &p),
        PatchType::Strategic => patch::strategic_merge(&mut target, &p),
        PatchType::Json => patch::json_patch(&mut target, &p, &rt.kind, name)?,
        PatchType::Apply => {
            check_body(rt, &p)?;
            let pname = str_at(&p, "/metadata/name");
            if !pname.is_empty() && pname != name {
                return Err(ApiError::bad_request(
                    "the name of the object does not match the name on the URL",
                ));
            }
            target = ssa::apply(Some(&old), &p, &apply_manager(opts)?, opts.force)?;
            return finish_update_owned(inner, rt, old, target, opts, true);
        }
    }
    finish_update(inner, rt, old, crate::convert::to_stored(rt, target), opts)
}

/// Compares objects ignoring managedFields timestamps, so a no-op apply stays a no-op.
fn without_times(v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(Value::Array(entries)) = c.pointer_mut("/metadata/managedFields") {
        for e in entries {
            if let Some(o) = e.as_object_mut() {
                o.remove("time");
            }
        }
    }
    c
}

fn apply_manager(opts: &WriteOpts) -> Result<String, ApiError> {
    match &opts.field_manager {
        Some(m) if !m.is_empty() => Ok(m.clone()),
        _ => Err(ApiError::bad_request(
            "PATCH, application/apply-patch+yaml requires fieldManager parameter",
        )),
    }
}
