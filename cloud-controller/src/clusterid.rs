//! The cluster ID, persisted like cloud-provider-gcp's gce_clusterid.go: ConfigMap
//! `kube-system/ingress-uid` with keys `uid` (cluster ID, names the shared health check) and
//! `provider-uid`. The first controller to find none creates one with a random 16-hex-digit ID;
//! a concurrent creator loses with 409 and reads the winner's value. Backend-service NetLBs also
//! need the kube-system namespace's UID (ingress-gce's L4 namer), read here too.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::PostParams;

pub(crate) const CONFIG_MAP_NAMESPACE: &str = "kube-system";
pub(crate) const CONFIG_MAP_NAME: &str = "ingress-uid";
pub(crate) const KEY_CLUSTER: &str = "uid";
pub(crate) const KEY_PROVIDER: &str = "provider-uid";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterIds {
    pub cluster: String,
    pub provider: String,
}

/// IDs from the ConfigMap data (provider falls back to the cluster ID, as upstream).
pub(crate) fn from_data(data: &BTreeMap<String, String>) -> Option<ClusterIds> {
    let cluster = data.get(KEY_CLUSTER).filter(|v| !v.is_empty())?.clone();
    let provider = data
        .get(KEY_PROVIDER)
        .filter(|v| !v.is_empty())
        .cloned()
        .unwrap_or_else(|| cluster.clone());
    Some(ClusterIds { cluster, provider })
}

/// 64 random bits as 16 lowercase hex digits (upstream: 8 random bytes, hex encoded).
pub(crate) fn random_id() -> String {
    // RandomState is seeded from the OS's randomness; no extra dependency needed for an ID.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// Reads the IDs, creating the ConfigMap when absent.
pub(crate) async fn get_or_create(client: &kube::Client) -> Result<ClusterIds, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), CONFIG_MAP_NAMESPACE);
    for _ in 0..3 {
        if let Some(cm) = api.get_opt(CONFIG_MAP_NAME).await?
            && let Some(ids) = cm.data.as_ref().and_then(from_data)
        {
            return Ok(ids);
        }
        let id = random_id();
        let cm = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(CONFIG_MAP_NAME.to_owned()),
                namespace: Some(CONFIG_MAP_NAMESPACE.to_owned()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                (KEY_CLUSTER.to_owned(), id.clone()),
                (KEY_PROVIDER.to_owned(), id.clone()),
            ])),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &cm).await {
            Ok(_) => {
                tracing::info!(cluster_id = %id, "created cluster ID ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}");
                return Ok(ClusterIds {
                    cluster: id.clone(),
                    provider: id,
                });
            }
            // Someone else created it (or it exists without a uid key: read it again).
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(e),
        }
    }
    let cm = api.get(CONFIG_MAP_NAME).await?;
    cm.data.as_ref().and_then(from_data).ok_or_else(|| {
        kube::Error::Api(Box::new(kube::core::Status::failure(
            &format!("ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} has no {KEY_CLUSTER:?} key"),
            "Invalid",
        )))
    })
}

/// The kube-system namespace's UID: ingress-gce's L4 namer hashes it into every `k8s2-` name
/// (backend-service NetLBs). None when the API server returns the namespace without one.
pub(crate) async fn kube_system_uid(client: &kube::Client) -> Result<Option<String>, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = api.get(CONFIG_MAP_NAMESPACE).await?;
    Ok(ns.metadata.uid.filter(|u| !u.is_empty()))
}

#[cfg(test)]
mod tests;
