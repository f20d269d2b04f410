//! maxResults + pageToken/nextPageToken. Tokens are opaque to clients (an encoded offset).
use data_encoding::BASE64URL_NOPAD;

use crate::errors::ApiError;

pub const DEFAULT_MAX_RESULTS: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageReq {
    pub max: usize,
    pub offset: usize,
}

impl PageReq {
    pub fn from_params(max_results: Option<&str>, page_token: Option<&str>) -> Result<Self, ApiError> {
        let max = match max_results {
            None | Some("") => DEFAULT_MAX_RESULTS,
            Some(m) => match m.parse::<usize>() {
                Ok(0) => DEFAULT_MAX_RESULTS,
                Ok(n) if n <= DEFAULT_MAX_RESULTS => n,
                _ => {
                    return Err(ApiError::invalid_field(
                        "maxResults",
                        m,
                        "Must be less than or equal to 500.",
                    ));
                }
            },
        };
        let offset = match page_token {
            None | Some("") => 0,
            Some(t) => decode(t).ok_or_else(|| ApiError::invalid_field("pageToken", t, ""))?,
        };
        Ok(PageReq { max, offset })
    }

    /// The slice of `items` for this page and the token of the next one.
    pub fn apply<T>(&self, items: Vec<T>) -> (Vec<T>, Option<String>) {
        let total = items.len();
        let end = self.offset.saturating_add(self.max).min(total);
        let page: Vec<T> = items.into_iter().skip(self.offset).take(self.max).collect();
        let next = (end < total).then(|| encode(end));
        (page, next)
    }
}

fn encode(offset: usize) -> String {
    BASE64URL_NOPAD.encode(format!("svcnet-offset:{offset}").as_bytes())
}

fn decode(token: &str) -> Option<usize> {
    let raw = BASE64URL_NOPAD.decode(token.as_bytes()).ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix("svcnet-offset:")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
