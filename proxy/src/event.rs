//! What the proxy saw: one [`ProxyEvent`] per proxied request (HTTP mode) or connection (TCP mode
//! and the Toxiproxy proxies), kept by the [`EventLog`](crate::event_log::EventLog).
//!
//! An event is the runner's ground truth for "did the server do the work": it records the rule
//! that applied, the fault, what the upstream answered and whether the downstream client got it.

use serde::{Deserialize, Serialize};

/// Which side of the proxy a failure happened on, in pingora's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The client side: the connection the request arrived on.
    Downstream,
    /// The server side: the connection to the API under test.
    Upstream,
}

/// What happened to one request (or, in TCP mode, one connection).
///
/// Serialised as JSON by the control API (`GET /events`). An event is recorded when the exchange is
/// over: the response was delivered, a fault ended it, or the downstream client went away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyEvent {
    /// Position in the log: increases by one per event, never reused (not even by a reset).
    pub seq: u64,
    /// When the request arrived, RFC 3339 in UTC.
    pub at: String,
    /// The request method (`POST`); empty in TCP mode.
    pub method: String,
    /// The request path and query as sent by the client; empty in TCP mode. At most
    /// [`MAX_EVENT_PATH`] bytes are kept: a longer one is cut and marked (`…[cut: N bytes,
    /// sha256 …]`).
    pub path: String,
    /// The idempotency key where [`crate::ProxyConfig::key_at`] puts it (the `Idempotency-Key`
    /// header by default), as sent, if any; bytes that are not UTF-8 shown as `\xNN`. At most
    /// [`MAX_EVENT_KEY`] bytes are kept, a longer key cut and marked as the path is.
    pub idempotency_key: Option<String>,
    /// Why the key could not be read from the request, where it could not (a body longer than the
    /// proxy reads, or not JSON): the request may carry one nobody saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_unread: Option<String>,
    /// The value of the `X-Idemspec-Step` control header, if any (stripped before forwarding);
    /// at most [`MAX_EVENT_STEP`] bytes kept, cut and marked as the path is.
    pub step: Option<String>,
    /// The name of the rule that applied, if any.
    pub rule: Option<String>,
    /// The fault verb applied (`drop_response`), if any.
    pub fault: Option<String>,
    /// How many times the request was sent upstream: 0 (refused, synthetic answer, upstream down
    /// before sending), 1, or 2 (`duplicate`). A copy counts once handed to an upstream
    /// connection, so a client that gave up before the answer still shows its send.
    pub upstream_sends: u8,
    /// The status of the (first) upstream response, when one arrived. When the client gave up
    /// first, the event is recorded at once and this is filled in when the upstream answers.
    pub upstream_status: Option<u16>,
    /// Why the exchange failed, when it did (upstream unreachable, reset mid-body, …).
    pub upstream_error: Option<String>,
    /// Which side `upstream_error` happened on.
    pub error_side: Option<Side>,
    /// The limit the upstream's response head broke (`more than 100 headers`), when the upstream
    /// answered with a head the proxy refuses: it answered, but nothing of its answer was passed
    /// on (`upstream_status` stays empty; the client got a `502` saying so). The limits:
    /// docs/RELIABILITY.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_head_refused: Option<String>,
    /// The status the downstream client was sent, if a response head was sent at all.
    pub client_status: Option<u16>,
    /// Body bytes delivered to the client (TCP mode: all bytes sent to the client).
    pub client_bytes: u64,
    /// Whether the client got the complete response.
    pub client_complete: bool,
    /// Body bytes the proxy read and did not pass on: the upstream's answer a `drop_response`
    /// read to its end, or the second copy's answer of a `duplicate` (bodies are read a frame at
    /// a time and never held whole). Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub discarded_bytes: u64,
    /// Whether the client went away before the exchange was over (not because of a fault).
    pub client_disconnected: bool,
    /// Milliseconds from the request's arrival until the event was recorded.
    pub duration_ms: u64,
    /// The Toxiproxy proxy the connection came through (`crate::toxiproxy`), by name; `None`
    /// for idemspec's own proxies. For such a connection `rule` and `fault` are the names and
    /// types of the toxics that acted on it, joined by `,`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
}

