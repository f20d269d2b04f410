//! Golden payloads: `tests/golden/<cluster>/input.yaml` rendered with each `<variant>.args` must equal
//! `<variant>.rules`. Regenerate after an intended change with
//! `SVCNET_UPDATE_GOLDEN=1 cargo test -p svcnet-proxy --test golden`, then review the diff.
//! `restore.rs` loads every one of these payloads into the real iptables in a throwaway namespace.

mod common;

use clap::Parser;
use svcnet_proxy::cli::{Cli, Command};
use svcnet_proxy::offline::run_render;

#[test]
fn golden_payloads() {
    let update = std::env::var("SVCNET_UPDATE_GOLDEN").is_ok();
    let cases = common::golden_cases();
    assert!(
        cases.len() >= 10,
        "expected the golden corpus, found {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for (input, words, expected) in cases {
        let mut argv = vec![
            "svcnet-proxy".to_string(),
            "render".into(),
            "-f".into(),
            input.display().to_string(),
        ];
        argv.extend(words);
        let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{}: {e}", expected.display()));
        let Command::Render(args) = cli.command else {
            panic!("not a render command")
        };
        let got = run_render(&args).unwrap_or_else(|e| panic!("{}: {e:#}", expected.display()));
        if update {
            std::fs::write(&expected, &got).expect("write golden");
            continue;
        }
        let want = std::fs::read_to_string(&expected).unwrap_or_default();
        if got != want {
            let first = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            failures.push(format!(
                "{} differs at line {}:\n  got:  {}\n  want: {}",
                expected.display(),
                first + 1,
                got.lines().nth(first).unwrap_or("<end>"),
                want.lines().nth(first).unwrap_or("<end>")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(regenerate with SVCNET_UPDATE_GOLDEN=1 and review)",
        failures.join("\n")
    );
}
