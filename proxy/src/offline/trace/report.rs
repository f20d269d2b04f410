//! Human-readable trace report.

use super::{Outcome, Trace, Verdict};
use std::fmt;

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Dnat(to) => write!(f, "DNAT -> {to}"),
            Verdict::Reject => f.write_str("REJECT"),
            Verdict::Drop => f.write_str("DROP"),
            Verdict::Accept => f.write_str("ACCEPT (destination unchanged)"),
        }
    }
}

impl fmt::Display for Outcome {
    /// `NN.N%: DNAT -> 10.76.0.9:9376 (masquerade: yes)`, then each matched rule indented.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masq = if self.masquerade { "yes" } else { "no" };
        writeln!(
            f,
            "{:.1}%: {} (masquerade: {masq})",
            self.probability * 100.0,
            self.verdict
        )?;
        for step in &self.steps {
            // Line 0: a jump added by Ruleset::add_kube_proxy_jumps, not in the input.
            let line = match step.line {
                0 => "added".to_string(),
                n => n.to_string(),
            };
            writeln!(f, "    {:<6} line {line:>5}: {}", step.table, step.rule)?;
        }
        for note in &self.notes {
            writeln!(f, "    note: {note}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for outcome in &self.outcomes {
            write!(f, "{outcome}")?;
        }
        let total: f64 = self.outcomes.iter().map(|o| o.probability).sum();
        let n = self.outcomes.len();
        writeln!(
            f,
            "total: {:.1}% over {n} outcome{}",
            total * 100.0,
            if n == 1 { "" } else { "s" }
        )?;
        if self.no_service_rule() {
            writeln!(f, "no Kubernetes service rule matched this packet")?;
        }
        for warning in &self.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        Ok(())
    }
}
