//! hyper's own answers, rewritten: requests hyper cannot parse, and heads that come too slowly.
//!
//! hyper answers a request head it cannot parse (bad header bytes, a URI over its limit, too many
//! headers) with an empty `400`, `414` or `431` and closes, before any service sees a request;
//! it has no option to give that answer a body. The proxy and its control API answer every error
//! with an RFC 9457 problem body, so the downstream socket ([`super::conn`]'s `FaultIo`) holds
//! back a write that has exactly the shape of such an answer ([`reject_status`]) and the
//! connection's end decides: hyper failed with a parse error, so the held bytes were its answer
//! and a problem response replaces them ([`problem_response`]); anything else, so they were a
//! response like any other and go out as they are. Bytes of a real response that look like that
//! are only delayed, never changed.

use http::StatusCode;

use super::synthetic::{problem_document, PROBLEM_JSON};

/// The statuses hyper answers an unparseable request head with.
const STATUSES: [u16; 3] = [400, 414, 431];

/// The status of `buf` when it is, whole, an answer of the shape hyper writes for a request it
/// could not parse: `HTTP/1.1 {400|414|431} {reason}`, then `connection: close`,
/// `content-length: 0` and an optional `date`, and nothing after the head.
pub(super) fn reject_status(buf: &[u8]) -> Option<u16> {
    let rest = buf.strip_prefix(b"HTTP/1.1 ")?;
    let status: u16 = std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok()?;
    if !STATUSES.contains(&status) {
        return None;
    }
    let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
    let headers =
        rest[line_end + 2..].strip_prefix(b"connection: close\r\ncontent-length: 0\r\n")?;
    let tail = match headers.strip_prefix(b"date: ") {
        Some(date) => &date[date.windows(2).position(|w| w == b"\r\n")? + 2..],
        None => headers,
    };
    (tail == b"\r\n").then_some(status)
}

/// A complete response with a problem body, for a connection that closes after it.
pub(super) fn problem_response(status: StatusCode, detail: &str) -> Vec<u8> {
    problem_bytes(status, detail, true).0
}

/// A complete response with a problem body, with `connection: close` when `close`; and the
/// body's length in bytes.
pub(super) fn problem_bytes(status: StatusCode, detail: &str, close: bool) -> (Vec<u8>, usize) {
    let title = status.canonical_reason().unwrap_or("Error");
    let body = serde_json::Value::Object(problem_document(status, title, detail)).to_string();
    let connection = if close { "connection: close\r\n" } else { "" };
    let mut out = format!(
        "HTTP/1.1 {} {title}\r\ncontent-type: {PROBLEM_JSON}\r\ncontent-length: {}\r\n{connection}\r\n",
        status.as_u16(),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    (out, body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_empty_rejections_are_recognised() {
        let date = "date: Tue, 01 Dec 2026 11:22:45 GMT\r\n";
        let hyper = |status: &str| {
            format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: 0\r\n{date}\r\n")
        };
        assert_eq!(
            reject_status(hyper("400 Bad Request").as_bytes()),
            Some(400)
        );
        assert_eq!(
            reject_status(hyper("414 URI Too Long").as_bytes()),
            Some(414)
        );
        assert_eq!(
            reject_status(hyper("431 Request Header Fields Too Large").as_bytes()),
            Some(431)
        );
        let undated = "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(reject_status(undated.as_bytes()), Some(400));
        for other in [
            hyper("404 Not Found"),
            hyper("400 Bad Request") + "trailing bytes",
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n".into(),
            "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 2\r\n\r\nno".into(),
            "HTTP/1.1 4".into(),
        ] {
            assert_eq!(reject_status(other.as_bytes()), None, "{other:?}");
        }
    }

    #[test]
    fn the_problem_response_is_complete() {
        let bytes = problem_response(StatusCode::URI_TOO_LONG, "too long");
        let text = String::from_utf8(bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let doc: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(doc["status"], 414);
        assert_eq!(doc["detail"], "too long");
    }
}
