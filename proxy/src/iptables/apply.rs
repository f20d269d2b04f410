//! Writing to the kernel: jump rules from built-in chains (one `-C || -I` each, because a --noflush
//! restore cannot edit single rules in chains svcnet does not own) and the one atomic
//! `iptables-restore` per family. A failed restore changes nothing (the kernel applies a table's
//! transaction entirely or not at all), so the previous rules keep working.

use super::render::Jump;
use super::{Iptables, split_rule};
use crate::exec::ToolError;

/// The chain a jump rule targets (`-j NAME`).
pub(crate) fn jump_target(rule: &str) -> Option<String> {
    let words = split_rule(rule);
    let i = words.iter().position(|w| w == "-j")?;
    words.get(i + 1).cloned()
}

/// Creates each jump's target chain if missing, then inserts the jump if missing (upstream order: the
/// chain must exist before a rule can jump to it).
pub(crate) async fn ensure_jumps(ipt: &Iptables, jumps: &[Jump]) -> Result<(), ToolError> {
    for j in jumps {
        if let Some(target) = jump_target(&j.rule) {
            ipt.ensure_chain(j.table, &target).await?;
        }
        ipt.ensure_rule(j.table, j.chain, &j.rule).await?;
    }
    Ok(())
}

/// One `iptables-restore --noflush --counters -w 5 -W 100000` with the whole payload.
pub(crate) async fn restore(ipt: &Iptables, payload: &str) -> Result<(), ToolError> {
    ipt.restore(payload).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_targets() {
        assert_eq!(
            jump_target("-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES").as_deref(),
            Some("KUBE-SERVICES")
        );
        assert_eq!(jump_target("-m mark"), None);
    }
}
