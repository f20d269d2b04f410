//! `svcnet-crds`: writes `manifests/crds` from the Rust CRD types, or checks that the committed
//! files are current.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use svcnet_crds::manifests::{self, REGENERATE_COMMAND, WriteOutcome};

#[derive(Parser)]
#[command(name = "svcnet-crds", about = "Generate or check svcnet CRD manifests")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write every CRD as <plural>.<group>.yaml into a directory.
    Write {
        #[arg(long, default_value = "manifests/crds")]
        out: PathBuf,
    },
    /// Exit non-zero when the directory does not hold exactly what `write` would produce.
    Check {
        #[arg(long, default_value = "manifests/crds")]
        dir: PathBuf,
    },
}

fn main() -> anyhow::Result<ExitCode> {
    match Cli::parse().command {
        Command::Write { out } => {
            for outcome in manifests::write_dir(&out)? {
                match outcome {
                    WriteOutcome::Written(p) => println!("wrote {}", p.display()),
                    WriteOutcome::Unchanged(p) => println!("unchanged {}", p.display()),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { dir } => {
            let problems = manifests::check_dir(&dir)?;
            if problems.is_empty() {
                println!("{} is up to date", dir.display());
                return Ok(ExitCode::SUCCESS);
            }
            for problem in &problems {
                eprintln!("error: {problem}");
            }
            eprintln!("regenerate with: {REGENERATE_COMMAND}");
            Ok(ExitCode::FAILURE)
        }
    }
}
