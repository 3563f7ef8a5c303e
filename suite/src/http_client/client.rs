//! The client itself: a reqwest client with the runner's defaults that sends a [`RequestSpec`]
//! and records what happened as an [`Exchange`], with the excerpts and headers evidence shows.

use super::{parse, Exchange, RequestSpec, SentMark};
use std::time::{Duration, Instant};

use crate::model::{Evidence, RequestRecord, ResponseRecord};

/// The largest response body read, in bytes: a larger answer is recorded as no answer, with
/// the reason, so a hostile target cannot make a run hold its bodies in memory without bound.
pub const MAX_RESPONSE_BODY: usize = 8 << 20;

/// Longest body excerpt kept in evidence, in characters.
const EXCERPT_CHARS: usize = 200;

/// Headers worth showing in evidence (lower-case).
const EVIDENCE_HEADERS: &[&str] = &[
    "location",
    "retry-after",
    "idempotent-replayed",
    "content-type",
];

/// A reqwest client with the runner's defaults (no redirects, no proxy from the environment).
#[derive(Debug, Clone)]
pub struct Client {
    inner: reqwest::Client,
    /// Response headers shown in evidence besides [`EVIDENCE_HEADERS`] (lower-case): the
    /// contract's replay marker, where it has another name.
    also_shown: Vec<String>,
}

impl Client {
    /// Builds the client.
    ///
    /// # Panics
    /// Never in practice: building a plain-HTTP reqwest client only fails if the TLS backend
    /// fails to initialise, and this build has none.
    pub fn new() -> Self {
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .expect("a plain HTTP client without TLS always builds");
        Self {
            inner,
            also_shown: Vec::new(),
        }
    }

    /// The same client, also showing response header `name` (any case) in evidence, such as a
    /// contract's `replayed_header`.
    #[must_use]
    pub fn showing_header(mut self, name: &str) -> Self {
        let name = name.to_ascii_lowercase();
        if !EVIDENCE_HEADERS.contains(&name.as_str()) && !self.also_shown.contains(&name) {
            self.also_shown.push(name);
        }
        self
    }

    /// The reqwest client underneath, for a request that is no exchange of the run (a token
    /// grant): it trusts what the run's requests trust.
    pub fn reqwest(&self) -> &reqwest::Client {
        &self.inner
    }

