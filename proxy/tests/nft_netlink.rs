//! The netlink writer against `nft -f`: every upstream nftables case and every golden cluster (IPv4
//! and IPv6 as their args say) is loaded whole once through `nft -f` and once as svcnet's own
//! netlink batch, each into a throwaway network namespace (never the root namespace); the kernel
//! must then hold the same table: `nft list` prints the same text, and `nft --debug=netlink list`
//! the same expressions, registers and set elements for every rule.

mod common;

use std::path::Path;
use std::time::Duration;

use clap::Parser;
use svcnet_netns::Netns;
use svcnet_proxy::cli::{Cli, Command};
use svcnet_proxy::config::RenderConfig;
use svcnet_proxy::model::{Family, NodeFacts, ProxyState};
use svcnet_proxy::nftables::netlink;
use svcnet_proxy::nftables::render::{self as nft, Existing};
use svcnet_proxy::nftables::socket::NftSocket;
use svcnet_proxy::offline::input::load;
use svcnet_proxy::settings::RuleSettings;

/// (what, render argv) for every case: upstream's nftables cases, the edge cluster both families,
/// every golden cluster.
fn argvs() -> Vec<(String, Vec<String>)> {
    let mut argvs: Vec<(String, Vec<String>)> = Vec::new();
    for (dir, flags) in common::upstream_nft_cases() {
        let mut argv = vec!["-f".to_string(), dir.join("input.yaml").display().to_string()];
        argv.extend(flags);
        argvs.push((dir.display().to_string(), argv));
    }
    let edge = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nft_netlink");
    let edge_flags = std::fs::read_to_string(edge.join("edge.flags")).expect("edge.flags");
    for ipv6 in [false, true] {
        let mut argv = vec![
            "-f".to_string(),
            edge.join("edge.yaml").display().to_string(),
            "--proxy-mode".into(),
            "nftables".into(),
        ];
        argv.extend(edge_flags.split_whitespace().map(str::to_string));
        if ipv6 {
            argv.push("--ipv6".into());
        }
        argvs.push((format!("edge.yaml ipv6={ipv6}"), argv));
    }
    for (input, words, _) in common::golden_cases() {
        let mut argv = vec![
            "-f".to_string(),
            input.display().to_string(),
            "--proxy-mode".into(),
            "nftables".into(),
        ];
        argv.extend(words.iter().cloned());
        argvs.push((format!("{} {}", input.display(), words.join(" ")), argv));
    }
    argvs
}

/// One case's inputs, as `svcnet-proxy render` reads them.
fn inputs(what: &str, argv: Vec<String>) -> (Family, ProxyState, NodeFacts, RenderConfig) {
    let full: Vec<String> = ["svcnet-proxy", "render"]
        .into_iter()
        .map(str::to_string)
        .chain(argv)
        .collect();
    let cli = Cli::try_parse_from(&full).unwrap_or_else(|e| panic!("{what}: {e}"));
    let Command::Render(args) = cli.command else {
        panic!("not a render command")
    };
    let family = if args.ipv6 { Family::V6 } else { Family::V4 };
    let rules =
        RuleSettings::from_args(&args.rules, args.proxy_mode).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (_, node, state, cfg) =
        load(&args.file, &rules, args.caps, family).unwrap_or_else(|e| panic!("{what}: {e:#}"));
    (family, state, node, cfg)
}

/// (what, family, ruleset) for every case.
fn cases() -> Vec<(String, Family, nft::Inputs)> {
    argvs()
        .into_iter()
        .map(|(what, argv)| {
            let (family, state, node, cfg) = inputs(&what, argv);
            (what, family, nft::Inputs::new(&state, node, cfg))
        })
        .collect()
}

fn fam(family: Family) -> &'static str {
    nft::family_word(family)
}

