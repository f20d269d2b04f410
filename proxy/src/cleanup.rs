//! `svcnet-proxy cleanup`: removes both modes' rules from both families, as `kube-proxy --cleanup`
//! does (each mode removes only what it owns: `crate::iptables::cleanup`, the nftables mode's
//! `kube-proxy` table).

use anyhow::Context as _;

use crate::cli::CleanupArgs;
use crate::iptables::cleanup::{self, delete_payload_of, svcnet_only};
use crate::iptables::{Iptables, detect_backend, saved_chains};
use crate::model::Family;

/// `svcnet-proxy cleanup`: both modes' rules, both families.
pub fn run(args: &CleanupArgs) -> anyhow::Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async {
        let backend = detect_backend(crate::settings::backend(args.iptables_backend)).await;
        let mut out = String::new();
        for family in [Family::V4, Family::V6] {
            let ipt = Iptables::new(family, backend);
            if let Err(e) = ipt.check().await {
                out.push_str(&format!("{e}: skipped\n"));
                continue;
            }
            if args.only_svcnet_chains {
                let saved = ipt.save_table("nat").await?;
                let chains: Vec<String> = saved_chains(&saved)
                    .into_iter()
                    .filter(|c| svcnet_only(c))
                    .collect();
                if let Some(payload) = delete_payload_of("nat", &saved, svcnet_only) {
                    ipt.restore(&payload)
                        .await
                        .with_context(|| format!("removing svcnet-only chains ({})", family.label()))?;
                }
                out.push_str(&format!(
                    "{}: removed {} svcnet-only chains\n",
                    family.label(),
                    chains.len()
                ));
                for c in chains {
                    out.push_str(&format!("  nat/{c}\n"));
                }
                continue;
            }
            let removed = cleanup::cleanup(&ipt)
                .await
                .with_context(|| format!("cleaning up {}", family.label()))?;
            out.push_str(&format!(
                "{}: removed {} jump rules and {} chains\n",
                family.label(),
                removed.jumps,
                removed.chains.len()
            ));
            for c in removed.chains {
                out.push_str(&format!("  {c}\n"));
            }
        }
        if args.only_svcnet_chains {
            return Ok(out);
        }
        // Both modes' rules go, as `kube-proxy --cleanup` does.
        for family in [Family::V4, Family::V6] {
            match crate::nftables::sync::cleanup(family).await {
                Ok(true) => out.push_str(&format!(
                    "{}: removed the nftables kube-proxy table\n",
                    family.label()
                )),
                Ok(false) => {}
                Err(e) => out.push_str(&format!("{e}: nftables skipped\n")),
            }
        }
        Ok(out)
    })
}
