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
use svcnet_proxy::iptables::render::{self, FullOptions};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    P1,
    P2,
    /// Proxy memory at scale (real proxy in a namespace, fed through the real kube-apiserver).
    P4,
    /// Upstream anchor: kube-proxy (iptables, nftables) and svcnet (tree, flat) on the same API state.
    U,
    /// Cloud controller: calls and latency of one new LoadBalancer.
    C1,
    /// Cloud controller: 1000 LoadBalancers, default vs --concurrency 1. Long (tens of minutes):
    /// only with --only c2 (or --quick).
    C2,
    /// Cloud controller: a new Service's IP after a restart with 1000 converged LBs. Long (builds
    /// them first): only with --only c3 (or --quick).
    C3,
}

/// Parts run when --only is absent (C2 and C3 take too long for the default run).
const DEFAULT_PARTS: &[Part] = &[Part::P1, Part::P2, Part::P4, Part::U, Part::C1];

#[derive(Parser)]
#[command(
    name = "svcnet-bench",
    about = "svcnet benchmarks (P1-P4, U, C1-C3): figures and ratios from one run"
)]
struct Cli {
    /// Small sizes and few repetitions: exercises every code path in seconds (CI smoke run).
    #[arg(long)]
    quick: bool,
    /// Parts to run (P3 is computed from P1 and P2); default p1,p2,p4,u,c1 (c2, c3 only when named).
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
    /// P1: the nftables maps layout at the largest size with this many distinct endpoint counts
    /// (one dispatch rule each; the probe has the largest), against the same probe at the
    /// smallest size; default 19,500 (quick: 5). The 1-endpoint maps rows run at every size.
    #[arg(long, value_delimiter = ',')]
    p1_maps_counts: Option<Vec<usize>>,
    /// P1: only the nftables maps layout's rows (no iptables layouts, no upstream nft layout).
    #[arg(long)]
    p1_maps_only: bool,
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
    /// P2: also time the nftables mode through `nft -f` (the fallback writer, kube-proxy's way):
    /// ~5 minutes for its first load at 10k x 100k.
    #[arg(long)]
    p2_nft_binary: bool,
    /// P2: also the nftables mode's maps layout (`--nftables-layout maps`): rows `maps` (changes
    /// through `nft -f`) and `maps-nl` (changes through svcnet's netlink writer, as the daemon).
    #[arg(long)]
    p2_nft_maps: bool,
    /// P2: only the maps layout's rows (implies --p2-nft-maps; skips the iptables and nftnl rows).
    #[arg(long)]
    p2_maps_only: bool,
    /// P2: every Service of the maps rows has ClientIP affinity (its own map and chains), so each
    /// change meets that many affinity ports; only the `maps-nl` row runs (through `nft -f` each
    /// load of such a table takes minutes).
    #[arg(long)]
    p2_maps_affinity: bool,
    /// P2: only the nftables mode (skip the iptables layouts).
    #[arg(long)]
    p2_nft_only: bool,
    /// P2: the nftables first load's most steps per batch, one row each (default: the daemon's).
    #[arg(long, value_delimiter = ',')]
    p2_nft_batches: Option<Vec<usize>>,
    /// P2: a full-sync restore call still running after this many seconds is killed and the sync
    /// reported as a lower bound (the daemon's own limit is `--iptables-restore-timeout`, 2 min).
    #[arg(long, default_value_t = 300)]
    full_sync_limit_s: u64,
    /// Directory holding svcnet-fake-gce, svcnet-cloud-controller and
    /// svcnet-proxy (default: next to this binary, built there first when run through cargo).
    #[arg(long)]
    bin_dir: Option<std::path::PathBuf>,
    /// C1/C2: latency of every fake GCE operation; default 1000 ms (quick: 100).
    #[arg(long)]
    op_latency_ms: Option<u64>,
    /// C1: nodes (target pool members); default 100 (quick: 3).
    #[arg(long)]
    c1_nodes: Option<usize>,
    /// C2: Services of the default-concurrency run; default 1000 (quick: 12).
    #[arg(long)]
    c2_services: Option<usize>,
    /// C2: Services of the --concurrency 1 run (extrapolated to --c2-services); default 50 (quick: 3).
    #[arg(long)]
    c2_serial_services: Option<usize>,
    /// C2: nodes; default 100 (quick: 3).
    #[arg(long)]
    c2_nodes: Option<usize>,
    /// C2: extra controller flags of the "default" run, e.g. "--concurrency=20" (default: none).
    #[arg(long, allow_hyphen_values = true, value_delimiter = ' ')]
    c2_default_args: Vec<String>,
    /// C2, C3: give up a run after this many seconds.
    #[arg(long, default_value_t = 7200)]
    c2_limit_s: u64,
    /// C3: converged LoadBalancers before the restart; default 1000 (quick: 12).
    #[arg(long)]
    c3_converged: Option<usize>,
    /// C3: nodes; default 100 (quick: 3).
    #[arg(long)]
    c3_nodes: Option<usize>,
    /// P4 sizes SERVICESxENDPOINTS_PER_SERVICE, smallest first; default 1000x10,10000x10
    /// (quick: 50x2,200x5).
    #[arg(long, value_delimiter = ',', value_parser = svcnet_bench::p4::parse_size)]
    p4_sizes: Option<Vec<(usize, usize)>>,
    /// P4: stop waiting for the proxy's first full sync after this many seconds.
    #[arg(long, default_value_t = 600)]
    p4_limit_s: u64,
    /// P4: extra `svcnet-proxy run` flags (space separated).
    #[arg(long, allow_hyphen_values = true, value_delimiter = ' ')]
    p4_proxy_args: Vec<String>,
    #[command(flatten)]
    up: svcnet_bench::upstream::args::UArgs,
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
    /// Internal: load Services + EndpointSlices into an API server over plain HTTP (P4 runs it inside its namespace, through kubectl proxy).
    #[command(hide = true)]
    LoadApi {
        #[arg(long)]
        api: String,
        #[arg(long)]
        services: usize,
        #[arg(long)]
        endpoints: usize,
        #[arg(long, default_value_t = 16)]
        parallel: usize,
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

/// The most endpoints P2 builds (services x endpoints per service). P2 holds each endpoint several
/// times over (state, cache, batch): 10M filled the 24 GiB machine and stalled it.
const P2_MAX_ENDPOINTS: usize = 2_000_000;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (p2_services, p2_per_service) = (cli.p2_services.unwrap_or(10_000), cli.p2_endpoints.unwrap_or(10));
    anyhow::ensure!(
        p2_services.saturating_mul(p2_per_service) <= P2_MAX_ENDPOINTS,
        "--p2-services {p2_services} x --p2-endpoints {p2_per_service} (endpoints per Service) is over P2's \
         {P2_MAX_ENDPOINTS} endpoints; the largest documented size is 44000 x 6"
    );
    match cli.command {
        Some(Cmd::Agent { listen }) => return Ok(svcnet_bench::agent::serve(listen)?),
        Some(Cmd::LoadApi {
            api,
            services,
            endpoints,
            parallel,
        }) => {
            let took = svcnet_bench::p4::load(&api, services, endpoints, parallel)?;
            println!(
                "loaded {services} services x {endpoints} endpoints in {:.3}",
                took.as_secs_f64()
            );
            return Ok(());
        }
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
    let runs = |p: Part| match &cli.only {
        Some(o) => o.contains(&p),
        None => q || DEFAULT_PARTS.contains(&p),
    };
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
            max_chains: svcnet_proxy::iptables::render::DEFAULT_RESTORE_MAX_CHAINS,
            endpoint_sizes: cli
                .p1_endpoints
                .clone()
                .unwrap_or(if q { vec![1, 50] } else { vec![1, 1000] }),
            iptables: !cli.p1_maps_only,
            nftables: !cli.p1_maps_only,
            maps: true,
            maps_counts: cli
                .p1_maps_counts
                .clone()
                .unwrap_or(if q { vec![5] } else { vec![19, 500] }),
        };
        let r = p1::run(&params, &mut progress)?;
        print!("{}", report::p1(&r));
        for c in r
            .cases
            .iter()
            .filter(|c| c.chunks == 1 && c.services >= 1000 && c.endpoints == 1)
            .filter(|c| c.layout != p1::Rules::Maps)
        {
            p3_rows.push(P3Row {
                what: format!(
                    "{} x {} services, 1 endpoint",
                    p1::rules_name(c.layout),
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
            layouts: if cli.p2_nft_only || cli.p2_maps_only {
                vec![]
            } else {
                vec![Layout::Tree, Layout::Flat]
            },
            nftables: true,
            nft_binary: cli.p2_nft_binary || q,
            nft_maps: cli.p2_nft_maps || cli.p2_maps_only || q,
            maps_affinity: cli.p2_maps_affinity,
            nft_batches: cli.p2_nft_batches.clone().unwrap_or(match cli.p2_maps_only {
                true => vec![],
                false => vec![svcnet_proxy::nftables::kernel::STREAM_BATCH_OPS],
            }),
            full_sync: cli.p2_full_sync.clone().unwrap_or(if q {
                vec![Layout::Tree, Layout::Flat]
            } else {
                vec![Layout::Tree]
            }),
            save_program: restore.replace("restore", "save"),
            restore_program: restore.clone(),
            max_chains: svcnet_proxy::iptables::render::DEFAULT_RESTORE_MAX_CHAINS,
            full_sync_limit: Duration::from_secs(cli.full_sync_limit_s),
        };
        let r = p2::run(&params, &mut progress)?;
        print!("{}", report::p2(&r));
        // P3 is about iptables-restore; the nftables rows' full syncs are in P2's table.
        for l in r
            .layouts
            .iter()
            .filter(|l| !l.name.starts_with("nft") && l.name != "maps")
        {
            if let Some(f) = &l.full {
                p3_rows.push(P3Row {
                    what: format!("{} x {} svc / {} ep (full sync)", l.name, r.services, r.endpoints),
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
    run_control_plane(&cli, &runs, &mut progress)
}

/// P4, U, C1, C2, C3: the parts that start the real binaries.
fn run_control_plane(
    cli: &Cli,
    runs: &dyn Fn(Part) -> bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    use svcnet_bench::procs::{self, Bins};
    let q = cli.quick;
    let mut names = vec![];
    if runs(Part::P4) || runs(Part::U) {
        // The API server of P4 and U is the real one (svcnet-testcluster).
        names.push(procs::PROXY);
    }
    if runs(Part::C1) || runs(Part::C2) || runs(Part::C3) {
        names.extend([procs::FAKE_GCE, procs::CONTROLLER]);
    }
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    let bins = Bins::locate(cli.bin_dir.as_deref(), &names)?;
    let op_latency_ms = cli.op_latency_ms.unwrap_or(if q { 100 } else { 1000 });
    if runs(Part::P4) {
        let params = svcnet_bench::p4::P4Params {
            sizes: cli.p4_sizes.clone().unwrap_or(if q {
                vec![(50, 2), (200, 5)]
            } else {
                vec![(1000, 10), (10_000, 10)]
            }),
            limit: Duration::from_secs(cli.p4_limit_s),
            proxy_args: cli
                .p4_proxy_args
                .iter()
                .filter(|a| !a.is_empty())
                .cloned()
                .collect(),
        };
        let r = svcnet_bench::p4::run(&bins, &params, progress)?;
        print!("{}", svcnet_bench::report_c::p4(&r));
    }
    if runs(Part::U) {
        let r = svcnet_bench::upstream::run(&bins, &cli.up.params(q), progress)?;
        print!("{}", svcnet_bench::report_u::u(&r));
    }
    if runs(Part::C1) {
        let params = svcnet_bench::c1::C1Params {
            nodes: cli.c1_nodes.unwrap_or(if q { 3 } else { 100 }),
            op_latency_ms,
            limit: Duration::from_secs(120),
        };
        let r = svcnet_bench::c1::run(&bins, &params, progress)?;
        print!("{}", svcnet_bench::report_c::c1(&r));
    }
    if runs(Part::C2) {
        let params = svcnet_bench::c2::C2Params {
            services: cli.c2_services.unwrap_or(if q { 12 } else { 1000 }),
            serial_services: cli.c2_serial_services.unwrap_or(if q { 3 } else { 50 }),
            nodes: cli.c2_nodes.unwrap_or(if q { 3 } else { 100 }),
            op_latency_ms,
            default_args: cli
                .c2_default_args
                .iter()
                .filter(|a| !a.is_empty())
                .cloned()
                .collect(),
            limit: Duration::from_secs(cli.c2_limit_s),
        };
        let r = svcnet_bench::c2::run(&bins, &params, progress)?;
        print!("{}", svcnet_bench::report_c::c2(&r));
    }
    if runs(Part::C3) {
        let params = svcnet_bench::c3::C3Params {
            converged: cli.c3_converged.unwrap_or(if q { 12 } else { 1000 }),
            nodes: cli.c3_nodes.unwrap_or(if q { 3 } else { 100 }),
            op_latency_ms,
            limit: Duration::from_secs(cli.c2_limit_s),
        };
        let r = svcnet_bench::c3::run(&bins, &params, progress)?;
        print!("{}", svcnet_bench::report_c::c3(&r));
    }
    Ok(())
}