/// The table as `nft list` prints it; with `debug`, each rule's expressions and each set's elements
/// too, the elements of a set sorted (a hash set lists them in the order of its buckets, which
/// depends on the order they were added, and nft sorts before sending), and anonymous sets named
/// by order of appearance (nft takes `__map0`, svcnet names of its own).
fn list(ns: &Netns, family: Family, debug: bool) -> String {
    let mut args = vec!["nft"];
    if debug {
        args.push("--debug=netlink");
    }
    args.extend(["list", "table", fam(family), "kube-proxy"]);
    let text = ns.ok(&args);
    if !debug {
        return text;
    }
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.starts_with("\telement ") {
            run.push(line);
            continue;
        }
        run.sort_unstable();
        out.extend(run.drain(..).map(str::to_string));
        out.push(without_rule_handle(line));
    }
    run.sort_unstable();
    out.extend(run.drain(..).map(str::to_string));
    anonymous_by_order(&out.join("\n"))
}

/// A debug listing's rule header (`ip kube-proxy CHAIN HANDLE [POSITION]`) without its numbers: a
/// replacement that keeps the table numbers its rules on from the old ones.
fn without_rule_handle(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    match words.as_slice() {
        [f, "kube-proxy", chain, numbers @ ..]
            if (*f == "ip" || *f == "ip6") && numbers.iter().all(|n| n.parse::<u64>().is_ok()) =>
        {
            format!("{f} kube-proxy {chain}")
        }
        _ => line.to_string(),
    }
}

/// Renames every `__map…`/`__set…` word to `__map#N`/`__set#N`, N counting distinct names as they
/// first appear.
fn anonymous_by_order(text: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("__") {
        out.push_str(&rest[..at]);
        let word_end = rest[at..]
            .find(|c: char| c.is_whitespace())
            .map_or(rest.len(), |n| at + n);
        let word = &rest[at..word_end];
        match word.get(..5).filter(|p| *p == "__map" || *p == "__set") {
            Some(prefix) => {
                let n = seen.iter().position(|w| w == word).unwrap_or_else(|| {
                    seen.push(word.to_string());
                    seen.len() - 1
                });
                out.push_str(&format!("{prefix}#{n}"));
            }
            None => out.push_str(word),
        }
        rest = &rest[word_end..];
    }
    out.push_str(rest);
    out
}

/// The `table ... # handle N` line of `nft -a list`: a table deleted and added again gets a new one.
fn table_handle(ns: &Netns, family: Family) -> Option<String> {
    let (_, table, _) = ns.exec(&["nft", "-a", "list", "table", fam(family), "kube-proxy"], "");
    table.lines().next().map(str::to_string)
}

fn netlink_load(ns: &Netns, tx: &nft::Transaction) -> Result<(), String> {
    let path = Path::new("/run/netns").join(ns.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(60)).map_err(|e| e.to_string())?;
    let batch =
        netlink::encode(tx.family(), &tx.ops, tx.sets(), socket.next_start()).map_err(|e| e.to_string())?;
    socket.apply(&batch).map_err(|e| e.to_string())
}

/// The first differing lines, with a little context.
fn diff(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let at = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = at.saturating_sub(6);
    format!(
        "nft -f:\n{}\nnetlink:\n{}",
        a[from..a.len().min(at + 6)].join("\n"),
        b[from..b.len().min(at + 6)].join("\n")
    )
}

#[test]
fn a_netlink_batch_leaves_the_kernel_as_nft_f_does() {
    let Some(by_nft) = svcnet_netns::netns_or_skip("nftnlA") else {
        return;
    };
    let Some(by_netlink) = svcnet_netns::netns_or_skip("nftnlB") else {
        return;
    };
    let cases = cases();
    assert!(cases.len() >= 15, "only {} cases", cases.len());
    let mut rules = 0;
    for (what, family, ruleset) in cases {
        for ns in [&by_nft, &by_netlink] {
            let _ = ns.run(&["nft", "delete", "table", fam(family), "kube-proxy"]);
        }
        let tx = nft::full(ruleset, &Existing::default(), nft::Start::Over);
        let (ok, _, err) = by_nft.exec(&["nft", "-f", "-"], &tx.text());
        assert!(ok, "{what}: nft -f: {err}");
        netlink_load(&by_netlink, &tx).unwrap_or_else(|e| panic!("{what}: netlink: {e}"));
        for debug in [false, true] {
            let (a, b) = (list(&by_nft, family, debug), list(&by_netlink, family, debug));
            assert!(
                a == b,
                "{what}: the kernel's tables differ (debug listing: {debug})\n{}",
                diff(&a, &b)
            );
        }
        rules += tx.stats.rules_written;
    }
    println!("netlink and nft -f agree on {rules} rules");
}

