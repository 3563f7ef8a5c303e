//! The client itself: a reqwest client with the runner's defaults that sends a [`RequestSpec`]
//! and records what happened as an [`Exchange`], with the excerpts and headers evidence shows.

use super::{parse, Exchange, RequestSpec, SentMark, TlsSettings};
use std::collections::BTreeMap;
use std::sync::Arc;
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

/// What evidence shows of the request `spec` describes.
pub(crate) fn record_of(spec: &RequestSpec) -> RequestRecord {
    RequestRecord {
        step: spec.step.clone(),
        method: spec.method.clone(),
        path: spec.path.clone(),
        principal: spec.principal.clone(),
        idempotency_key: spec.key.clone(),
        body_excerpt: excerpt(spec.body.as_deref().unwrap_or_default().as_bytes()),
        via_proxy: spec.via_proxy,
    }
}

/// The header that names, to the embedded proxy, the principal a request is sent as, so the proxy
/// presents that principal's client certificate upstream: the proxy's own name for it.
pub use idemspec_proxy::PRINCIPAL_HEADER;

/// reqwest's builder with the suite's transport, the one every HTTP client of the suite starts
/// from (requests to the target, hooks, readiness probes): TLS through rustls as `tls` says,
/// presenting `principal`'s client certificate where it has one (`None`: no certificate), HTTP/1.1,
/// and no proxy taken from the environment. Callers add their timeouts and redirect policy.
///
/// # Errors
/// A [`idemspec_tls::TlsError`] when the CA file or the principal's certificate or key cannot be
/// read or used.
pub fn client_builder(
    tls: &TlsSettings,
    principal: Option<&str>,
) -> Result<reqwest::ClientBuilder, idemspec_tls::TlsError> {
    let identity = principal.and_then(|name| tls.identity(name));
    let config = tls.configs.client_config(&tls.trust, identity)?;
    Ok(reqwest::Client::builder()
        .use_preconfigured_tls((*config).clone())
        .http1_only()
        .no_proxy())
}

/// The runner's client: no redirects, no proxy from the environment, and one reqwest client per
/// principal with a client certificate, so a direct request presents its principal's certificate.
#[derive(Debug, Clone)]
pub struct Client {
    /// The client of requests without a certificate: through the proxy (which presents the
    /// principal's upstream), or as a principal without one.
    inner: reqwest::Client,
    /// The client of each principal with a certificate, by name, for its direct requests.
    by_principal: Arc<BTreeMap<String, reqwest::Client>>,
    /// Response headers shown in evidence besides [`EVIDENCE_HEADERS`] (lower-case): the
    /// contract's replay marker, where it has another name.
    also_shown: Vec<String>,
}

impl Client {
    /// A client trusting the platform's roots, presenting no certificate.
    ///
    /// # Panics
    /// If rustls cannot be set up with the platform's roots alone (no CA file, no certificate is
    /// read), which does not happen on a working system.
    pub fn new() -> Self {
        Self::with_tls(&TlsSettings::default()).expect("a client without TLS files builds")
    }

    /// A client with the run's TLS settings: the trust for `https://` URLs and a client per
    /// principal with a certificate.
    ///
    /// # Errors
    /// A [`idemspec_tls::TlsError`] naming the file that cannot be read or used.
    pub fn with_tls(tls: &TlsSettings) -> Result<Self, idemspec_tls::TlsError> {
        let build = |principal: Option<&str>| {
            client_builder(tls, principal).map(|b| {
                b.redirect(reqwest::redirect::Policy::none())
                    .pool_idle_timeout(Duration::from_secs(5))
                    .build()
                    .expect("a client from a preconfigured rustls config builds")
            })
        };
        let mut by_principal = BTreeMap::new();
        for name in tls.identities.keys() {
            by_principal.insert(name.clone(), build(Some(name))?);
        }
        Ok(Self {
            inner: build(None)?,
            by_principal: Arc::new(by_principal),
            also_shown: Vec::new(),
        })
    }

    /// The reqwest client `spec` goes out on: its principal's own for a direct request of a
    /// principal with a certificate, else the one without.
    fn client_for(&self, spec: &RequestSpec) -> &reqwest::Client {
        match self.by_principal.get(&spec.principal) {
            Some(own) if !spec.via_proxy => own,
            _ => &self.inner,
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
        let record = record_of(&spec);
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
                    declared_replay: None,
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
                    declared_replay: None,
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
            .client_for(spec)
            .request(method, format!("{}{}", spec.base_url, spec.path))
            .timeout(spec.timeout);
        if spec.via_proxy && !spec.principal.is_empty() {
            req = req.header(PRINCIPAL_HEADER, spec.principal.as_str());
        }
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

/// How a transport failure that [`tls_failure`] names starts, before its cause.
pub const TLS_FAILED: &str = "TLS handshake failed: ";

/// `TLS handshake failed: CAUSE` where `e` is a TLS failure [`idemspec_tls::explain`] names (an
/// unknown issuer, a name mismatch, an expired certificate, a certificate required or refused, a
/// plain-HTTP port), with what to do.
pub fn tls_failure(e: &reqwest::Error) -> Option<String> {
    idemspec_tls::explain(e).map(|cause| format!("{TLS_FAILED}{cause}"))
}

/// Words a reader understands for a transport failure, with the root cause: a TLS failure named
/// by its cause and what to do ([`idemspec_tls::explain`]).
fn describe_error(e: &reqwest::Error, timeout_ms: u128) -> String {
    if let Some(cause) = tls_failure(e) {
        return cause;
    }
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
