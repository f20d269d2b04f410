use super::*;

#[test]
fn plain_reply_is_split_into_status_and_body() {
    let r = parse_reply(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}").unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.body, b"{}");
}

#[test]
fn chunked_reply_is_decoded() {
    let raw =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n";
    let r = parse_reply(raw).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["a"], 1);
}

#[test]
fn truncated_chunk_stops_decoding() {
    assert_eq!(dechunk(b"5\r\nab"), b"");
    assert_eq!(dechunk(b"2\r\nab\r\n5\r\nab"), b"ab");
}

#[test]
fn a_reply_without_head_end_is_rejected() {
    assert!(parse_reply(b"HTTP/1.1 200 OK\r\n").is_none());
}

#[test]
fn non_2xx_is_an_error_naming_the_call() {
    let r = Reply {
        status: 404,
        body: b"nope".to_vec(),
    };
    let e = r.ok("GET /x").unwrap_err().to_string();
    assert!(
        e.contains("GET /x") && e.contains("404") && e.contains("nope"),
        "{e}"
    );
}
