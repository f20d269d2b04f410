use clap::Parser;

use super::*;

fn cli(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("svcnet-cloud-controller").chain(args.iter().copied()))
        .expect("parse")
}

#[test]
fn the_documented_command_line_parses() {
    let c = cli(&[
        "--kubeconfig",
        "/tmp/kc",
        "--project",
        "p",
        "--region",
        "us-central1",
        "--zones",
        "us-central1-b,us-central1-c",
        "--network",
        "default",
        "--cluster-name",
        "svcnet",
        "--node-tags",
        "node,web",
        "--gce-endpoint",
        "http://127.0.0.1:1",
        "--concurrency",
        "4",
    ]);
    assert_eq!(c.concurrency, 4);
    assert!(c.leader.enabled);
    let r = c.resolve((None, None)).expect("resolve");
    assert_eq!(r.zones, ["us-central1-b", "us-central1-c"]);
    assert_eq!(r.node_tags, ["node", "web"]);
    assert_eq!(r.endpoint.as_deref(), Some("http://127.0.0.1:1"));
    assert_eq!(cli(&["--project", "p"]).concurrency, 32, "default concurrency");
}

#[test]
fn flags_override_config_file_which_overrides_metadata() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gce.conf");
    std::fs::write(
        &path,
        "[global]\nproject-id = from-file\nnetwork-name = vpc\nnode-tags = t1\nlocal-zone = europe-west4-a\n",
    )
    .expect("write");
    let p = path.display().to_string();
    let r = cli(&["--config", &p])
        .resolve((Some("from-md".into()), Some("asia-east1-a".into())))
        .expect("resolve");
    assert_eq!(r.project, "from-file");
    assert_eq!(r.network, "vpc");
    assert_eq!(r.region, "europe-west4", "region from the file's zone");
    assert_eq!(r.node_tags, ["t1"]);
    let r = cli(&["--config", &p, "--project", "flag", "--node-tags", "t2"])
        .resolve((None, None))
        .expect("resolve");
    assert_eq!(
        (r.project.as_str(), r.node_tags.as_slice()),
        ("flag", &["t2".to_owned()][..])
    );
    let r = cli(&[])
        .resolve((Some("md".into()), Some("us-east1-b".into())))
        .expect("metadata");
    assert_eq!((r.project.as_str(), r.region.as_str()), ("md", "us-east1"));
}

#[test]
fn missing_project_and_unknown_controller_are_errors() {
    assert!(matches!(
        cli(&[]).resolve((None, None)),
        Err(CliError::Missing("--project"))
    ));
    assert!(matches!(
        cli(&["--project", "p", "--region", "r", "--controllers", "service,bogus"]).resolve((None, None)),
        Err(CliError::UnknownController(c)) if c == "bogus"
    ));
}
