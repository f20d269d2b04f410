use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use super::*;

const T: Duration = Duration::from_secs(5);

#[test]
fn plain_reply_is_split_into_status_head_and_body() {
    let r = parse_reply(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}").expect("reply");
    assert_eq!(r.status, 201);
    assert_eq!(r.head, "HTTP/1.1 201 Created\r\nContent-Length: 2");
    assert_eq!(r.body, b"{}");
}

#[test]
fn chunked_reply_is_decoded() {
    let raw =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n";
    let r = parse_reply(raw).expect("reply");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["a"], 1);
}

#[test]
fn the_chunked_header_is_matched_without_regard_to_case() {
    let raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
    assert_eq!(parse_reply(raw).expect("reply").body, b"ok");
}

#[test]
fn chunks_are_joined_as_bytes() {
    // "é" is split across two chunks: decoding per chunk as text would mangle it.
    let e = "é".as_bytes();
    let mut raw = b"1\r\n".to_vec();
    raw.extend_from_slice(&e[..1]);
    raw.extend_from_slice(b"\r\n1\r\n");
    raw.extend_from_slice(&e[1..]);
    raw.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(String::from_utf8(dechunk(&raw)).expect("utf-8"), "é");
    assert_eq!(dechunk(b"4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"), b"{\"a\":1}");
}

#[test]
fn truncated_or_garbled_chunk_stops_decoding() {
    assert_eq!(dechunk(b"5\r\nab"), b"");
    assert_eq!(dechunk(b"2\r\nab\r\n5\r\nab"), b"ab");
    assert_eq!(dechunk(b"2\r\nab\r\nzz\r\ncd\r\n0\r\n\r\n"), b"ab");
}

#[test]
fn a_reply_without_head_end_or_status_is_rejected() {
    assert!(parse_reply(b"HTTP/1.1 200 OK\r\n").is_none());
    assert!(parse_reply(b"HTTP/1.1 OK\r\n\r\n").is_none());
}

#[test]
fn json_of_an_empty_or_non_json_body_is_null() {
    let r = parse_reply(b"HTTP/1.1 204 No Content\r\n\r\n").expect("reply");
    assert_eq!(r.json(), Value::Null);
    let r = parse_reply(b"HTTP/1.1 200 OK\r\n\r\nnot json").expect("reply");
    assert_eq!(r.json(), Value::Null);
    assert_eq!(r.text(), "not json");
}

#[test]
fn non_2xx_is_an_error_naming_the_call() {
    let r = parse_reply(b"HTTP/1.1 404 Not Found\r\n\r\nnope").expect("reply");
    assert!(!r.is_success());
    let e = r.ok("GET /x").expect_err("404").to_string();
    assert!(
        e.contains("GET /x") && e.contains("404") && e.contains("nope"),
        "{e}"
    );
    let r = parse_reply(b"HTTP/1.1 200 OK\r\n\r\nyes").expect("reply");
    assert_eq!(r.ok("GET /y").expect("2xx").text(), "yes");
}

#[test]
fn head_has_defaults_that_given_headers_replace() {
    let r = Request::new("POST", "/p", T).with_body(b"abc");
    assert_eq!(
        r.head("h:1"),
        "POST /p HTTP/1.1\r\nHost: h:1\r\nConnection: close\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: 3\r\n\r\n"
    );
    let r = r.with_headers(&[("content-type", "text/plain"), ("X-A", "1")]);
    let head = r.head("h:1");
    assert!(head.contains("content-type: text/plain\r\nX-A: 1\r\n"), "{head}");
    assert!(!head.contains("application/json\r\nContent-Type"), "{head}");
    assert_eq!(head.matches("ontent-").count(), 2, "one type, one length: {head}");
}

#[test]
fn urls_split_into_host_and_path() {
    assert_eq!(
        split_url("http://1.2.3.4:80/a/b?c"),
        Some(("1.2.3.4:80", "/a/b?c"))
    );
    assert_eq!(split_url("http://h"), Some(("h", "/")));
    assert_eq!(split_url("https://h/"), None);
}

/// Serves one connection on loopback: returns the address and a handle yielding the request's head
/// and body as received.
fn serve_once(answer: &'static [u8]) -> (String, std::thread::JoinHandle<(String, Vec<u8>)>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        let mut r = BufReader::new(s);
        let mut head = String::new();
        let mut len = 0;
        loop {
            let mut line = String::new();
            r.read_line(&mut line).expect("read head");
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().expect("length");
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).expect("read body");
        r.get_mut().write_all(answer).expect("answer");
        (head, body)
    });
    (addr, h)
}

#[test]
fn a_request_goes_over_the_wire_and_its_answer_comes_back() {
    let (addr, server) =
        serve_once(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
    let r = request(&addr, Request::new("PUT", "/x", T).with_body(b"{}")).expect("request");
    assert_eq!((r.status, r.text()), (200, "hi".to_owned()));
    let (head, body) = server.join().expect("server");
    assert!(
        head.starts_with(&format!("PUT /x HTTP/1.1\r\nHost: {addr}\r\n")),
        "{head}"
    );
    assert_eq!(body, b"{}");
}

#[test]
fn a_url_request_sends_the_urls_path_and_host() {
    let (addr, server) = serve_once(b"HTTP/1.1 503 Unavailable\r\nContent-Length: 2\r\n\r\nno");
    let r = request_url(&format!("http://{addr}/healthz?v=1"), Request::new("GET", "", T)).expect("request");
    assert_eq!((r.status, r.text()), (503, "no".to_owned()));
    let (head, _) = server.join().expect("server");
    assert!(
        head.starts_with(&format!("GET /healthz?v=1 HTTP/1.1\r\nHost: {addr}\r\n")),
        "{head}"
    );
}

#[test]
fn a_closed_port_is_an_error_naming_the_call() {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    drop(l);
    let e = request(&addr, Request::new("GET", "/gone", T))
        .expect_err("refused")
        .to_string();
    assert!(e.contains(&format!("GET http://{addr}/gone")), "{e}");
}
