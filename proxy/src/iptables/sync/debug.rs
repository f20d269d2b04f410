//! `--write-payloads DIR`: every restore payload of a sync is also appended to
//! `DIR/NNNNNN-<ipv4|ipv6>-<full|partial>.rules` ([`crate::sync::debug_path`]), to see what a sync wrote.

use std::path::PathBuf;

/// Appends a payload to the debug file (created at the first payload; a sync that writes nothing
/// leaves none). After a failed write the sync saves nothing more.
pub(super) fn save(file: &mut Option<PathBuf>, text: &str) {
    let Some(path) = file else {
        return;
    };
    let result = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&*path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if let Err(err) = result {
        tracing::warn!(%err, path = %path.display(), "writing debug payload failed");
        *file = None;
    }
}
