//! The write verbs with the metadata rules of the real apiserver: uid, creationTimestamp, generateName,
//! generation (bumped on non-metadata, non-status changes), optimistic concurrency on resourceVersion,
//! status subresource separation, and finalizers (deletionTimestamp, removal when the last one goes).

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::patch::{self, PatchType};
use crate::resources::{ResourceType, crd_status};
use crate::services;
use crate::ssa;
use crate::store::{EventType, Inner, Key};
use crate::time::now_rfc3339;

#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub force: bool,
    /// `Some("status")` for writes through the status subresource.
    pub subresource: Option<String>,
}

impl WriteOpts {
    fn status_only(&self) -> bool {
        self.subresource.as_deref() == Some("status")
    }
}

pub fn key(rt: &ResourceType, ns: &str, name: &str) -> Key {
    Key {
        storage: rt.storage(),
        ns: if rt.namespaced {
            ns.to_string()
        } else {
            String::new()
        },
        name: name.to_string(),
    }
}

fn meta(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    // Just ensured above; the fallback keeps this free of panics.
    match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable_meta(),
    }
}

#[allow(clippy::panic)]
fn unreachable_meta() -> ! {
    panic!("metadata was just set to an object")
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

pub fn get(inner: &Inner, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
    inner
        .get(&key(rt, ns, name))
        .cloned()
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
}

fn check_body(rt: &ResourceType, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request was in an unknown format",
        ));
    }
    let kind = str_at(body, "/kind");
    if !kind.is_empty() && kind != rt.kind {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            str_at(body, "/apiVersion"),
            rt.api_version()
        )));
    }
    Ok(())
}

pub fn create(
    inner: &mut Inner,
    rt: &ResourceType,
    ns: &str,
    mut obj: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    check_body(rt, &obj)?;
    obj["apiVersion"] = json!(rt.api_version());
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
    m.insert("generation".into(), json!(1));
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

/// ObjectMeta round-trips through Go structs in the real apiserver, so empty `omitempty` fields vanish.
fn normalize_meta(obj: &mut Value) {
    let m = meta(obj);
    let empty: Vec<String> = m
        .iter()
        .filter(|(_, v)| match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => false,
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in empty {
        m.remove(&k);
    }
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
    } else if core && rt.plural == "nodes" {
        // Nodes may be created with their status (kubelets do so).
    } else if rt.status
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    Ok(())
}

fn validate_crd(obj: &Value, name: &str) -> Result<(), ApiError> {
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
    finish_update(inner, rt, old, body, opts)
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
    new["apiVersion"] = old.get("apiVersion").cloned().unwrap_or(json!(rt.api_version()));
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
    let generation = om.get("generation").and_then(Value::as_i64).unwrap_or(1);
    let bumped = if gen_of(&old) != gen_of(&new) {
        generation + 1
    } else {
        generation
    };
    meta(&mut new).insert("generation".into(), json!(bumped));

    if rt.group.is_empty() && rt.plural == "services" && !opts.status_only() {
        services::admit(&inner.services, &inner.alloc, &mut new, Some(&old))
            .map_err(|c| ApiError::invalid("", "Service", &name, &c))?;
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
    let mut target = old.clone();
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
    finish_update(inner, rt, old, target, opts)
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
fn remove(inner: &mut Inner, rt: &ResourceType, old: &Value, last: Value) -> Value {
    let name = str_at(old, "/metadata/name").to_string();
    let k = key(rt, str_at(old, "/metadata/namespace"), &name);
    let gone = inner.commit(k, EventType::Deleted, last);
    if rt.is("apiextensions.k8s.io", "customresourcedefinitions") {
        let group = str_at(old, "/spec/group");
        let plural = str_at(old, "/spec/names/plural");
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