    /// Sends one request and records what happened. Transport failures (refused, reset, closed,
    /// timed out) are recorded in the exchange, never returned as errors.
    pub async fn send(&self, spec: RequestSpec) -> Exchange {
        let record = RequestRecord {
            step: spec.step.clone(),
            method: spec.method.clone(),
            path: spec.path.clone(),
            principal: spec.principal.clone(),
            idempotency_key: spec.key.clone(),
            body_excerpt: excerpt(spec.body.as_deref().unwrap_or_default().as_bytes()),
            via_proxy: spec.via_proxy,
        };
        let started = Instant::now();
        // However the exchange ends, a request that will never be sent counts as sent: a waiter
        // must not wait past the exchange.
        let _ended = spec.sent.clone().map(SetOnDrop);
        let result = self.exchange(&spec).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let mut evidence = Evidence {
            request: record,
            response: None,
            error: None,
            proxy: None,
        };
        match result {
            Ok((status, headers, body)) => {
                // An XML answer reads as JSON too (`xml`), so one path language reads both.
                let content_type = headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok());
                let parsed = parse::parse(&body, content_type);
                let json = parsed.json;
                let problem_type = json
                    .as_ref()
                    .and_then(|j| j.get("type"))
                    .and_then(|t| t.as_str())
                    .map(str::to_owned);
                evidence.response = Some(ResponseRecord {
                    status,
                    headers: headers
                        .iter()
                        .filter(|(n, _)| {
                            EVIDENCE_HEADERS.contains(&n.as_str())
                                || self.also_shown.iter().any(|a| a == n.as_str())
                        })
                        .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                        .collect(),
                    problem_type,
                    body_excerpt: excerpt(&body),
                    elapsed_ms,
                });
                Exchange {
                    evidence,
                    status: Some(status),
                    headers,
                    body,
                    json,
                    parse_note: parsed.note,
                    started,
                    elapsed: started.elapsed(),
                    declared_replay: false,
                    operation_failed: None,
                }
            }
            Err(message) => {
                evidence.error = Some(message);
                Exchange {
                    evidence,
                    status: None,
                    headers: http::HeaderMap::new(),
                    body: bytes::Bytes::new(),
                    json: None,
                    parse_note: None,
                    started,
                    elapsed: started.elapsed(),
                    declared_replay: false,
                    operation_failed: None,
                }
            }
        }
    }

    async fn exchange(
        &self,
        spec: &RequestSpec,
    ) -> Result<(u16, http::HeaderMap, bytes::Bytes), String> {
        let method = reqwest::Method::from_bytes(spec.method.as_bytes())
            .map_err(|_| format!("invalid method `{}`", spec.method))?;
        let mut req = self
            .inner
            .request(method, format!("{}{}", spec.base_url, spec.path))
            .timeout(spec.timeout);
        for (name, value) in &spec.headers {
            let value = http::HeaderValue::from_bytes(value.as_bytes())
                .map_err(|_| format!("header `{name}` has a value HTTP cannot carry"))?;
            req = req.header(name.as_str(), value);
        }
        match (&spec.body, &spec.sent) {
            (Some(body), Some(mark)) => {
                req = req.body(reqwest::Body::wrap(MarkedBody {
                    data: Some(bytes::Bytes::from(body.clone())),
                    _sent: SetOnDrop(mark.clone()),
                }));
            }
            (Some(body), None) => req = req.body(body.clone()),
            (None, Some(mark)) => mark.set(),
            (None, None) => {}
        }
        let timeout_ms = spec.timeout.as_millis();
        let describe = move |e: reqwest::Error| describe_error(&e, timeout_ms);
        let resp = req.send().await.map_err(describe)?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let mut resp = resp;
        let mut body = bytes::BytesMut::new();
        while let Some(chunk) = resp.chunk().await.map_err(move |e| {
            format!("response body cut off: {}", describe_error(&e, timeout_ms))
        })? {
            if body.len() + chunk.len() > MAX_RESPONSE_BODY {
                return Err(format!(
                    "the answer ({status}) has a body of more than {} MiB, more than idemspec \
                     reads; it is judged as no answer",
                    MAX_RESPONSE_BODY >> 20
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, headers, body.freeze()))
    }
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

/// Sets its mark when dropped.
struct SetOnDrop(SentMark);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// A request body whose mark is set once the HTTP client is done with it: hyper drops a body
/// after handing its last frame to the connection's write buffer (or when the request fails).
/// Its exact size keeps the request's `Content-Length`, as a plain body would have it.
struct MarkedBody {
    data: Option<bytes::Bytes>,
    _sent: SetOnDrop,
}

impl http_body::Body for MarkedBody {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(self.data.take().map(|d| Ok(http_body::Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// Words a reader understands for a transport failure, with the root cause.
fn describe_error(e: &reqwest::Error, timeout_ms: u128) -> String {
    let mut root = String::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        root = s.to_string();
        source = s.source();
    }
    if e.is_timeout() {
        format!("timed out after {timeout_ms} ms")
    } else if e.is_connect() {
        format!("connection failed: {root}")
    } else if root.is_empty() {
        format!("no response: {e}")
    } else {
        format!("no response: {root}")
    }
}

/// The first [`EXCERPT_CHARS`] characters of a body, lossy UTF-8.
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().count() > EXCERPT_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn spec(base_url: String, body: Option<&str>, mark: &SentMark) -> RequestSpec {
        RequestSpec {
            step: "slow".into(),
            origin: base_url.clone(),
            base_url,
            method: "POST".into(),
            path: "/things".into(),
            principal: "A".into(),
            headers: vec![("content-type".into(), "application/json".into())],
            key: None,
            body: body.map(str::to_owned),
            timeout: Duration::from_secs(30),
            via_proxy: false,
            sent: Some(mark.clone()),
        }
    }

    /// The mark is set once the request was written whole, while its answer is still outstanding
    /// (the server never answers), and the server got the body with its `Content-Length`.
    #[tokio::test]
    async fn a_request_is_marked_sent_before_its_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (got_tx, got_rx) = tokio::sync::oneshot::channel::<String>();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !String::from_utf8_lossy(&seen).ends_with("{\"n\":1}") {
                let n = conn.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client closed before the body");
                seen.extend_from_slice(&buf[..n]);
            }
            got_tx.send(String::from_utf8_lossy(&seen).into()).unwrap();
            // Never answers; holds the connection until the test ends.
            std::future::pending::<()>().await;
        });
        let mark = SentMark::new();
        let client = Client::new();
        let exchange = tokio::spawn({
            let spec = spec(base, Some("{\"n\":1}"), &mark);
            async move { client.send(spec).await }
        });
        tokio::time::timeout(Duration::from_secs(5), mark.sent())
            .await
            .expect("marked sent while the answer is outstanding");
        assert!(!exchange.is_finished(), "the exchange is still waiting");
        let received = tokio::time::timeout(Duration::from_secs(5), got_rx)
            .await
            .expect("the server read the request")
            .unwrap();
        assert!(
            received.to_ascii_lowercase().contains("content-length: 7"),
            "{received}"
        );
        exchange.abort();
    }

    /// A request that can never be sent (nothing listens) still sets the mark, so a wait on it
    /// ends with the exchange; so does a request without a body.
    #[tokio::test]
    async fn a_request_that_fails_or_has_no_body_is_marked_too() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        for body in [Some("{}"), None] {
            let mark = SentMark::new();
            let exchange = Client::new().send(spec(closed.clone(), body, &mark)).await;
            assert!(exchange.status.is_none(), "{:?}", exchange.evidence.error);
            tokio::time::timeout(Duration::from_secs(1), mark.sent())
                .await
                .expect("marked");
        }
    }
}
