//! What both tracers (iptables and nftables) carry along one path through the rules, and how a path
//! ends as an [`Outcome`].

use std::net::{IpAddr, SocketAddr};

use super::{Hook, Outcome, Packet, Step, TraceOptions, Verdict};

/// How a chain walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    /// Fell off the end or returned: the caller continues (base chains apply their policy).
    Continue,
    /// ACCEPT, DNAT, SNAT, MASQUERADE: this table (or base chain) is done with the packet at this hook.
    Accept,
    Drop,
    Reject,
}

/// One path through the rules, with everything the rules may have changed.
#[derive(Clone, Debug)]
pub(super) struct Path {
    pub(super) probability: f64,
    pub(super) dst: IpAddr,
    pub(super) dport: u16,
    pub(super) mark: u32,
    /// None: unknown input interface.
    pub(super) in_iface: Option<String>,
    pub(super) dnat: Option<SocketAddr>,
    pub(super) masquerade: bool,
    pub(super) steps: Vec<Step>,
    pub(super) notes: Vec<String>,
}

impl Path {
    /// The packet as it enters netfilter at the options' hook.
    pub(super) fn start(packet: &Packet, opts: &TraceOptions) -> Path {
        Path {
            probability: 1.0,
            dst: packet.dst,
            dport: packet.dport,
            mark: 0,
            in_iface: match opts.hook {
                Hook::Prerouting => packet.in_iface.clone(),
                // Locally generated packets have no input interface.
                Hook::Output => Some(String::new()),
            },
            dnat: None,
            masquerade: false,
            steps: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The outcome of a path that ended with `flow` (Continue and Accept: it went through).
    pub(super) fn outcome(self, flow: Flow) -> Outcome {
        let verdict = match flow {
            Flow::Drop => Verdict::Drop,
            Flow::Reject => Verdict::Reject,
            Flow::Accept | Flow::Continue => match self.dnat {
                Some(to) => Verdict::Dnat(to),
                None => Verdict::Accept,
            },
        };
        Outcome {
            probability: self.probability,
            verdict,
            masquerade: self.masquerade,
            steps: self.steps,
            notes: self.notes,
        }
    }
}
