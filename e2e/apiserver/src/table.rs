//! Server-side printing (`meta.k8s.io/v1 Table`), which kubectl asks for on `get`: CRD
//! additionalPrinterColumns, a few built-in layouts, and NAME/AGE otherwise.

use serde_json::{Value, json};

use crate::jsonpath;
use crate::resources::ResourceType;
use crate::time::{human_age, parse_rfc3339};

mod more;
mod pods;

/// What each row's `object` holds (`includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn from_query(v: Option<&String>) -> Self {
        match v.map(String::as_str) {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

struct Col {
    name: &'static str,
    ty: &'static str,
    priority: i64,
    cell: fn(&Value) -> Value,
}

const fn col(name: &'static str, ty: &'static str, priority: i64, cell: fn(&Value) -> Value) -> Col {
    Col {
        name,
        ty,
        priority,
        cell,
    }
}

fn s(v: &Value, p: &str) -> String {
    v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string()
}

fn age(o: &Value) -> Value {
    match parse_rfc3339(&s(o, "/metadata/creationTimestamp")) {
        Some(t) => json!(human_age(t)),
        None => json!("<unknown>"),
    }
}

fn svc_ports(o: &Value) -> Value {
    let ports = o
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let txt: Vec<String> = ports
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(np) => format!("{port}:{np}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    json!(if txt.is_empty() {
        "<none>".to_string()
    } else {
        txt.join(",")
    })
}

fn svc_external(o: &Value) -> Value {
    let ingress: Vec<String> = o
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.get("ip").or(i.get("hostname"))?.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let ty = s(o, "/spec/type");
    json!(match (ingress.is_empty(), ty.as_str()) {
        (false, _) => ingress.join(","),
        (true, "LoadBalancer") => "<pending>".to_string(),
        (true, "ExternalName") => s(o, "/spec/externalName"),
        _ => "<none>".to_string(),
    })
}

/// `k=v` for each entry of a string map (labels, selectors), in key order.
fn key_values(map: Option<&Value>) -> Vec<String> {
    map.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

fn svc_selector(o: &Value) -> Value {
    let sel = key_values(o.pointer("/spec/selector"));
    json!(if sel.is_empty() {
        "<none>".to_string()
    } else {
        sel.join(",")
    })
}

fn node_address(o: &Value, ty: &str) -> Value {
    let addr = o
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("type").and_then(Value::as_str) == Some(ty))
        })
        .and_then(|x| x.get("address").and_then(Value::as_str))
        .unwrap_or("<none>");
    json!(addr)
}

fn node_status(o: &Value) -> Value {
    let ready = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| {
            c.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .and_then(|c| c.get("status").and_then(Value::as_str))
        .unwrap_or("Unknown");
    let mut st = if ready == "True" {
        "Ready".to_string()
    } else {
        "NotReady".to_string()
    };
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        st.push_str(",SchedulingDisabled");
    }
    json!(st)
}

