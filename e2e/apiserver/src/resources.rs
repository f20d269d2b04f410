//! The registry of served kinds: the built-in ones svcnet needs plus every CRD created through the API.

use serde_json::{Value, json};

mod builtin;

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub description: String,
    pub priority: i64,
}

/// A served group/version/resource.
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    /// Has a `/status` subresource: main-resource writes keep the old status.
    pub status: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub printer_columns: Vec<PrinterColumn>,
    /// Set for CRD-served types, so the CRD's deletion can unregister them.
    pub crd: Option<String>,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Storage identity: every version of a group/resource shares one set of objects.
    pub fn storage(&self) -> String {
        match crate::convert::shared_storage(&self.group, &self.plural) {
            Some(s) => s.to_string(),
            None => format!("{}/{}", self.group, self.plural),
        }
    }

    /// Kinds whose metadata.generation the real apiserver maintains: custom resources, CRDs, the apps/v1
    /// workloads, and (since 1.34) pods. Services, nodes, config maps, RBAC objects and the rest have none.
    pub fn tracks_generation(&self) -> bool {
        self.crd.is_some()
            || self.is("apiextensions.k8s.io", "customresourcedefinitions")
            || self.is("", "pods")
            || self.group == "apps"
    }

    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.group == group && self.plural == plural
    }
}

/// The served kinds, in discovery order (built-ins from `builtin.rs` first, then CRD-served ones).
#[derive(Debug, Clone)]
pub struct Registry {
    pub types: Vec<ResourceType>,
}

impl Registry {
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// Groups in first-seen order, each with its versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, vs)) if !vs.contains(&t.version) => vs.push(t.version.clone()),
                Some(_) => {}
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        out
    }

    /// Replaces the types served for the CRD `crd` (its metadata.name) by those its spec declares. Versions
    /// that name a built-in group/version/resource are not served: as upstream, the built-in handler wins.
    pub fn set_crd(&mut self, crd: &Value) {
        let Some(name) = crd.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        self.remove_crd(name);
        let new: Vec<ResourceType> = crd_types(crd)
            .into_iter()
            .filter(|t| !self.is_builtin(&t.group, &t.plural))
            .collect();
        self.types.extend(new);
    }

    /// Is group/resource one of the kinds compiled into the stand-in (not CRD-served)?
    pub fn is_builtin(&self, group: &str, plural: &str) -> bool {
        self.types
            .iter()
            .any(|t| t.crd.is_none() && t.group == group && t.plural == plural)
    }

    pub fn remove_crd(&mut self, name: &str) {
        self.types.retain(|t| t.crd.as_deref() != Some(name));
    }
}

/// The served versions of a CRD as resource types.
pub fn crd_types(crd: &Value) -> Vec<ResourceType> {
    let s = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let strings = |p: &str| -> Vec<String> {
        crd.pointer(p)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let name = s("/metadata/name");
    let kind = s("/spec/names/kind");
    let plural = s("/spec/names/plural");
    let singular = match s("/spec/names/singular") {
        x if x.is_empty() => kind.to_ascii_lowercase(),
        x => x,
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))
        .map(|v| ResourceType {
            group: s("/spec/group"),
            version: v.get("name").and_then(Value::as_str).unwrap_or("v1").to_string(),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            namespaced: s("/spec/scope") != "Cluster",
            status: v.pointer("/subresources/status").is_some(),
            short_names: strings("/spec/names/shortNames"),
            categories: strings("/spec/names/categories"),
            printer_columns: v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| cols.iter().map(printer_column).collect())
                .unwrap_or_default(),
            crd: Some(name.clone()),
        })
        .collect()
}

fn printer_column(c: &Value) -> PrinterColumn {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    PrinterColumn {
        name: s("name"),
        type_: s("type"),
        json_path: s("jsonPath"),
        description: s("description"),
        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
    }
}

/// What the CRD's status says once the apiserver serves it (kubectl wait --for condition=established).
pub fn crd_status(crd: &Value) -> Value {
    let now = crate::time::now_rfc3339();
    json!({
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or(json!({})),
        "storedVersions": crd.pointer("/spec/versions").and_then(Value::as_array).map(|vs| vs.iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
            .filter_map(|v| v.get("name").cloned()).collect::<Vec<_>>()).unwrap_or_default(),
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
    })
}
