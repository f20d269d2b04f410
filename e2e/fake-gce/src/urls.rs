//! selfLinks and resource references. Links always come from the configured base URL, never from
//! the request's Host header (the Rust client sends Host without the port).
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;

#[derive(Clone, Debug)]
pub struct Urls {
    /// e.g. `http://127.0.0.1:8080/compute/v1/` (ends with '/').
    pub base: String,
    pub project: String,
}

impl Urls {
    /// `projects/P/<scope>/<collection>/<name>`, as used in error messages.
    pub fn rel(&self, scope: &Scope, collection: &str, name: &str) -> String {
        format!("projects/{}/{}/{collection}/{name}", self.project, scope.path())
    }

    pub fn link(&self, scope: &Scope, kind: Kind, name: &str) -> String {
        format!("{}{}", self.base, self.rel(scope, kind.collection(), name))
    }

    pub fn op_link(&self, scope: &Scope, name: &str) -> String {
        format!("{}{}", self.base, self.rel(scope, "operations", name))
    }

    pub fn scope_link(&self, scope: &Scope) -> String {
        format!("{}projects/{}/{}", self.base, self.project, scope.path())
    }

    pub fn collection_link(&self, scope: &Scope, collection: &str) -> String {
        format!("{}/{collection}", self.scope_link(scope))
    }

    pub fn project_link(&self) -> String {
        format!("{}projects/{}", self.base, self.project)
    }

    /// Resolves a reference the way GCE accepts them: a full URL (any host), `projects/P/...`,
    /// `global/...`, `regions/R/...`, `zones/Z/...`, or a bare name in `default_scope`.
    pub fn parse_ref(
        &self,
        field: &str,
        value: &str,
        kind: Kind,
        default_scope: Option<&Scope>,
    ) -> Result<(Scope, String), ApiError> {
        let bad = || ApiError::invalid_field(field, value, "The URL is malformed.");
        let rest: &str = if let Some(i) = value.find("projects/") {
            let after = &value[i + "projects/".len()..];
            let (project, rest) = after.split_once('/').ok_or_else(bad)?;
            if project != self.project {
                return Err(ApiError::not_found(&format!("projects/{project}")));
            }
            rest
        } else if value.starts_with("global/") || value.starts_with("regions/") || value.starts_with("zones/")
        {
            value
        } else if !value.contains('/') && !value.is_empty() {
            let scope = default_scope.ok_or_else(bad)?;
            return Ok((scope.clone(), value.to_string()));
        } else {
            return Err(bad());
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let (scope, coll, name) = match parts.as_slice() {
            ["global", coll, name] => (Scope::Global, *coll, *name),
            ["regions", r, coll, name] => (Scope::Region((*r).to_string()), *coll, *name),
            ["zones", z, coll, name] => (Scope::Zone((*z).to_string()), *coll, *name),
            _ => return Err(bad()),
        };
        if coll != kind.collection() || name.is_empty() || scope.scope_type() != kind.scope_type() {
            return Err(bad());
        }
        Ok((scope, name.to_string()))
    }
}

#[cfg(test)]
mod tests;
