//! Offline input for `render` and `explain`: a multi-document YAML (or JSON) of Services,
//! EndpointSlices and optionally this Node, as `kubectl get -o yaml` prints them (`kind: List` too).

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use thiserror::Error;

use crate::model::NodeFacts;
use crate::model::ip::{parse_cidr_sloppy, parse_ip_sloppy};

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

/// Node facts from a Node object: labels, podCIDRs, InternalIP/ExternalIP addresses.
pub fn node_facts(node: &Node) -> NodeFacts {
    let mut facts = NodeFacts {
        name: node.metadata.name.clone().unwrap_or_default(),
        labels: node.metadata.labels.clone().unwrap_or_default(),
        ..Default::default()
    };
    if let Some(spec) = &node.spec {
        let cidrs = spec
            .pod_cidrs
            .clone()
            .filter(|c| !c.is_empty())
            .or_else(|| spec.pod_cidr.clone().map(|c| vec![c]));
        facts.pod_cidrs = cidrs
            .unwrap_or_default()
            .iter()
            .filter_map(|c| parse_cidr_sloppy(c))
            .collect();
    }
    if let Some(addrs) = node.status.as_ref().and_then(|s| s.addresses.as_ref()) {
        for a in addrs.iter().filter(|a| a.type_ == "InternalIP") {
            if let Some(ip) = parse_ip_sloppy(&a.address) {
                facts.ips.push(ip);
            }
        }
    }
    facts.interface_ips = facts.ips.clone();
    facts
}
