//! Namespace names that carry their owner: `svcnet-t-<tag>-<pid>-<n>`. The pid lets a later run tell a
//! leftover (owner gone) from a namespace another live test is using; the counter makes names unique
//! within one process.

use std::sync::atomic::{AtomicU64, Ordering};

/// Every namespace made by [`crate::Netns`] starts with this.
pub const PREFIX: &str = "svcnet-t-";
/// Names the bench made before it used this crate: `svcnet-bench-<pid>-<n>-<tag>`. Still read so that
/// a sweep removes what an older bench run left behind.
const LEGACY_BENCH_PREFIX: &str = "svcnet-bench-";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other namespace of this process (or of any other live process) has.
pub(crate) fn unique(tag: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{PREFIX}{tag}-{}-{n}", std::process::id())
}

/// The pid that made namespace `name`, when the name is one of ours (`svcnet-t-<tag>-<pid>-<n>`, or
/// the bench's older `svcnet-bench-<pid>-<n>-<tag>`); `None` for every other name.
pub fn owner_pid(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix(PREFIX) {
        // The tag may itself contain dashes: read from the end.
        let mut parts = rest.rsplitn(3, '-');
        let n = parts.next()?;
        let pid = parts.next()?;
        let tag = parts.next()?;
        n.parse::<u64>().ok()?;
        return (!tag.is_empty()).then_some(pid.parse().ok()?);
    }
    let rest = name.strip_prefix(LEGACY_BENCH_PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    Some(pid)
}

#[cfg(test)]
mod tests;
