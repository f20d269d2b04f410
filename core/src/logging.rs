//! Logging setup shared by the binaries: text or JSON lines on stderr.
//!
//! Logs go to stderr so that subcommands which print results (render, trace) keep stdout clean.

use crate::CoreError;
use tracing_subscriber::EnvFilter;

/// Output format of log lines.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Logging flags.
#[derive(clap::Args, Debug, Clone)]
pub struct LogArgs {
    /// Log line format.
    #[arg(long, env = "SVCNET_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter in tracing's EnvFilter syntax, e.g. `info` or `info,svcnet_proxy=debug`.
    #[arg(
        long = "log-level",
        alias = "log-filter",
        env = "SVCNET_LOG",
        default_value = "info"
    )]
    pub log_level: String,
}

impl Default for LogArgs {
    fn default() -> Self {
        LogArgs {
            log_format: LogFormat::Text,
            log_level: "info".to_string(),
        }
    }
}

/// Parses the filter alone, so a bad flag is reported before anything is installed.
pub fn filter(args: &LogArgs) -> Result<EnvFilter, CoreError> {
    EnvFilter::try_new(&args.log_level).map_err(|e| CoreError::LogFilter {
        filter: args.log_level.clone(),
        reason: e.to_string(),
    })
}

/// Installs the global subscriber. Fails if one is already installed.
pub fn init(args: &LogArgs) -> Result<(), CoreError> {
    let filter = filter(args)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    result.map_err(|e| CoreError::LogInit(e.to_string()))
}

#[cfg(test)]
mod tests;