impl ProxyEvent {
    /// A placeholder with no allocation, left behind when an event moves into the log.
    pub(crate) const EMPTY: ProxyEvent = ProxyEvent {
        seq: 0,
        at: String::new(),
        method: String::new(),
        path: String::new(),
        idempotency_key: None,
        key_unread: None,
        step: None,
        rule: None,
        fault: None,
        upstream_sends: 0,
        upstream_status: None,
        upstream_error: None,
        error_side: None,
        upstream_head_refused: None,
        client_status: None,
        client_bytes: 0,
        client_complete: false,
        discarded_bytes: 0,
        client_disconnected: false,
        duration_ms: 0,
        proxy: None,
    };

    /// An event for an exchange starting now, with nothing recorded yet.
    pub(crate) fn starting_now() -> Self {
        let at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Self { at, ..Self::EMPTY }
    }
}

/// The most bytes of a request's idempotency key an event keeps: any key the IETF draft allows
/// (1–255 characters) is kept whole.
pub const MAX_EVENT_KEY: usize = 256;
/// The most bytes of a request's path and query an event keeps (2 KiB).
pub const MAX_EVENT_PATH: usize = 2048;
/// The most bytes of an `X-Idemspec-Step` value an event keeps.
pub const MAX_EVENT_STEP: usize = 256;

impl ProxyEvent {
    /// Cuts what the event keeps of the request's own text (path, key, step) to
    /// [`MAX_EVENT_PATH`], [`MAX_EVENT_KEY`] and [`MAX_EVENT_STEP`] bytes, so an event log of
    /// 100,000 events has a bound whatever clients send. The log does it as it takes an event;
    /// rules match the whole key before.
    pub(crate) fn bound(&mut self) {
        cut(&mut self.path, MAX_EVENT_PATH);
        for (text, max) in [
            (&mut self.idempotency_key, MAX_EVENT_KEY),
            (&mut self.step, MAX_EVENT_STEP),
        ] {
            if let Some(text) = text {
                cut(text, max);
            }
        }
    }
}

/// `text` cut to at most `max` bytes (at a character boundary) and marked as cut with its whole
/// length and the first 8 bytes of its SHA-256, so two long values that differ after the cut
/// still differ: `abc…[cut: 300 bytes, sha256 0123456789abcdef]`.
fn cut(text: &mut String, max: usize) {
    use sha2::Digest as _;
    if text.len() <= max {
        return;
    }
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let whole = text.len();
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("…[cut: {whole} bytes, sha256 {hex}]"));
}

/// What [`ProxyEvent::bound`] kept of a value it cut, and the value's whole length in bytes:
/// `("abc", 300)` for `abc…[cut: 300 bytes, sha256 0123456789abcdef]`; `None` for a value kept
/// whole.
pub fn cut_value(text: &str) -> Option<(&str, usize)> {
    let (kept, mark) = text.rsplit_once("…[cut: ")?;
    let (whole, rest) = mark.split_once(" bytes, sha256 ")?;
    let hex = rest.strip_suffix(']')?;
    (hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| whole.parse().ok().map(|n| (kept, n)))
        .flatten()
}

/// Whether a count is zero (serde's `skip_serializing_if`).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::{cut, cut_value};

    #[test]
    fn a_cut_value_gives_back_what_was_kept_and_its_whole_length() {
        let mut long = "k".repeat(300);
        cut(&mut long, 256);
        assert_eq!(cut_value(&long), Some((&*"k".repeat(256), 300)));
        assert_eq!(cut_value("order-17"), None);
        assert_eq!(cut_value("k…[cut: 9 bytes, sha256 nothex]"), None);
    }
}
