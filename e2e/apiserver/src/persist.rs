//! The optional state file: every object plus the last resourceVersion, rewritten (temp file + rename)
//! after each change, so a restarted stand-in keeps its objects and resourceVersions keep moving forward.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub resource_version: u64,
    pub objects: Vec<Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("state file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("state file {path}: {source}")]
    Json { path: String, source: serde_json::Error },
}

pub fn load(path: &Path) -> Result<State, PersistError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| PersistError::Io {
        path: p.clone(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| PersistError::Json { path: p, source })
}

/// CRDs are written first so that loading can register their kinds before their objects arrive.
pub fn save<'a>(path: &Path, rv: u64, objects: impl Iterator<Item = &'a Value>) -> Result<(), PersistError> {
    let p = path.display().to_string();
    let (mut crds, mut rest): (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    for o in objects {
        if o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
            crds.push(o.clone());
        } else {
            rest.push(o.clone());
        }
    }
    crds.append(&mut rest);
    let state = State {
        resource_version: rv,
        objects: crds,
    };
    let bytes = serde_json::to_vec(&state).map_err(|source| PersistError::Json {
        path: p.clone(),
        source,
    })?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|source| PersistError::Io {
        path: p.clone(),
        source,
    })?;
    std::fs::rename(&tmp, path).map_err(|source| PersistError::Io { path: p, source })
}
