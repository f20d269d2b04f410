//! Which IP the load balancer uses and who owns it (upstream's verifyUserRequestedIP +
//! ensureStaticIP in providers/gce/gce_loadbalancer_external.go).
//!
//! The IP is the forwarding rule's, else our reservation's (an interrupted creation), else a new
//! reservation. Whether the reservation is kept is the plan's business (`lb::external::plan`): as upstream,
//! only while the forwarding rule is (re)created.

use crate::error::{Error, Result};
use crate::lb::spec::LbSpec;
use crate::objects::observed::Observed;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IpChoice {
    /// Use `ip`. `controller_owned`: held in the controller's own address named like the LB
    /// (to be created or promoted if missing). Otherwise a user's reserved address holds it.
    Known { ip: String, controller_owned: bool },
    /// No IP yet (new LB, nothing requested): reserve one, let GCE pick, then plan again.
    Reserve,
}

/// `observed` must already be free of wrong-tier objects (see [`crate::lb::external::ensure`]).
pub(crate) fn resolve_ip(spec: &LbSpec, lb_name: &str, observed: &Observed) -> Result<IpChoice> {
    let fr_ip = observed
        .forwarding_rule
        .as_ref()
        .map(|f| f.ip_address.as_str())
        .filter(|ip| !ip.is_empty());
    let own_ip = observed.address.as_ref().and_then(|a| a.address.as_deref());
    let user_address = observed.ip_holder.as_ref().filter(|a| a.name != lb_name);

    let Some(requested) = spec.requested_ip.as_deref() else {
        // Keep whatever the forwarding rule already serves, else our own reservation.
        return Ok(match fr_ip.or(own_ip) {
            Some(ip) => {
                let user_owned = user_address.is_some_and(|a| a.address.as_deref() == Some(ip));
                IpChoice::Known {
                    ip: ip.to_owned(),
                    controller_owned: !user_owned,
                }
            }
            None => IpChoice::Reserve,
        });
    };

    if let Some(addr) = user_address
        && addr.address.as_deref() == Some(requested)
    {
        if !addr.network_tier.is_empty() && addr.network_tier != spec.network_tier {
            return Err(Error::RequestedIp {
                object: spec.object.clone(),
                field: "spec.loadBalancerIP".into(),
                message: format!(
                    "requested IP {requested:?} belongs to the {} network tier; expected {}",
                    addr.network_tier, spec.network_tier
                ),
            });
        }
        return Ok(IpChoice::Known {
            ip: requested.to_owned(),
            controller_owned: false,
        });
    }
    // Ours already, or currently served by our forwarding rule (ephemeral: promote it).
    if own_ip == Some(requested) || fr_ip == Some(requested) {
        return Ok(IpChoice::Known {
            ip: requested.to_owned(),
            controller_owned: true,
        });
    }
    Err(Error::RequestedIp {
        object: spec.object.clone(),
        field: "spec.loadBalancerIP".into(),
        message: format!(
            "requested IP {requested:?} is neither a reserved address nor assigned to the load balancer"
        ),
    })
}
