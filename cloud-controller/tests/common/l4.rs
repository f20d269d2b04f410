//! What the backend-service LB tests (`lb_rbs*`) share: the RBS opt-in, the fake's LB
//! collections, a Service's annotations and finalizers, and deleting a Service to its end.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams};

use super::{ApiServer, Controller, FakeGce, WAIT, add_node, eventually, inventory, lb_service};

pub const RBS: &str = "cloud.google.com/l4-rbs";

/// Every collection the fake keeps LB objects in.
pub const COLLECTIONS: [&str; 9] = [
    "addresses",
    "firewalls",
    "httpHealthChecks",
    "healthChecks",
    "regionHealthChecks",
    "targetPools",
    "forwardingRules",
    "backendServices",
    "instanceGroups",
];

/// `kind/name` of every object the fake holds, sorted.
pub fn everything(gce: &FakeGce) -> Vec<String> {
    inventory(gce, &COLLECTIONS)
}

pub fn annotations(svc: &Service) -> BTreeMap<String, String> {
    svc.metadata.annotations.clone().unwrap_or_default()
}

pub fn finalizers(svc: &Service) -> Vec<String> {
    svc.metadata.finalizers.clone().unwrap_or_default()
}

/// A LoadBalancer Service on `ports` annotated `cloud.google.com/l4-rbs: enabled`.
pub fn rbs_service(name: &str, ports: &[i32]) -> Service {
    let mut svc = lb_service(name, ports);
    svc.metadata.annotations = Some([(RBS.to_owned(), "enabled".to_owned())].into());
    svc
}

/// Deletes the Services `names` and waits until the API server no longer has them (their
/// finalizers gone).
pub async fn delete_and_wait(services: &Api<Service>, names: &[&str]) {
    for name in names {
        services.delete(name, &DeleteParams::default()).await.unwrap();
    }
    eventually("the Services deleted", WAIT, || {
        let services = services.clone();
        async move {
            for name in names {
                if services.get_opt(name).await.ok()?.is_some() {
                    return None;
                }
            }
            Some(())
        }
    })
    .await;
}

/// A running API server, fake GCE and controller, with nodes, for the LB tests; dropped in field
/// order (the controller first).
pub struct Rig {
    pub ctl: Controller,
    pub services: Api<Service>,
    pub client: kube::Client,
    pub gce: FakeGce,
    pub api_server: ApiServer,
}

impl Rig {
    /// One node `node-<i>` per entry of `zones` (in that zone), and the controller with `flags`.
    pub async fn start(zones: &[&str], flags: &[&str]) -> Self {
        Self::start_on(ApiServer::start(), zones, flags).await
    }

    /// [`Rig::start`] on an API server that serves dual-stack Services.
    pub async fn start_dual_stack(zones: &[&str], flags: &[&str]) -> Self {
        let api = ApiServer::start_with_service_cidr("10.96.0.0/16,fd00:10:96::/112");
        Self::start_on(api, zones, flags).await
    }

    async fn start_on(api_server: ApiServer, zones: &[&str], flags: &[&str]) -> Self {
        let gce = FakeGce::start(&[]);
        let client = api_server.client().await;
        for (i, zone) in zones.iter().enumerate() {
            add_node(&client, &gce, &format!("node-{}", i + 1), zone, None).await;
        }
        let ctl = Controller::start(&api_server, &gce, flags);
        let services = Api::namespaced(client.clone(), "default");
        Self {
            ctl,
            services,
            client,
            gce,
            api_server,
        }
    }
}
