//! One request as the runner means to send it, and what came back.

use std::time::{Duration, Instant};

use crate::model::Evidence;

/// A request to send: where, as whom, with which key.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// The step that sends it (also sent as `X-Idemspec-Step` when through the proxy).
    pub step: String,
    /// Base URL (`http://127.0.0.1:8080`) — the proxy's or the target's.
    pub base_url: String,
    /// The target's base URL the request is meant for: `base_url` itself when sent direct;
    /// through the proxy, the upstream that proxy forwards to. Its authority is the request's
    /// `Host` (see [`host_of`](super::host_of)), and a signature is computed over it.
    pub origin: String,
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The principal's name (for evidence).
    pub principal: String,
    /// All headers to send (auth, key, content type, step tag).
    pub headers: Vec<(String, String)>,
    /// The key as sent, for evidence.
    pub key: Option<String>,
    /// The body, if any.
    pub body: Option<String>,
    /// Client timeout.
    pub timeout: Duration,
    /// Whether `base_url` is the proxy.
    pub via_proxy: bool,
    /// Told when the request was sent whole (see [`SentMark`]); `None` for most requests.
    pub sent: Option<SentMark>,
}

/// Tells whoever waits on it that a request was sent whole: its last body byte was handed to the
/// connection (a request without a body: when it starts), or the exchange ended without that.
/// Clones share one mark; it is set once and stays set.
#[derive(Debug, Clone)]
pub struct SentMark(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl SentMark {
    /// A mark not yet set.
    pub fn new() -> Self {
        Self(std::sync::Arc::new(tokio::sync::watch::Sender::new(false)))
    }

    /// Sets the mark (again: no effect).
    pub fn set(&self) {
        self.0.send_replace(true);
    }

    /// Returns once the mark is set.
    pub async fn sent(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = rx.wait_for(|sent| *sent).await;
    }
}

impl Default for SentMark {
    fn default() -> Self {
        Self::new()
    }
}

/// A sent request and everything observed about it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// What reports show (request, response summary, transport error; the proxy's action is filled
    /// in later from its event log).
    pub evidence: Evidence,
    /// The status, when a complete response arrived.
    pub status: Option<u16>,
    /// All response headers.
    pub headers: http::HeaderMap,
    /// The whole response body.
    pub body: bytes::Bytes,
    /// The body as JSON (an XML body through its mapping), when it parses: parsed once and
    /// shared by every reader (`super::parse`).
    pub json: Option<std::sync::Arc<serde_json::Value>>,
    /// Set when the body was read only in part, or not at all, because it holds more values
    /// than idemspec reads (`super::MAX_VALUES`) or nests JSON deeper (`super::MAX_JSON_DEPTH`):
    /// the sentence saying so, which a check that finds no id or cannot count a list names.
    pub parse_note: Option<String>,
    /// When the request was started.
    pub started: Instant,
    /// How long until the response (or the failure).
    pub elapsed: Duration,
    /// Where the answer is a replay of a completed success under another status, as the
    /// contract declares it (`contract.replay_status`), what told it so: set by the runner's
    /// reading of the answer (`runner::context::reading`), which reads the contract and the
    /// original answer; `None` from the client itself.
    pub declared_replay: Option<idemspec_scenarios::profile::ReplayBy>,
    /// The long-running operation this answer named, where it settled failed (the profile's
    /// `operation.failed`): the request failed, though its status is a 2xx. Set by the check's
    /// context once it saw the operation settle.
    pub operation_failed: Option<String>,
}

impl Exchange {
    /// An exchange that never happened: the request `spec` describes could not be sent (its
    /// principal's session, token or signature failed), the reason in `problem`; evidence shows
    /// the request as it would have gone.
    pub fn unsent(spec: &super::RequestSpec, problem: String) -> Self {
        let mut exchange = Self::failed(&spec.step, problem);
        exchange.evidence.request = super::client::record_of(spec);
        exchange
    }

    /// An exchange that never happened because the request could not be built.
    pub fn failed(step: &str, problem: String) -> Self {
        Self {
            evidence: Evidence {
                request: crate::model::RequestRecord {
                    step: step.to_owned(),
                    method: String::new(),
                    path: String::new(),
                    principal: String::new(),
                    idempotency_key: None,
                    body_excerpt: String::new(),
                    via_proxy: false,
                },
                response: None,
                error: Some(problem),
                proxy: None,
            },
            status: None,
            headers: http::HeaderMap::new(),
            body: bytes::Bytes::new(),
            json: None,
            parse_note: None,
            started: Instant::now(),
            elapsed: Duration::ZERO,
            declared_replay: None,
            operation_failed: None,
        }
    }

