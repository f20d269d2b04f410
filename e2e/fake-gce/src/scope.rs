//! Where a resource lives: the scope types and concrete scopes (`global`, `regions/R`, `zones/Z`)
//! that resource keys, selfLinks and operations are built from. The region and zone resources
//! themselves are served by `scopes`.

/// Where a resource lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeType {
    Global,
    Regional,
    Zonal,
}

/// A concrete scope: `global`, `regions/R` or `zones/Z`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Global,
    Region(String),
    Zone(String),
}

impl Scope {
    pub fn path(&self) -> String {
        match self {
            Scope::Global => "global".to_string(),
            Scope::Region(r) => format!("regions/{r}"),
            Scope::Zone(z) => format!("zones/{z}"),
        }
    }

    pub fn scope_type(&self) -> ScopeType {
        match self {
            Scope::Global => ScopeType::Global,
            Scope::Region(_) => ScopeType::Regional,
            Scope::Zone(_) => ScopeType::Zonal,
        }
    }

    pub fn parse(path: &str) -> Option<Scope> {
        if path == "global" {
            return Some(Scope::Global);
        }
        if let Some(r) = path.strip_prefix("regions/") {
            return Some(Scope::Region(r.to_string()));
        }
        path.strip_prefix("zones/").map(|z| Scope::Zone(z.to_string()))
    }
}
