use super::*;
use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
}

#[test]
fn flags_parse() {
    let cli =
        Cli::try_parse_from(["x", "--log-format", "json", "--log-level", "debug,hyper=warn"]).expect("parse");
    assert_eq!(cli.log.log_format, LogFormat::Json);
    assert_eq!(cli.log.log_level, "debug,hyper=warn");
    let cli = Cli::try_parse_from(["x", "--log-filter", "warn"]).expect("alias parses");
    assert_eq!(cli.log.log_level, "warn");
}

#[test]
fn bad_filter_is_rejected() {
    let args = LogArgs {
        log_format: LogFormat::Text,
        log_level: "info,[[[".to_string(),
    };
    assert!(matches!(filter(&args), Err(CoreError::LogFilter { .. })));
    assert!(filter(&LogArgs::default()).is_ok());
}
