//! Offline input for `render` and `explain`: a multi-document YAML (or JSON) of Services,
//! EndpointSlices and optionally this Node, as `kubectl get -o yaml` prints them (`kind: List` too),
//! loaded into the model and render config of one family.

use std::path::Path;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use thiserror::Error;

use crate::config::NodeCaps;
use crate::config::RenderConfig;
use crate::model::{Family, NodeFacts, ProxyState};
use crate::settings::RuleSettings;

#[derive(Debug, Error)]
pub enum InputError {
    #[error("YAML: {0}")]
    Yaml(#[source] crate::yaml::Error),
    #[error("document {doc} ({kind} {name}): {source}")]
    Object {
        doc: usize,
        kind: String,
        name: String,
        source: serde_json::Error,
    },
}

#[derive(Debug, Default)]
pub struct Objects {
    pub services: Vec<Service>,
    pub slices: Vec<EndpointSlice>,
    pub nodes: Vec<Node>,
    /// kinds present in the input that svcnet does not use (reported, not an error).
    pub ignored: Vec<String>,
}

pub fn parse_objects(text: &str) -> Result<Objects, InputError> {
    let mut out = Objects::default();
    let docs: Vec<serde_json::Value> = crate::yaml::from_multiple(text).map_err(InputError::Yaml)?;
    for (doc, json) in docs.into_iter().enumerate() {
        if !json.is_null() {
            push(&mut out, doc, json)?;
        }
    }
    Ok(out)
}

fn push(out: &mut Objects, doc: usize, v: serde_json::Value) -> Result<(), InputError> {
    let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string();
    let name = v
        .pointer("/metadata/name")
        .and_then(|k| k.as_str())
        .unwrap_or("")
        .to_string();
    let err = |source| InputError::Object {
        doc,
        kind: kind.clone(),
        name: name.clone(),
        source,
    };
    match kind.as_str() {
        "List" | "ServiceList" | "EndpointSliceList" | "NodeList" => {
            let item_kind = kind
                .strip_suffix("List")
                .filter(|k| !k.is_empty())
                .map(str::to_string);
            for mut item in v
                .get("items")
                .and_then(|i| i.as_array())
                .cloned()
                .unwrap_or_default()
            {
                if let (Some(k), Some(obj)) = (&item_kind, item.as_object_mut()) {
                    obj.entry("kind")
                        .or_insert_with(|| serde_json::Value::String(k.clone()));
                }
                push(out, doc, item)?;
            }
        }
        "Service" => out.services.push(serde_json::from_value(v).map_err(err)?),
        "EndpointSlice" => out.slices.push(serde_json::from_value(v).map_err(err)?),
        "Node" => out.nodes.push(serde_json::from_value(v).map_err(err)?),
        other => out.ignored.push(format!("{other} {name}")),
    }
    Ok(())
}

/// The file's text; `-` reads stdin.
pub fn read(path: &Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Loads objects and builds the model for one family; model errors are printed as warnings.
pub fn load(
    file: &Path,
    rules: &RuleSettings,
    caps: NodeCaps,
    family: Family,
) -> Result<(Objects, NodeFacts, ProxyState, RenderConfig)> {
    let objects = parse_objects(&read(file)?).with_context(|| format!("parsing {}", file.display()))?;
    let node = rules.node_facts(rules.pick_node(&objects.nodes));
    let mut cfg = rules.render_config(family, &node);
    cfg.set_caps(caps);
    let state = ProxyState::from_k8s(&objects.services, &objects.slices, family);
    for e in &state.errors {
        eprintln!("warning: {e}");
    }
    Ok((objects, node, state, cfg))
}
