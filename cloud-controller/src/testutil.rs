//! Test support: nodes and config, a `Scenario` builder for Services ([`scenario`]), `MiniGce`,
//! an in-memory GCE for plans ([`mini_gce`]), and `FakeLbGce`, the round loops' GCE over it
//! ([`fake_lb_gce`]).

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::Config;
use crate::objects::action::Action;

pub(crate) mod fake_lb_gce;
pub(crate) mod mini_gce;
pub(crate) mod scenario;

pub(crate) use fake_lb_gce::FakeLbGce;
pub(crate) use mini_gce::MiniGce;
pub(crate) use scenario::Scenario;

pub(crate) const UID: &str = "4f6b2c1e-9a3d-4b8e-8c7f-0123456789ab";

pub(crate) fn config() -> Config {
    let mut cfg = Config::new("proj", "us-central1", "default", "0123456789abcdef", "svcnet");
    cfg.node_tags = vec!["svcnet-node".into()];
    cfg
}

pub(crate) fn node(name: &str, zone: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            provider_id: Some(format!("gce://proj/{zone}/{name}")),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

pub(crate) fn taint(key: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    }
}

pub(crate) fn labels(actions: &[Action]) -> Vec<&'static str> {
    actions.iter().map(Action::label).collect()
}