    /// A response header as text: its bytes where they are UTF-8 (a `Location` may carry a
    /// non-ASCII IRI), `None` where it is absent or not UTF-8 (see
    /// [`Exchange::has_header`] for presence alone).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(name)
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
    }

    /// Whether the response carries header `name`, whatever its bytes.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers.contains_key(name)
    }

    /// Whether the response marks itself a replay with header `name` (the contract's
    /// `replayed_header`): the header is there with any value but `false` or `0` (either case).
    /// Some libraries send the header on every response and say `false` on a first one
    /// (drf-idempotency 1.0.0: `Idempotent-Replayed: false`).
    pub fn marks_replay(&self, name: &str) -> bool {
        self.header(name).is_some_and(|v| {
            let v = v.trim();
            !(v.eq_ignore_ascii_case("false") || v == "0")
        })
    }

    /// How long the answer's `Retry-After` asks to wait (RFC 9110 §10.2.3): delta-seconds (digits
    /// only; past `u64`, `u64::MAX` seconds), or an HTTP-date from now (zero when it has passed);
    /// `None` when absent or unreadable.
    pub fn retry_after(&self) -> Option<Duration> {
        let value = self.header("retry-after")?.trim();
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            // delta-seconds is digits only (no sign); more than u64 holds is simply very long.
            return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
        }
        let at = httpdate::parse_http_date(value).ok()?;
        Some(
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or(Duration::ZERO),
        )
    }

    /// Whether the request succeeded: a 2xx arrived, or a replay of a completed success under the
    /// other status the contract declares for one ([`Exchange::declared_replay`]), and the
    /// operation it named, if any, did not fail ([`Exchange::operation_failed`]).
    pub fn is_success(&self) -> bool {
        (matches!(self.status, Some(200..=299)) || self.declared_replay.is_some())
            && self.operation_failed.is_none()
    }

    /// Whether the request failed on the server's side: a 5xx, or a long-running operation it
    /// named that settled failed.
    pub fn is_server_failure(&self) -> bool {
        matches!(self.status, Some(500..=599)) || self.operation_failed.is_some()
    }

    /// The RFC 9457 problem `type`, if the body has one.
    pub fn problem_type(&self) -> Option<&str> {
        self.evidence
            .response
            .as_ref()
            .and_then(|r| r.problem_type.as_deref())
    }

    /// The TLS failure that kept this exchange from an answer, in words with what to do (see
    /// [`super::tls_failure`]); `None` for an answer or any other transport failure.
    pub fn tls_failure(&self) -> Option<&str> {
        let error = self.evidence.error.as_deref()?;
        let cause = error.split_once(super::TLS_FAILED)?.1;
        self.status.is_none().then_some(cause)
    }

    /// "status 409 (type …)" or the transport error, for messages.
    pub fn describe(&self) -> String {
        match (self.status, self.problem_type()) {
            (Some(s), _) if self.operation_failed.is_some() => format!(
                "{s} (its operation `{}` failed)",
                self.operation_failed.as_deref().unwrap_or_default()
            ),
            (Some(s), _) if self.declared_replay.is_some() => {
                format!("{s} (a replay, as declared)")
            }
            (Some(s), Some(t)) => format!("{s} (type {t})"),
            (Some(s), None) => s.to_string(),
            (None, _) => self
                .evidence
                .error
                .clone()
                .unwrap_or_else(|| "no response".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Exchange;
    use http::HeaderValue;

    /// A `Location` with a non-ASCII IRI in UTF-8 is read as text; one in another encoding is
    /// present, though not text; a failed operation's answer is a failure, however it began.
    #[test]
    fn headers_are_read_as_sent_and_a_failed_operation_is_a_failure() {
        let mut e = Exchange::failed("s", String::new());
        e.status = Some(202);
        e.headers.insert(
            "location",
            HeaderValue::from_bytes("/machines/é".as_bytes()).expect("obs-text is allowed"),
        );
        e.headers.insert(
            "x-latin",
            HeaderValue::from_bytes(b"caf\xe9").expect("obs-text is allowed"),
        );
        assert_eq!(e.header("location"), Some("/machines/é"));
        assert_eq!(e.header("x-latin"), None);
        assert!(e.has_header("x-latin") && !e.has_header("x-absent"));
        assert!(e.is_success() && !e.is_server_failure());
        e.operation_failed = Some("/ops/1".into());
        assert!(!e.is_success() && e.is_server_failure());
        assert_eq!(e.describe(), "202 (its operation `/ops/1` failed)");
    }

    /// `Retry-After` is digits or an HTTP-date: a sign or garbage is unreadable, and a number
    /// past `u64` is as long as can be.
    #[test]
    fn retry_after_reads_delta_seconds_and_dates() {
        let with = |v: &str| {
            let mut e = Exchange::failed("s", String::new());
            e.headers
                .insert("retry-after", HeaderValue::from_str(v).unwrap());
            e.retry_after()
        };
        assert_eq!(with("2"), Some(std::time::Duration::from_secs(2)));
        assert_eq!(with("+2"), None);
        assert_eq!(with("-5"), None);
        assert_eq!(with("garbage"), None);
        assert_eq!(
            with("99999999999999999999"),
            Some(std::time::Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            with("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(std::time::Duration::ZERO)
        );
        assert!(with("Fri, 31 Dec 9999 23:59:59 GMT").is_some_and(|d| d.as_secs() > 1 << 30));
    }
}
