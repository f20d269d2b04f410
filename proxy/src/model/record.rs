//! Compact per-object records: what the daemon keeps of each Service and EndpointSlice. An API object
//! is converted once, when its watch event arrives, into the model data the proxy reads for both IP
//! families (or the errors that left parts of it out); the object itself is dropped: the k8s-openapi
//! objects were most of the daemon's memory (docs/BENCHMARKS.md, "P4: proxy memory (10k services /
//! 100k endpoints)").

use std::sync::Arc;
use std::time::SystemTime;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::service::service_ports_from_service;
use super::{Endpoints, Family, ModelError, ServicePort, ServicePortName};

/// Only what identifies the object (the reflector store keys records by name and namespace).
pub fn slim_meta(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        ..ObjectMeta::default()
    }
}

/// What a Service gives one family: the ports it could build (shared with the model's state) and
/// every field that was left out. Errors are rare, so an empty boxed slice costs no allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Converted {
    pub ports: Vec<Arc<ServicePort>>,
    pub errors: Box<[ModelError]>,
}

/// The record lives as long as the Service: no spare capacity.
fn converted(svc: &Service, family: Family) -> Converted {
    let (ports, errors) = service_ports_from_service(svc, family);
    let mut shared: Vec<Arc<ServicePort>> = ports.into_iter().map(Arc::new).collect();
    shared.shrink_to_fit(); // the collect above reuses the larger buffer of `ports`
    Converted {
        ports: shared,
        errors: errors.into_boxed_slice(),
    }
}

/// One Service, converted for both families.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceRecord {
    pub meta: ObjectMeta,
    pub v4: Converted,
    pub v6: Converted,
}

impl ServiceRecord {
    pub fn from_service(svc: &Service) -> ServiceRecord {
        ServiceRecord {
            meta: slim_meta(&svc.metadata),
            v4: converted(svc, Family::V4),
            v6: converted(svc, Family::V6),
        }
    }

    /// The ports for `family` and the fields left out of them.
    pub fn ports(&self, family: Family) -> &Converted {
        match family {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        }
    }

    /// Every field left out, once (most errors are the same in both families).
    pub fn errors(&self) -> Vec<&ModelError> {
        let mut out: Vec<&ModelError> = self.v4.errors.iter().collect();
        for e in self.v6.errors.iter() {
            if !out.contains(&e) {
                out.push(e);
            }
        }
        out
    }
}

/// One port of one EndpointSlice with its valid endpoints (deduplicated, sorted by `ip:port`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlicePort {
    pub name: ServicePortName,
    pub endpoints: Endpoints,
}

/// One EndpointSlice, parsed for its address type (see [`super::endpoints::parse_slice`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SliceRecord {
    pub meta: ObjectMeta,
    /// From `addressType`; `None` (FQDN) contributes nothing.
    pub family: Option<Family>,
    /// The `kubernetes.io/service-name` label (empty when absent): slices merge per namespace and this.
    pub service_name: String,
    /// `endpoints.kubernetes.io/last-change-trigger-time`, for network programming latency.
    pub trigger_time: Option<SystemTime>,
    pub ports: Vec<SlicePort>,
    pub errors: Vec<ModelError>,
}

impl SliceRecord {
    /// (namespace, service name): the slices that merge with each other.
    pub fn service_key(&self) -> (&str, &str) {
        (
            self.meta.namespace.as_deref().unwrap_or("default"),
            &self.service_name,
        )
    }
}
