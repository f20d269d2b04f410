//! What several integration tests share: the golden cases, the random-cluster generator. (Throwaway namespaces come from the
//! svcnet-netns crate.)
#![allow(dead_code)]

pub mod generator;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Every upstream nftables case (`tests/upstream-nft/<case>/`): its directory and its render flags.
pub fn upstream_nft_cases() -> Vec<(PathBuf, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstream-nft");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/upstream-nft")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let flags = std::fs::read_to_string(dir.join("flags")).expect("flags");
            let flags = flags.split_whitespace().map(str::to_string).collect();
            (dir, flags)
        })
        .collect()
}

/// Every golden case: (input.yaml, CLI words from `<variant>.args`, `<variant>.rules`).
pub fn golden_cases() -> Vec<(PathBuf, Vec<String>, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("golden dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("case dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for args in files
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "args"))
        {
            let text = std::fs::read_to_string(&args).expect("args");
            let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
            cases.push((dir.join("input.yaml"), words, args.with_extension("rules")));
        }
    }
    cases
}

/// A throwaway namespace holding the nfacct counters upstream's rules name (the daemon creates them
/// at start), so payloads rendered for a current node load; `None` when namespaces are unavailable.
pub fn netns_with_nfacct(tag: &str) -> Option<svcnet_netns::Netns> {
    let ns = svcnet_netns::netns_or_skip(tag)?;
    for name in svcnet_proxy::iptables::nfacct::COUNTERS {
        let (ok, _, err) = ns.run(&["nfacct", "add", name]);
        assert!(
            ok,
            "nfacct add {name}: {err} (is nfacct installed? apt-get install nfacct)"
        );
    }
    Some(ns)
}

/// `svcnet-proxy render -f <input> <words of flags_file> <extra>`, the real binary; Err carries the
/// exit status and stderr. Shared by the tests that hold upstream's expectations.
pub fn render_with_flags_file(input: &Path, flags_file: &Path, extra: &[&str]) -> Result<String, String> {
    let flags =
        std::fs::read_to_string(flags_file).unwrap_or_else(|e| panic!("{}: {e}", flags_file.display()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_svcnet-proxy"))
        .arg("render")
        .arg("-f")
        .arg(input)
        .args(flags.split_whitespace())
        .args(extra)
        .output()
        .expect("run svcnet-proxy");
    if !out.status.success() {
        return Err(format!(
            "svcnet-proxy render {} {} failed ({}):\n{}",
            flags.trim(),
            extra.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("render output is not UTF-8: {e}"))
}

/// The table as the kernel lists it, comparable across tables built differently: handles dropped,
/// set elements sorted (a hash set lists in hash order), objects grouped by kind and name with each
/// chain's rules in order.
pub fn nft_listing(ns: &svcnet_netns::Netns, family: &str) -> Vec<Value> {
    let text = ns.ok(&["nft", "-j", "list", "table", family, "kube-proxy"]);
    let doc: Value = serde_json::from_str(&text).expect("nft -j output");
    let mut out: Vec<(u8, String, Value)> = Vec::new();
    for item in doc["nftables"].as_array().expect("nftables array") {
        let Some((kind, body)) = item.as_object().and_then(|o| o.iter().next()) else {
            continue;
        };
        let mut body = body.clone();
        if let Some(o) = body.as_object_mut() {
            o.remove("handle");
            if let Some(Value::Array(elems)) = o.get_mut("elem") {
                elems.sort_by_key(Value::to_string);
            }
        }
        let (order, key) = match kind.as_str() {
            "table" => (0, String::new()),
            "set" | "map" => (1, body["name"].as_str().unwrap_or_default().to_string()),
            "chain" => (2, body["name"].as_str().unwrap_or_default().to_string()),
            "rule" => (3, body["chain"].as_str().unwrap_or_default().to_string()),
            _ => continue,
        };
        out.push((order, key, json!({ kind.as_str(): body })));
    }
    // Stable: rules keep their order within a chain.
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    out.into_iter().map(|(_, _, v)| v).collect()
}
