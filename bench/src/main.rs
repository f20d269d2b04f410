//! `svcnet-bench`: prints the benchmark table (`make bench`); `--quick` is a small smoke run.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use svcnet_bench::p1::{self, P1Params};
use svcnet_bench::p2::{self, P2Params};
use svcnet_bench::report::{self, P3Row};
use svcnet_bench::synth;
use svcnet_proxy::config::{Layout, RenderConfig};
use svcnet_proxy::render::{self, FullOptions};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    P1,
    P2,
}

#[derive(Parser)]
#[command(
    name = "svcnet-bench",
    about = "svcnet benchmarks (P1-P3): figures and ratios from one run"
)]
struct Cli {
    /// Small sizes and few repetitions: exercises every code path in seconds (CI smoke run).
    #[arg(long)]
    quick: bool,
    /// Parts to run (P3 is computed from both); default all.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Option<Vec<Part>>,
    /// iptables-restore binary used inside the namespaces (e.g. iptables-legacy-restore).
    #[arg(long, default_value = "iptables-restore")]
    iptables_restore: String,
    /// P1 service counts (comma separated); default 10,10000,30000 (quick: 10,300).
    #[arg(long, value_delimiter = ',')]
    p1_sizes: Option<Vec<usize>>,
    /// P1 stretch: endpoint counts of the probed service (tree, smallest size); default 1,1000
    /// (quick: 1,50).
    #[arg(long, value_delimiter = ',')]
    p1_endpoints: Option<Vec<usize>>,
    /// P1 measured rounds over all namespaces; default 30 (quick: 2).
    #[arg(long)]
    rounds: Option<usize>,
    /// P1 connections per namespace per round; default 100 (quick: 10).
    #[arg(long)]
    per_round: Option<usize>,
    /// P2 services; default 10000 (quick: 200).
    #[arg(long)]
    p2_services: Option<usize>,
    /// P2 endpoints per service; default 10 (quick: 3).
    #[arg(long)]
    p2_endpoints: Option<usize>,
    /// P2 timed changes of each kind; default 11 (quick: 3).
    #[arg(long)]
    p2_changes: Option<usize>,
    /// P2 layouts that also get a timed full sync; default tree (quick: tree,flat).
    #[arg(long, value_enum, value_delimiter = ',')]
    p2_full_sync: Option<Vec<Layout>>,
    /// P2: a full-sync restore still running after this many seconds is killed and reported as a
    /// lower bound (the daemon itself kills iptables commands after 60 s).
    #[arg(long, default_value_t = 300)]
    full_sync_limit_s: u64,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Internal: the in-namespace agent (started by the bench itself through `ip netns exec`).
    #[command(hide = true)]
    Agent {
        #[arg(long)]
        listen: SocketAddr,
    },
    /// Time the renderer's phases (render, digests, partial and full payload) without any namespace.
    Phases {
        #[arg(long, default_value_t = 10_000)]
        services: usize,
        /// Endpoints per service.
        #[arg(long, default_value_t = 10)]
        endpoints: usize,
        #[arg(long, value_enum, default_value_t = Layout::Tree)]
        layout: Layout,
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// Print the full payload (jumps included) of a synthetic state, to reproduce a figure by hand.
    Payload {
        #[arg(long)]
        services: usize,
        /// Endpoints per service.
        #[arg(long, default_value_t = 1)]
        endpoints: usize,
        #[arg(long, value_enum, default_value_t = Layout::Tree)]
        layout: Layout,
    },
}

fn print_payload(services: usize, endpoints: usize, layout: Layout) {
    let ips = synth::cluster_ips(services, services as u64);
    let cfg = RenderConfig {
        layout,
        ..Default::default()
    };
    let r = render::render(&synth::state(&ips, endpoints), &synth::node(), &cfg);
    let opts = FullOptions {
        jumps: true,
        ..Default::default()
    };
    print!("{}", r.payload(&opts, &cfg).0);
}

fn tool_version(program: &str) -> String {
    Command::new(program)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| format!("{program} (version unknown)"))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Cmd::Agent { listen }) => return Ok(svcnet_bench::agent::serve(listen)?),
        Some(Cmd::Payload {
            services,
            endpoints,
            layout,
        }) => {
            print_payload(services, endpoints, layout);
            return Ok(());
        }
        Some(Cmd::Phases {
            services,
            endpoints,
            layout,
            reps,
        }) => {
            print!(
                "{}",
                svcnet_bench::phases::report(services, endpoints, layout, reps)
            );
            return Ok(());
        }
        None => {}
    }
    for gone in svcnet_bench::netns::remove_stale() {
        eprintln!("removed stale namespace {gone}");
    }
    let q = cli.quick;
    let runs = |p: Part| cli.only.as_ref().is_none_or(|o| o.contains(&p));
    let restore = cli.iptables_restore.clone();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    print!("{}", report::header(&tool_version(&restore), cores, q));
    let mut progress = |s: &str| eprintln!("{s}");
    let mut p3_rows = Vec::new();

    if runs(Part::P1) {
        let params = P1Params {
            sizes: cli.p1_sizes.clone().unwrap_or(if q {
                vec![10, 300]
            } else {
                vec![10, 10_000, 30_000]
            }),
            rounds: cli.rounds.unwrap_or(if q { 2 } else { 30 }),
            per_round: cli.per_round.unwrap_or(if q { 10 } else { 100 }),
            restore_program: restore.clone(),
            max_chains: 25_000,
            endpoint_sizes: cli
                .p1_endpoints
                .clone()
                .unwrap_or(if q { vec![1, 50] } else { vec![1, 1000] }),
        };
        let r = p1::run(&params, &mut progress)?;
        print!("{}", report::p1(&r));
        for c in r
            .cases
            .iter()
            .filter(|c| c.chunks == 1 && c.services >= 1000 && c.endpoints == 1)
        {
            p3_rows.push(P3Row {
                what: format!(
                    "{} x {} services, 1 endpoint",
                    p1::layout_name(c.layout),
                    c.services
                ),
                render: c.render,
                restore: c.restore,
                killed: false,
            });
        }
    }
    if runs(Part::P2) {
        let params = P2Params {
            services: cli.p2_services.unwrap_or(if q { 200 } else { 10_000 }),
            endpoints_per_service: cli.p2_endpoints.unwrap_or(if q { 3 } else { 10 }),
            changes: cli.p2_changes.unwrap_or(if q { 3 } else { 11 }),
            layouts: vec![Layout::Tree, Layout::Flat],
            full_sync: cli.p2_full_sync.clone().unwrap_or(if q {
                vec![Layout::Tree, Layout::Flat]
            } else {
                vec![Layout::Tree]
            }),
            save_program: restore.replace("restore", "save"),
            restore_program: restore.clone(),
            max_chains: 25_000,
            full_sync_limit: Duration::from_secs(cli.full_sync_limit_s),
        };
        let r = p2::run(&params, &mut progress)?;
        print!("{}", report::p2(&r));
        for l in &r.layouts {
            if let Some(f) = &l.full {
                p3_rows.push(P3Row {
                    what: format!(
                        "{} x {} svc / {} ep (full sync)",
                        p1::layout_name(l.layout),
                        r.services,
                        r.endpoints
                    ),
                    render: f.render + f.payload,
                    restore: f.restore,
                    killed: f.killed,
                });
            }
        }
    }
    if !p3_rows.is_empty() {
        print!("{}", report::p3(&p3_rows));
    }
    Ok(())
}
