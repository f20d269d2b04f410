use super::*;

#[test]
fn reads_the_global_section() {
    let text = r#"
[global]
project-id = my-project
network-name = "vpc-1"
node-tags = a-tag
node-tags = b-tag, c-tag ; comment
local-zone = us-central1-b
token-url = nil
[other]
project-id = ignored
"#;
    let c = parse("gce.conf", text).expect("parse");
    assert_eq!(c.project.as_deref(), Some("my-project"));
    assert_eq!(c.network.as_deref(), Some("vpc-1"));
    assert_eq!(c.node_tags, ["a-tag", "b-tag", "c-tag"]);
    assert_eq!(c.local_zone.as_deref(), Some("us-central1-b"));
}

#[test]
fn malformed_line_names_file_and_line() {
    let e = parse("f.conf", "[global]\nproject-id my-project\n").expect_err("no =");
    assert_eq!((e.path.as_str(), e.line), ("f.conf", 2));
}
