//! The node and config both modes' render unit tests share (one place, so their tests agree on them).

use crate::config::{DetectLocal, Layout, RenderConfig};
use crate::model::NodeFacts;

/// `node-1` at 10.140.0.2.
pub(crate) fn node() -> NodeFacts {
    NodeFacts {
        name: "node-1".into(),
        ips: vec!["10.140.0.2".parse().expect("literal address")],
        ..Default::default()
    }
}

/// `layout` with ClusterCIDR detection of 10.76.0.0/14.
pub(crate) fn cfg(layout: Layout) -> RenderConfig {
    RenderConfig {
        layout,
        detect_local: DetectLocal::ClusterCidr(vec!["10.76.0.0/14".parse().expect("literal CIDR")]),
        ..Default::default()
    }
}
