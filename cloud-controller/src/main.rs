//! svcnet-cloud-controller binary. The pure domain (svcnet_cloud_controller) is built; the GCE
//! client and kube-runtime wiring are not yet.
#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    anyhow::bail!(
        "svcnet-cloud-controller is not wired to GCE yet: the planning library exists \
         (svcnet_cloud_controller::lb, routes, nodes); the GCE/kube I/O layer comes next"
    )
}
