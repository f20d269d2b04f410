//! `POST /batch/compute/v1`: a multipart/mixed body whose parts are embedded HTTP requests
//! (gcloud sends multi-resource commands and operation polls this way). Each part is dispatched
//! like a normal call; the answer is multipart/mixed with embedded HTTP responses and the
//! Content-ID echoed as `response-<id>`.
use crate::api;
use crate::app::App;
use crate::errors::ApiError;

pub struct BatchReply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// One embedded request.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    pub content_id: Option<String>,
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: String,
}

pub async fn handle(app: &App, content_type: &str, body: &[u8]) -> BatchReply {
    let parts = match boundary(content_type).and_then(|b| parse(&String::from_utf8_lossy(body), &b)) {
        Ok(p) => p,
        Err(e) => {
            return BatchReply {
                status: e.code,
                content_type: "application/json; charset=UTF-8".into(),
                body: e.to_json().to_string().into_bytes(),
            };
        }
    };
    let out_boundary = format!("batch_svcnet_{}", crate::clock::now_ms());
    let mut out = String::new();
    for part in parts {
        let reply = api::call(
            app,
            &part.method,
            &part.path,
            &part.query,
            part.body.as_bytes(),
            true,
        )
        .await;
        out.push_str(&format!("--{out_boundary}\r\nContent-Type: application/http\r\n"));
        if let Some(id) = &part.content_id {
            let inner = id.trim().trim_start_matches('<').trim_end_matches('>');
            out.push_str(&format!("Content-ID: <response-{inner}>\r\n"));
        }
        out.push_str("\r\n");
        out.push_str(&format!(
            "HTTP/1.1 {} {}\r\n",
            reply.status,
            reason_phrase(reply.status)
        ));
        match reply.body {
            Some(b) => {
                let json = b.to_string();
                out.push_str("Content-Type: application/json; charset=UTF-8\r\n");
                out.push_str(&format!("Content-Length: {}\r\n\r\n{json}\r\n", json.len()));
            }
            None => out.push_str("Content-Length: 0\r\n\r\n\r\n"),
        }
    }
    out.push_str(&format!("--{out_boundary}--\r\n"));
    BatchReply {
        status: 200,
        content_type: format!("multipart/mixed; boundary={out_boundary}"),
        body: out.into_bytes(),
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        412 => "Precondition Failed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

pub fn boundary(content_type: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError::new(
            400,
            "badRequest",
            "Batch requests must be multipart/mixed with a boundary.",
        )
    };
    if !content_type
        .trim()
        .to_ascii_lowercase()
        .starts_with("multipart/mixed")
    {
        return Err(bad());
    }
    content_type
        .split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|b| !b.is_empty())
        .ok_or_else(bad)
}

/// Splits a header block from its content at the first empty line (CRLF or LF).
fn split_head(s: &str) -> (&str, &str) {
    let crlf = s.find("\r\n\r\n").map(|i| (i, 4));
    let lf = s.find("\n\n").map(|i| (i, 2));
    let pick = match (crlf, lf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    };
    match pick {
        Some((i, n)) => (&s[..i], &s[i + n..]),
        None => (s, ""),
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

pub fn parse(body: &str, boundary: &str) -> Result<Vec<Part>, ApiError> {
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    for chunk in body.split(&delim).skip(1) {
        if chunk.starts_with("--") {
            break;
        }
        let chunk = chunk
            .strip_prefix("\r\n")
            .or_else(|| chunk.strip_prefix('\n'))
            .unwrap_or(chunk);
        let (head, content) = split_head(chunk);
        let content_id = header(head, "Content-ID").map(str::to_string);
        let content = content.trim_start_matches(['\r', '\n']);
        let (request_line, rest) = content.split_once('\n').unwrap_or((content, ""));
        let mut words = request_line.split_whitespace();
        let bad = || {
            ApiError::new(
                400,
                "badRequest",
                format!("Malformed batch part: '{request_line}'"),
            )
        };
        let method = words.next().ok_or_else(bad)?.to_ascii_uppercase();
        let target = words.next().ok_or_else(bad)?;
        // A target may be a full URL; only its path and query matter.
        let target = match target.find("://") {
            Some(i) => target[i + 3..].find('/').map_or("/", |j| &target[i + 3 + j..]),
            None => target,
        };
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let (_, req_body) = split_head(rest);
        parts.push(Part {
            content_id,
            method,
            path: path.to_string(),
            query: query.to_string(),
            body: req_body.trim_end_matches(['\r', '\n']).to_string(),
        });
    }
    Ok(parts)
}

#[cfg(test)]
mod tests;
