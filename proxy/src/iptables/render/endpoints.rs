//! The `statistic random` rules that pick one endpoint in a KUBE-SVC/KUBE-SVL chain.
//!
//! Upstream writes one rule per endpoint, `--probability 1/(n-i)`, the last unconditional: a new
//! connection walks (n+1)/2 rules on average, so a 1000-endpoint service costs ~500 rule
//! evaluations per first packet. In the `tree` layout a chain with more than
//! [`TreeShape::threshold`] endpoints instead picks among near-equal groups of endpoints, each group
//! a KUBE-EPG-* chain that again picks among groups, down to leaves that list endpoints the upstream
//! way. A branch is taken with probability (endpoints under it) / (endpoints under it and the branches
//! after it), so every endpoint still gets exactly 1/n and a connection walks about
//! depth * (fanout+1)/2 rules. At or below the threshold, and always in the `flat` layout, the rules
//! are exactly upstream's.

use std::fmt::Write as _;

use crate::iptables::render::Chain;
use crate::iptables::render::naming::epg_chain;

/// When and how wide the endpoint tree is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TreeShape {
    /// Chains with more endpoints than this become a tree; up to it they stay upstream's list.
    pub threshold: usize,
    /// Most jumps in one chain of the tree (branches in an inner chain, endpoints in a leaf).
    pub fanout: usize,
}

/// 64: a flat list of 64 walks ~33 rules, little next to a first packet's cost, so smaller services
/// keep upstream's exact rules and chains. 16: n <= 256 becomes two levels of <= 16 and n <= 4096
/// three, so 1000 endpoints walk ~17 rules (3 levels of 10) while adding few chains to the 1000
/// KUBE-SEP ones (iptables-nft restore time grows with the chains declared). The figures behind both:
/// docs/proxy-rules.md, "The endpoint tree".
pub(super) const DEFAULT_SHAPE: TreeShape = TreeShape {
    threshold: 64,
    fanout: 16,
};

/// One endpoint as its selection rule needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct EndpointJump {
    /// Written before the match, with its trailing space (`-m comment --comment ... `), or empty.
    pub comment: String,
    /// The endpoint's KUBE-SEP-* chain.
    pub sep: String,
}

/// The selection rules to append to the chain `owner` and the KUBE-EPG-* chains they jump to (owned by
/// the same service port). `shape` None (flat layout) or few endpoints: upstream's rules, no chains.
pub(super) fn selection_rules(
    owner: &str,
    endpoints: &[EndpointJump],
    shape: Option<TreeShape>,
) -> (Vec<String>, Vec<Chain>) {
    let mut chains = Vec::new();
    let rules = match shape {
        Some(shape) if endpoints.len() > shape.threshold => {
            node(owner, "", endpoints, shape.fanout.max(2), &mut chains)
        }
        _ => leaf(endpoints),
    };
    (rules, chains)
}

/// `weight / remaining` as upstream prints it (`%0.10f`).
fn probability(weight: usize, remaining: usize) -> String {
    format!("{:.10}", weight as f64 / remaining as f64)
}

/// One rule per (weight, target) choosing among them in proportion to the weights; last unconditional.
fn weighted(choices: impl ExactSizeIterator<Item = (usize, String, String)>, total: usize) -> Vec<String> {
    let n = choices.len();
    let mut remaining = total;
    let mut rules = Vec::with_capacity(n);
    for (i, (weight, prefix, target)) in choices.enumerate() {
        let mut r = prefix;
        if i + 1 < n {
            let _ = write!(
                r,
                "-m statistic --mode random --probability {} ",
                probability(weight, remaining)
            );
        }
        let _ = write!(r, "-j {target}");
        rules.push(r);
        remaining -= weight;
    }
    rules
}

/// Upstream's list: endpoint i of n with probability 1/(n-i).
fn leaf(endpoints: &[EndpointJump]) -> Vec<String> {
    weighted(
        endpoints.iter().map(|e| (1, e.comment.clone(), e.sep.clone())),
        endpoints.len(),
    )
}

/// Rules of the tree node holding `endpoints` (`path`: where it sits, for its children's names).
fn node(
    owner: &str,
    path: &str,
    endpoints: &[EndpointJump],
    fanout: usize,
    chains: &mut Vec<Chain>,
) -> Vec<String> {
    let n = endpoints.len();
    if n <= fanout {
        return leaf(endpoints);
    }
    let k = branches(n, fanout);
    // Near-equal groups: the first n % k hold one endpoint more.
    let (base, extra) = (n / k, n % k);
    let mut groups = Vec::with_capacity(k);
    let mut start = 0;
    for g in 0..k {
        let size = base + usize::from(g < extra);
        let child_path = if path.is_empty() {
            g.to_string()
        } else {
            format!("{path}.{g}")
        };
        let group = &endpoints[start..start + size];
        start += size;
        if let [one] = group {
            // A chain holding one jump would only add a hop: jump to the endpoint directly.
            groups.push((1, one.comment.clone(), one.sep.clone()));
            continue;
        }
        let name = epg_chain(owner, &child_path);
        // Children are written before their parent's later siblings: the chain list reads top down.
        let slot = chains.len();
        chains.push(Chain {
            name: name.clone(),
            rules: Vec::new(),
        });
        chains[slot].rules = node(owner, &child_path, group, fanout, chains);
        groups.push((size, String::new(), name));
    }
    weighted(groups.into_iter(), n)
}

/// Branches at a node of `n > fanout` endpoints: the fewest levels `d` with fanout^d >= n, then the
/// smallest even split k with k^d >= n, so every level of the subtree has about the same width (the
/// walk is ~d*(k+1)/2, lower than filling the top levels to `fanout`).
fn branches(n: usize, fanout: usize) -> usize {
    let fits = |k: usize, d: u32| k.checked_pow(d).is_none_or(|p| p >= n);
    let mut d = 1;
    while !fits(fanout, d) {
        d += 1;
    }
    let mut k = 2;
    while !fits(k, d) {
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests;
