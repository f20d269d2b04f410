//! Building the `CloudLoadBalancer` of a Service: same name and namespace, controlled by the
//! Service so the garbage collector deletes it with the Service.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::cloud_load_balancer::{CloudLoadBalancer, CloudLoadBalancerSpec};

/// A Service that cannot own a `CloudLoadBalancer` (objects read from the API server always
/// have these fields; a hand-built Service may not).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ForServiceError {
    #[error("Service has no metadata.{0}")]
    MissingField(&'static str),
}

impl CloudLoadBalancer {
    /// The `CloudLoadBalancer` for `svc`: same name and namespace, spec naming the Service, and a
    /// controller ownerReference (blockOwnerDeletion, so foreground deletion of the Service waits
    /// for it). Status is left empty for the controller to fill.
    pub fn for_service(svc: &Service) -> Result<CloudLoadBalancer, ForServiceError> {
        let meta = svc.meta();
        let name = meta.name.clone().ok_or(ForServiceError::MissingField("name"))?;
        let namespace = meta
            .namespace
            .clone()
            .ok_or(ForServiceError::MissingField("namespace"))?;
        let uid = meta.uid.clone().ok_or(ForServiceError::MissingField("uid"))?;
        let owner = OwnerReference {
            api_version: Service::api_version(&()).into_owned(),
            kind: Service::kind(&()).into_owned(),
            name: name.clone(),
            uid: uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        Ok(CloudLoadBalancer {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                owner_references: Some(vec![owner]),
                ..ObjectMeta::default()
            },
            spec: CloudLoadBalancerSpec {
                service_name: name,
                service_uid: uid,
            },
            status: None,
        })
    }
}

#[cfg(test)]
mod tests;