#[test]
fn a_refused_batch_changes_nothing_and_names_its_step() {
    let Some(ns) = svcnet_netns::netns_or_skip("nftnlC") else {
        return;
    };
    let path = Path::new("/run/netns").join(ns.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(10)).expect("socket");
    let good = vec![nft::Op::AddTable, nft::Op::AddChain(nft::Chain::new("kept"))];
    let batch = netlink::encode(Family::V4, &good, [], socket.next_start()).expect("encode");
    socket.apply(&batch).expect("a valid batch is applied");
    let bad = vec![
        nft::Op::AddChain(nft::Chain::new("added")),
        nft::Op::DeleteChain("missing".into()),
        nft::Op::FlushChain("kept".into()),
    ];
    let batch = netlink::encode(Family::V4, &bad, [], socket.next_start()).expect("encode");
    match socket.apply(&batch) {
        Err(svcnet_proxy::nftables::socket::NetlinkError::Refused { index, errno }) => {
            assert_eq!(
                batch.op_of_message(index),
                Some(1),
                "the refused step is the delete"
            );
            assert_eq!(errno, 2, "ENOENT");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let table = list(&ns, Family::V4, false);
    assert!(
        table.contains("chain kept") && !table.contains("chain added"),
        "{table}"
    );
}

/// A full sync over a table that holds another state, streamed in small batches (as the daemon does
/// at restart): the kernel ends as a fresh load of the new state.
#[test]
fn a_streamed_full_sync_over_an_existing_table_ends_as_a_fresh_load() {
    let Some(old) = svcnet_netns::netns_or_skip("nftnlD") else {
        return;
    };
    let Some(fresh) = svcnet_netns::netns_or_skip("nftnlE") else {
        return;
    };
    let cases = cases();
    let mut pairs = 0;
    for pair in cases.windows(2) {
        let ((was, fam_a, before), (what, fam_b, after)) = (&pair[0], &pair[1]);
        if fam_a != fam_b {
            continue;
        }
        let family = *fam_a;
        for ns in [&old, &fresh] {
            let _ = ns.run(&["nft", "delete", "table", fam(family), "kube-proxy"]);
        }
        let load = nft::full(before.clone(), &Existing::default(), nft::Start::Over);
        netlink_load(&old, &load).unwrap_or_else(|e| panic!("{was}: {e}"));
        let listing = old.ok(&["nft", "-t", "list", "table", fam(family), "kube-proxy"]);
        let existing = svcnet_proxy::nftables::kernel::parse_listing(&listing);
        let tx = nft::full(after.clone(), &existing, nft::Start::Over);
        let path = Path::new("/run/netns").join(old.name());
        let mut socket = NftSocket::open_in(&path, Duration::from_secs(60)).expect("socket");
        let batches = tx.batches(40);
        assert!(batches.len() > 1, "{what}: one batch");
        for ops in batches {
            let batch = netlink::encode(family, ops, tx.sets(), socket.next_start())
                .unwrap_or_else(|e| panic!("{was} -> {what}: {e}"));
            socket
                .apply(&batch)
                .unwrap_or_else(|e| panic!("{was} -> {what}: {e}"));
        }
        let whole = nft::full(after.clone(), &Existing::default(), nft::Start::Over);
        let (ok, _, err) = fresh.exec(&["nft", "-f", "-"], &whole.text());
        assert!(ok, "{what}: {err}");
        // Compared as nft_transactions.rs does: objects sorted (a table that grew lists them in
        // creation order), elements sorted.
        let (a, b) = (
            common::nft_listing(&old, fam(family)),
            common::nft_listing(&fresh, fam(family)),
        );
        if a != b {
            let a: Vec<String> = a.iter().map(ToString::to_string).collect();
            let b: Vec<String> = b.iter().map(ToString::to_string).collect();
            let only_a: Vec<_> = a.iter().filter(|x| !b.contains(x)).collect();
            let only_b: Vec<_> = b.iter().filter(|x| !a.contains(x)).collect();
            panic!(
                "{was} -> {what}: streamed full sync differs\nonly streamed: {only_a:#?}\nonly fresh: {only_b:#?}"
            );
        }
        pairs += 1;
    }
    assert!(pairs >= 10, "only {pairs} pairs");
    println!("{pairs} streamed full syncs over another state end as fresh loads");
}

/// A listing without its `elements = { ... }` blocks: an interval concatenation (pipapo) lists its
/// elements in an order of its own, which depends on how they were grouped into messages. The
/// elements are compared by the debug listing's sorted `element` lines and by `nft -j`'s.
fn without_elements(text: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_start().starts_with("elements = {") {
            inside = true;
        }
        if !inside {
            out.push(line);
        }
        if inside && line.trim_end().ends_with('}') {
            inside = false;
        }
    }
    out.join("\n")
}

/// The maps layout's cases: every case above, and the edge cluster (nested source ranges and
/// `0.0.0.0/0` beside the LB IP in `@fw-allow`), IPv6 with affinity, IPv6 node ports on every
/// local address.
fn maps_argvs() -> Vec<(String, Vec<String>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let arg = |words: &str, file: &str| -> (String, Vec<String>) {
        let mut argv = vec!["-f".to_string(), dir.join(file).display().to_string()];
        argv.extend(words.split_whitespace().map(str::to_string));
        (format!("{file} {words}"), argv)
    };
    let mut cases = argvs();
    cases.extend([
        arg(
            "--proxy-mode nftables --cluster-cidr 10.76.0.0/14 --node-name node-1 --nodeport-addresses 0.0.0.0/0",
            "golden/policies/input.yaml",
        ),
        arg(
            "--proxy-mode nftables --cluster-cidr fd00:10::/64 --node-name n1 --node-ip fd00:140::4 --ipv6",
            "nft_maps/affinity6.yaml",
        ),
        arg(
            "--proxy-mode nftables --cluster-cidr fd00:10::/64 --node-name n1 --ipv6 --nodeport-addresses ::/0",
            "golden/dualstack/input.yaml",
        ),
    ]);
    cases
}

/// The maps layout's table of one case. nft 1.0.6 aborts on IPv6 affinity records, so they are
/// left out (compared on neither side); `nft_maps_packets.rs` checks how `nft list` prints the
/// netlink writer's.
fn maps_table(
    what: &str,
    mut argv: Vec<String>,
) -> (Family, svcnet_proxy::nftables::render::maps::MapsTable) {
    argv.extend(["--nftables-layout".to_string(), "maps".to_string()]);
    let (family, state, node, cfg) = inputs(what, argv);
    let mut table = svcnet_proxy::nftables::render::maps::render(&state, &node, &cfg);
    if family == Family::V6 {
        for c in &mut table.chains {
            c.rules.retain(|r| !r.text.contains(" update @"));
        }
    }
    (family, table)
}

/// The maps table of `family` in `by_nft` and in `by_netlink` list the same: `nft list` and `nft
/// --debug=netlink list` (element blocks of the text listing left out, as a pipapo set prints its
/// elements in an order that depends on the messages) and `nft -j list` (every element).
fn same_maps_table(what: &str, family: Family, by_nft: &Netns, by_netlink: &Netns) {
    for debug in [false, true] {
        let (a, b) = (
            without_elements(&list(by_nft, family, debug)),
            without_elements(&list(by_netlink, family, debug)),
        );
        assert!(
            a == b,
            "{what}: the kernel's tables differ (debug listing: {debug})\n{}",
            diff(&a, &b)
        );
    }
    assert_eq!(
        common::nft_listing(by_nft, fam(family)),
        common::nft_listing(by_netlink, fam(family)),
        "{what}: nft -j list differs"
    );
}

/// `batch` applied, or a panic naming `what` and the step the kernel refused.
fn apply_maps(socket: &mut NftSocket, batch: &netlink::Batch, what: &str) {
    socket.apply(batch).unwrap_or_else(|e| {
        let step = match &e {
            svcnet_proxy::nftables::socket::NetlinkError::Refused { index, .. } => {
                netlink::replacement_step(batch, *index)
            }
            _ => "",
        };
        panic!("{what}: netlink: {e} ({step})")
    });
}

/// The maps layout's whole table (`--nftables-layout maps`) as svcnet's one netlink batch (table,
/// chains, `type`/`typeof` declarations, the skeleton's rules, every element encoded from its typed
/// value) against the same replacement's `nft -f` text: for every case above plus node ports on
/// every local address (`fib daddr type local`), IPv6 with affinity and source ranges, the kernel
/// holds the same table (`nft list`, `nft --debug=netlink list`, `nft -j list`). Each case replaces
/// the previous one's table of its family, as the daemon's full sync does.
#[test]
fn the_maps_layout_written_by_netlink_lists_as_nft_f_loads_it() {
    use svcnet_proxy::nftables::render::maps::{self, MapsChange};
    let (Some(by_nft), Some(by_netlink)) = (
        svcnet_netns::netns_or_skip("nftnlM"),
        svcnet_netns::netns_or_skip("nftnlN"),
    ) else {
        return;
    };
    let cases = maps_argvs();
    let path = Path::new("/run/netns").join(by_netlink.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(60)).expect("socket");
    let (mut rules, mut elements, tables, mut kept) = (0, 0, cases.len(), 0);
    for (what, argv) in cases {
        let (family, table) = maps_table(&what, argv);
        let (ok, _, err) = by_nft.exec(&["nft", "-f", "-"], &MapsChange::Replace.text(&table));
        assert!(ok, "{what}: nft -f: {err}");
        let skeleton = maps::MapsTable {
            elements: Vec::new(),
            ..table.clone()
        };
        let before = socket.table_objects(family).expect("the table's objects");
        let table_handle = || table_handle(&by_netlink, family);
        let handle_before = table_handle();
        let batch = netlink::encode_replacement(
            &skeleton,
            table.elements.iter().copied(),
            &[],
            before.as_ref(),
            socket.next_start(),
        )
        .unwrap_or_else(|e| panic!("{what}: encode: {e}"));
        apply_maps(&mut socket, &batch, &what);
        // The table and the hooked chains both tables have were kept (the same handles: a chain
        // deleted and re-added in a kept table gets a new one), not deleted and re-added.
        if before.is_some() {
            assert_eq!(table_handle(), handle_before, "{what}: the table was re-created");
        }
        let after = socket.table_objects(family).expect("objects").expect("a table");
        for c in before.iter().flat_map(|b| &b.chains).filter(|c| c.hooked) {
            let now = after
                .chains
                .iter()
                .find(|a| a.name == c.name)
                .expect("every hooked chain stays");
            assert_eq!(now.handle, c.handle, "{what}: {} re-registered", c.name);
            kept += 1;
        }
        same_maps_table(&what, family, &by_nft, &by_netlink);
        rules += table.chains.iter().map(|c| c.rules.len()).sum::<usize>();
        elements += table.elements.len();
    }
    println!(
        "maps layout: netlink and nft -f agree on {tables} tables, {rules} rules, {elements} elements; {kept} hooked chains kept"
    );
    assert!(
        kept >= 10,
        "replacements over an earlier table keep its hooked chains: {kept}"
    );
}

/// A batch of a load in pieces stops at this many bytes (one message more at most): every case's
/// load takes many batches.
const PIECE_BUDGET: usize = 512;

/// The maps layout's table loaded in pieces (`netlink::Pieces`, as the daemon loads a table no
/// packet reaches yet): until the last batch the kernel's table is dormant (none of its hooks
/// registered, so no packet meets it half written); each element batch stays within its budget;
/// and then the kernel holds what `nft -f` loads of the same table (`nft list`, `nft
/// --debug=netlink list`, `nft -j list`, every element), woken. Every other case starts over a
/// load of its own table that stopped after two batches (a failed load, which the next full sync
/// loads again), the others over no table.
#[test]
fn the_maps_layout_loaded_in_pieces_wakes_last_and_lists_as_nft_f_loads_it() {
    use svcnet_proxy::nftables::render::maps::{MapsChange, MapsTable};
    let (Some(by_nft), Some(by_netlink)) = (
        svcnet_netns::netns_or_skip("nftnlP"),
        svcnet_netns::netns_or_skip("nftnlQ"),
    ) else {
        return;
    };
    let path = Path::new("/run/netns").join(by_netlink.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(60)).expect("socket");
    let awake = |socket: &mut NftSocket, family| {
        let objects = socket.table_objects(family).expect("the table's objects");
        let t = objects.expect("a table");
        assert!(t.chains.iter().any(|c| c.hooked), "no base chain");
        !t.dormant
    };
    let (mut tables, mut batches_in_all, mut half, mut most) = (0, 0, 0, 0);
    for (i, (what, argv)) in maps_argvs().into_iter().enumerate() {
        let (family, table) = maps_table(&what, argv);
        let _ = by_nft.run(&["nft", "delete", "table", fam(family), "kube-proxy"]);
        let _ = by_netlink.run(&["nft", "delete", "table", fam(family), "kube-proxy"]);
        let (ok, _, err) = by_nft.exec(&["nft", "-f", "-"], &MapsChange::Replace.text(&table));
        assert!(ok, "{what}: nft -f: {err}");
        let skeleton = MapsTable {
            elements: Vec::new(),
            ..table.clone()
        };
        let elements = || table.elements.iter().copied();
        if i % 2 == 1 {
            let mut pieces = netlink::Pieces::new(&skeleton, elements(), &[], PIECE_BUDGET);
            for _ in 0..2 {
                let batch = pieces
                    .next_batch(socket.next_start())
                    .expect("encode")
                    .expect("a batch");
                socket
                    .apply(&batch)
                    .unwrap_or_else(|e| panic!("{what}: half load: {e}"));
            }
            assert!(!awake(&mut socket, family), "{what}: awake after two batches");
            half += 1;
        }
        let mut pieces = netlink::Pieces::new(&skeleton, elements(), &[], PIECE_BUDGET);
        let mut awake_after: Vec<bool> = Vec::new();
        while let Some(batch) = pieces
            .next_batch(socket.next_start())
            .unwrap_or_else(|e| panic!("{what}: encode: {e}"))
        {
            let first = awake_after.is_empty();
            assert!(
                first || batch.bytes.len() <= PIECE_BUDGET + (64 << 10),
                "{what}: a batch of {} bytes",
                batch.bytes.len()
            );
            apply_maps(
                &mut socket,
                &batch,
                &format!("{what}: batch {}", awake_after.len()),
            );
            awake_after.push(awake(&mut socket, family));
        }
        let n = awake_after.len();
        assert!(n >= 3, "{what}: {n} batches");
        assert_eq!(
            awake_after.iter().position(|&a| a),
            Some(n - 1),
            "{what}: the table awake after each batch: {awake_after:?}"
        );
        same_maps_table(&what, family, &by_nft, &by_netlink);
        tables += 1;
        batches_in_all += n;
        most = most.max(n);
    }
    println!(
        "maps layout: {tables} tables loaded in {batches_in_all} batches ({most} at most), woken last; {half} over a half load"
    );
    assert!(
        batches_in_all >= tables * 4 && most >= 8,
        "pieces: {batches_in_all} batches for {tables} tables, {most} at most"
    );
}

/// A full sync over a live maps table (a restart, the hourly sync): `netlink::plan_refresh` finds
/// the sets the kernel already holds as the new table would (declared the same, the same elements by
/// count and digest, streamed from the kernel's dump), and `netlink::encode_refresh` leaves them as
/// they are and flushes and fills the others declared the same. Over the same table every set that
/// can be compared is kept and the batch is smaller than a replacement; over a table with one map
/// value and one set element changed, exactly those two sets are written again; each time the
/// kernel then holds what `nft -f` loads of the new table, listed in the same order.
#[test]
fn a_refresh_over_a_live_maps_table_keeps_the_unchanged_sets_and_ends_as_a_fresh_load() {
    use std::collections::BTreeSet;
    use svcnet_proxy::nftables::render::maps::{MapsChange, MapsTable};
    let (Some(by_nft), Some(by_netlink)) = (
        svcnet_netns::netns_or_skip("nftnlR"),
        svcnet_netns::netns_or_skip("nftnlT"),
    ) else {
        return;
    };
    let path = Path::new("/run/netns").join(by_netlink.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(60)).expect("socket");
    let (mut tables, mut kept, mut rewritten) = (0, 0, 0);
    for (what, argv) in maps_argvs() {
        let (family, table) = maps_table(&what, argv);
        let skeleton = MapsTable {
            elements: Vec::new(),
            ..table.clone()
        };
        let _ = by_netlink.run(&["nft", "delete", "table", fam(family), "kube-proxy"]);
        let whole = netlink::encode_replacement(
            &skeleton,
            table.elements.iter().copied(),
            &[],
            None,
            socket.next_start(),
        )
        .unwrap_or_else(|e| panic!("{what}: encode: {e}"));
        socket
            .apply(&whole)
            .unwrap_or_else(|e| panic!("{what}: load: {e}"));
        let comparable: BTreeSet<String> = skeleton
            .sets
            .iter()
            .filter(|s| {
                // Verdict maps (the affinity ports' keys) are rewritten: the digest reads no verdict.
                !s.decl.ends_with(": verdict")
                    && !s
                        .flags
                        .iter()
                        .any(|f| ["interval", "dynamic", "timeout"].contains(f))
            })
            .map(|s| s.name.clone())
            .collect();
        // The second table: one map element's value and one set element gone, where there are.
        let mut changed = table.clone();
        let mut touched = BTreeSet::new();
        if let Some(e) = changed
            .elements
            .iter_mut()
            .find(|e| e.value.is_some() && comparable.contains(&e.set.name()))
        {
            e.value = e.value.map(|(ip, port)| (ip, port.wrapping_add(1)));
            touched.insert(e.set.name());
        }
        if let Some(i) = changed
            .elements
            .iter()
            .position(|e| e.value.is_none() && comparable.contains(&e.set.name()))
        {
            touched.insert(changed.elements.remove(i).set.name());
        }
        for (round, next) in [&table, &changed].into_iter().enumerate() {
            let kernel = socket.table_objects(family).expect("objects").expect("a table");
            let plan = netlink::plan_refresh(&skeleton, next.elements.iter().copied(), &kernel, |set| {
                socket.set_digest(family, set)
            })
            .unwrap_or_else(|e| panic!("{what}: digests: {e}"));
            let expected: BTreeSet<String> = match round {
                0 => comparable.clone(),
                _ => comparable.difference(&touched).cloned().collect(),
            };
            assert_eq!(plan.keep, expected, "{what}: round {round}: the sets kept");
            let declared: BTreeSet<String> = skeleton.sets.iter().map(|s| s.name.clone()).collect();
            let flushed: BTreeSet<String> = declared.difference(&expected).cloned().collect();
            assert_eq!(plan.flush, flushed, "{what}: round {round}: the sets flushed");
            let batch = netlink::encode_refresh(
                &skeleton,
                next.elements.iter().copied(),
                &[],
                &kernel,
                &plan,
                socket.next_start(),
            )
            .unwrap_or_else(|e| panic!("{what}: encode: {e}"));
            // Element messages hold up to 256 elements of one set: none for a kept set.
            let mut per_set: std::collections::BTreeMap<String, usize> = Default::default();
            for e in next
                .elements
                .iter()
                .filter(|e| !plan.keep.contains(&e.set.name()))
            {
                *per_set.entry(e.set.name()).or_default() += 1;
            }
            let want: usize = per_set.values().map(|n| n.div_ceil(256)).sum();
            let sent = (1..=batch.messages)
                .filter(|&i| netlink::replacement_step(&batch, i) == "an element")
                .count();
            assert_eq!(sent, want, "{what}: round {round}: element messages");
            apply_maps(&mut socket, &batch, &format!("{what}: round {round}"));
            let (ok, _, err) = by_nft.exec(&["nft", "-f", "-"], &MapsChange::Replace.text(next));
            assert!(ok, "{what}: nft -f: {err}");
            same_maps_table(&format!("{what}: round {round}"), family, &by_nft, &by_netlink);
            kept += plan.keep.len();
        }
        rewritten += touched.len();
        tables += 1;
    }
    println!(
        "maps layout: {tables} tables refreshed twice; {kept} sets kept, {rewritten} changed sets written again"
    );
    assert!(
        kept >= tables * 3 && rewritten >= tables,
        "kept {kept}, rewritten {rewritten}"
    );
}

/// The upstream layout's full sync over a table the maps layout wrote (a node switching layouts):
/// one netlink batch that clears the table around its hooks and writes it again. The kernel keeps
/// the table and every hooked chain (the same handles: no hook is registered twice, so no packet
/// crosses the commit between an old and a new one), and then holds what a fresh load holds.
#[test]
fn the_upstream_layout_over_a_maps_table_keeps_its_hooks_and_ends_as_a_fresh_load() {
    use svcnet_proxy::nftables::render::maps::{self, MapsChange, nft_loadable};
    let (Some(switched), Some(fresh)) = (
        svcnet_netns::netns_or_skip("nftnlS"),
        svcnet_netns::netns_or_skip("nftnlF"),
    ) else {
        return;
    };
    let path = Path::new("/run/netns").join(switched.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(60)).expect("socket");
    let (mut tables, mut kept) = (0, 0);
    for (what, argv) in argvs() {
        let mut maps_argv = argv.clone();
        maps_argv.extend(["--nftables-layout".to_string(), "maps".to_string()]);
        let (family, state, node, cfg) = inputs(&what, maps_argv);
        for ns in [&switched, &fresh] {
            let _ = ns.run(&["nft", "delete", "table", fam(family), "kube-proxy"]);
        }
        let text = MapsChange::Replace.text(&maps::render(&state, &node, &cfg));
        let (ok, _, err) = switched.exec(&["nft", "-f", "-"], &nft_loadable(&text).0);
        assert!(ok, "{what}: the maps table: {err}");
        let listing = switched.ok(&["nft", "-t", "list", "table", fam(family), "kube-proxy"]);
        let existing = svcnet_proxy::nftables::kernel::parse_listing(&listing);
        assert!(
            existing.sets.iter().any(|s| s == maps::MASQ_CLUSTER),
            "{what}: not a maps table"
        );
        let before = socket.table_objects(family).expect("objects").expect("a table");
        let table_handle = || table_handle(&switched, family);
        let handle_before = table_handle();

        let (_, state, node, cfg) = inputs(&what, argv);
        let upstream = nft::Inputs::new(&state, node, cfg);
        let tx = nft::full(upstream.clone(), &existing, nft::Start::Cleared);
        let batches = tx.batches(40);
        assert_eq!(
            batches.len(),
            1,
            "{what}: clearing and refilling must be one batch"
        );
        let batch = netlink::encode(family, batches[0], tx.sets(), socket.next_start())
            .unwrap_or_else(|e| panic!("{what}: encode: {e}"));
        socket
            .apply(&batch)
            .unwrap_or_else(|e| panic!("{what}: netlink: {e}"));

        assert_eq!(table_handle(), handle_before, "{what}: the table was re-created");
        let after = socket.table_objects(family).expect("objects").expect("a table");
        for c in before.chains.iter().filter(|c| c.hooked) {
            let now = after.chains.iter().find(|a| a.name == c.name);
            assert_eq!(
                now.map(|n| n.handle),
                Some(c.handle),
                "{what}: {} deleted or re-registered",
                c.name
            );
            kept += 1;
        }
        let whole = nft::full(upstream, &Existing::default(), nft::Start::Over);
        let (ok, _, err) = fresh.exec(&["nft", "-f", "-"], &whole.text());
        assert!(ok, "{what}: {err}");
        let (a, b) = (
            common::nft_listing(&switched, fam(family)),
            common::nft_listing(&fresh, fam(family)),
        );
        assert!(
            a == b,
            "{what}: the switched table differs from a fresh load\n{}",
            diff(
                &b.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"),
                &a.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
            )
        );
        tables += 1;
    }
    println!("{tables} maps tables switched to the upstream layout in place; {kept} hooked chains kept");
    assert!(
        kept >= 8 * 10,
        "every hooked chain of every table is kept: {kept}"
    );
}
