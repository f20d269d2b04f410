use super::*;

#[test]
fn parses_apitools_style_batches() {
    let ct = r#"multipart/mixed; boundary="===============7330845974216740156==""#;
    let b = boundary(ct).expect("boundary");
    assert_eq!(b, "===============7330845974216740156==");
    let body = "--===============7330845974216740156==\nContent-Type: application/http\nMIME-Version: 1.0\nContent-Transfer-Encoding: binary\nContent-ID: <abc+0>\n\nDELETE /compute/v1/projects/p/global/firewalls/a?alt=json HTTP/1.1\nContent-Type: application/json\nMIME-Version: 1.0\ncontent-length: 0\nHost: 127.0.0.1:1\n\n\n--===============7330845974216740156==\nContent-Type: application/http\nContent-ID: <abc+1>\n\nPOST /compute/v1/projects/p/global/firewalls?alt=json HTTP/1.1\nContent-Type: application/json\n\n{\"name\": \"b\"}\n--===============7330845974216740156==--";
    let parts = parse(body, &b).expect("parts");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].method, "DELETE");
    assert_eq!(parts[0].path, "/compute/v1/projects/p/global/firewalls/a");
    assert_eq!(parts[0].query, "alt=json");
    assert_eq!(parts[0].content_id.as_deref(), Some("<abc+0>"));
    assert_eq!(parts[0].body, "");
    assert_eq!(parts[1].body, "{\"name\": \"b\"}");
}

#[test]
fn crlf_and_full_urls() {
    let body = "--B\r\nContent-Type: application/http\r\nContent-ID: 7\r\n\r\nGET https://compute.googleapis.com/compute/v1/projects/p/global/firewalls/a HTTP/1.1\r\n\r\n\r\n--B--\r\n";
    let parts = parse(body, "B").expect("parts");
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].path, "/compute/v1/projects/p/global/firewalls/a");
    assert!(boundary("application/json").is_err());
}