fn builtin_cols(rt: &ResourceType) -> Vec<Col> {
    if rt.crd.is_some() {
        return Vec::new();
    }
    if let Some(cols) = more::cols(rt).or_else(|| pods::cols(rt)) {
        return cols;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "services") => vec![
            Col {
                name: "Type",
                ty: "string",
                priority: 0,
                cell: |o| json!(s(o, "/spec/type")),
            },
            Col {
                name: "Cluster-IP",
                ty: "string",
                priority: 0,
                cell: |o| json!(s(o, "/spec/clusterIP")),
            },
            Col {
                name: "External-IP",
                ty: "string",
                priority: 0,
                cell: svc_external,
            },
            Col {
                name: "Port(s)",
                ty: "string",
                priority: 0,
                cell: svc_ports,
            },
            Col {
                name: "Selector",
                ty: "string",
                priority: 1,
                cell: svc_selector,
            },
        ],
        ("", "nodes") => vec![
            Col {
                name: "Status",
                ty: "string",
                priority: 0,
                cell: node_status,
            },
            Col {
                name: "Internal-IP",
                ty: "string",
                priority: 1,
                cell: |o| node_address(o, "InternalIP"),
            },
            Col {
                name: "External-IP",
                ty: "string",
                priority: 1,
                cell: |o| node_address(o, "ExternalIP"),
            },
        ],
        ("", "namespaces") => vec![Col {
            name: "Status",
            ty: "string",
            priority: 0,
            cell: |o| json!(s(o, "/status/phase")),
        }],
        ("", "events") => vec![
            Col {
                name: "Type",
                ty: "string",
                priority: 0,
                cell: |o| json!(s(o, "/type")),
            },
            Col {
                name: "Reason",
                ty: "string",
                priority: 0,
                cell: |o| json!(s(o, "/reason")),
            },
            Col {
                name: "Object",
                ty: "string",
                priority: 0,
                cell: |o| {
                    let kind = s(o, "/involvedObject/kind").to_ascii_lowercase();
                    json!(format!("{kind}/{}", s(o, "/involvedObject/name")))
                },
            },
            Col {
                name: "Message",
                ty: "string",
                priority: 0,
                cell: |o| json!(s(o, "/message")),
            },
        ],
        ("coordination.k8s.io", "leases") => {
            vec![Col {
                name: "Holder",
                ty: "string",
                priority: 0,
                cell: |o| json!(s(o, "/spec/holderIdentity")),
            }]
        }
        _ => Vec::new(),
    }
}

fn col_def(name: &str, ty: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

pub fn column_definitions(rt: &ResourceType) -> Vec<Value> {
    let mut cols = vec![col_def(
        "Name",
        "string",
        "name",
        0,
        "Name must be unique within a namespace.",
    )];
    if rt.printer_columns.is_empty() {
        // kubectl's order: normal columns, AGE, then the -o wide ones.
        let builtin = builtin_cols(rt);
        for c in builtin.iter().filter(|c| c.priority == 0) {
            cols.push(col_def(c.name, c.ty, "", c.priority, ""));
        }
        if more::has_age(rt) {
            cols.push(col_def(
                "Age",
                "string",
                "",
                0,
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
            ));
        }
        for c in builtin.iter().filter(|c| c.priority > 0) {
            cols.push(col_def(c.name, c.ty, "", c.priority, ""));
        }
    } else {
        for c in &rt.printer_columns {
            let ty = if c.type_ == "date" {
                "date"
            } else {
                c.type_.as_str()
            };
            cols.push(col_def(&c.name, ty, "", c.priority, &c.description));
        }
    }
    cols
}

fn cells(rt: &ResourceType, o: &Value) -> Vec<Value> {
    let mut out = vec![json!(s(o, "/metadata/name"))];
    if rt.printer_columns.is_empty() {
        let builtin = builtin_cols(rt);
        out.extend(builtin.iter().filter(|c| c.priority == 0).map(|c| (c.cell)(o)));
        if more::has_age(rt) {
            out.push(age(o));
        }
        out.extend(builtin.iter().filter(|c| c.priority > 0).map(|c| (c.cell)(o)));
    } else {
        for c in &rt.printer_columns {
            let v = jsonpath::eval(o, &c.json_path)
                .into_iter()
                .next()
                .cloned()
                .unwrap_or(Value::Null);
            let v = match (c.type_.as_str(), &v) {
                ("date", Value::String(t)) => {
                    parse_rfc3339(t).map(|t| json!(human_age(t))).unwrap_or(v.clone())
                }
                _ => v,
            };
            out.push(v);
        }
    }
    out
}

/// The `meta.k8s.io/v1 PartialObjectMetadata` form of an object.
pub fn partial(o: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
           "metadata": o.get("metadata").cloned().unwrap_or(json!({}))})
}

pub fn row(rt: &ResourceType, o: &Value, include: Include) -> Value {
    let mut r = json!({"cells": cells(rt, o)});
    match include {
        Include::None => {}
        Include::Metadata => r["object"] = partial(o),
        Include::Object => r["object"] = o.clone(),
    }
    r
}

pub fn table(rt: &ResourceType, objs: &[Value], meta: Value, include: Include) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": column_definitions(rt),
        "rows": objs.iter().map(|o| row(rt, o, include)).collect::<Vec<_>>(),
    })
}
