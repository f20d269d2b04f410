//! The kinds compiled into the stand-in, with upstream's names, scopes, short names and categories (as
//! `kubectl api-resources` shows them against a real 1.34 apiserver). Storage is generic for all of them; only
//! the kinds named in the README get per-kind behaviour (Services, namespaces, CRDs, events, ...). No
//! controller acts on any of them: a Deployment is stored, never rolled out.

use super::{Registry, ResourceType};

/// Scope of a kind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Cluster,
    Namespaced,
}
use Scope::{Cluster, Namespaced};

/// (group, version, plural, kind, scope, has /status, short names, in category `all`)
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Scope,
    bool,
    &'static [&'static str],
    bool,
);

// One row per kind reads better than rustfmt's one-field-per-line layout.
#[rustfmt::skip]
const BUILTIN: &[Row] = &[
    ("", "v1", "namespaces", "Namespace", Cluster, true, &["ns"], false),
    ("", "v1", "nodes", "Node", Cluster, true, &["no"], false),
    ("", "v1", "services", "Service", Namespaced, true, &["svc"], true),
    ("", "v1", "endpoints", "Endpoints", Namespaced, false, &["ep"], false),
    ("", "v1", "pods", "Pod", Namespaced, true, &["po"], true),
    ("", "v1", "configmaps", "ConfigMap", Namespaced, false, &["cm"], false),
    ("", "v1", "secrets", "Secret", Namespaced, false, &[], false),
    ("", "v1", "serviceaccounts", "ServiceAccount", Namespaced, false, &["sa"], false),
    ("", "v1", "events", "Event", Namespaced, false, &["ev"], false),
    ("apps", "v1", "deployments", "Deployment", Namespaced, true, &["deploy"], true),
    ("apps", "v1", "daemonsets", "DaemonSet", Namespaced, true, &["ds"], true),
    ("apps", "v1", "statefulsets", "StatefulSet", Namespaced, true, &["sts"], true),
    ("apps", "v1", "replicasets", "ReplicaSet", Namespaced, true, &["rs"], true),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", Cluster, false, &[], false),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", Cluster, false, &[], false),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", Namespaced, false, &[], false),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", Namespaced, false, &[], false),
    ("events.k8s.io", "v1", "events", "Event", Namespaced, false, &["ev"], false),
    ("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", Namespaced, false, &[], false),
    ("coordination.k8s.io", "v1", "leases", "Lease", Namespaced, false, &[], false),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", Cluster, true,
     &["crd", "crds"], false),
];

fn resource_type(row: &Row) -> ResourceType {
    let (group, version, plural, kind, scope, status, short, all) = *row;
    ResourceType {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        kind: kind.into(),
        namespaced: scope == Namespaced,
        status,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: if all { vec!["all".into()] } else { Vec::new() },
        printer_columns: Vec::new(),
        crd: None,
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            types: BUILTIN.iter().map(resource_type).collect(),
        }
    }
}
