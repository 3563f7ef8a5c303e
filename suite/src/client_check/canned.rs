//! The canned upstream: an HTTP server on `127.0.0.1:0` that answers a request one of the client
//! profile's `routes` matches with that route's answer, and every other request with the
//! profile's success (status, headers, body), so a client can be judged without a real API behind
//! it. The proxy in front of it injects the faults.
//!
//! In a body or a header value, `{{key}}` is the request's idempotency key (where the contract's
//! `key_at` says; empty without one) and `{{id}}` twelve hex digits that are the same for every
//! request with one key and differ between keys (a replay answers the first id), escaped for a
//! JSON or XML body.

use std::net::SocketAddr;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use idemspec_scenarios::client_profile::{ClientProfile, OperationMatch};
use idemspec_scenarios::profile::{content_coding, KeyAt};
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

/// A running canned upstream; stopped on [`CannedUpstream::shutdown`] or drop.
#[derive(Debug)]
pub struct CannedUpstream {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    served: tokio::sync::watch::Receiver<u64>,
    answers: Arc<Answers>,
}

/// One of the operation's requests as the canned upstream received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The path and query.
    pub target: String,
    /// The headers, names lower-case, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, when it was read whole (at most [`MAX_REQUEST_BODY`]).
    pub body: Option<bytes::Bytes>,
    /// Why the body could not be read, where it could not: longer than idemspec reads, cut off,
    /// an encoding it cannot undo, JSON nested deeper than it reads. A key in it was not seen.
    pub body_unread: Option<String>,
}

/// The most of the operation's requests kept (`--discover` needs a handful).
const MAX_RECEIVED: usize = 64;

/// A response the canned upstream gives, `{{key}}` and `{{id}}` still in it.
#[derive(Debug)]
struct Canned {
    status: StatusCode,
    headers: Vec<(HeaderName, String)>,
    content_type: String,
    body: String,
}

impl Canned {
    /// `status`, `headers` (those that fail to parse, already refused at load, left out) and
    /// `body` of type `content_type`.
    fn new(status: u16, headers: Vec<(String, String)>, content_type: &str, body: &str) -> Self {
        let mut headers: Vec<(HeaderName, String)> = headers
            .into_iter()
            .filter_map(|(n, v)| Some((n.parse().ok()?, v)))
            .collect();
        headers.push((axum::http::header::CONTENT_TYPE, content_type.to_owned()));
        Self {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::CREATED),
            headers,
            content_type: content_type.to_owned(),
            body: body.to_owned(),
        }
    }
}

/// The routes in order, then the success; where a request carries its key; the count of keyless
/// requests, each of which gets an id of its own.
#[derive(Debug)]
struct Answers {
    routes: Vec<(OperationMatch, Canned)>,
    success: Canned,
    key_at: KeyAt,
    keyless: AtomicU64,
    operation: OperationMatch,
    served: tokio::sync::watch::Sender<u64>,
    received: std::sync::Mutex<Vec<Received>>,
}

impl Answers {
    fn of(&self, method: &Method, uri: &Uri) -> &Canned {
        let target = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
        self.routes
            .iter()
            .find(|(request, _)| super::attempt::is_operation(request, method.as_str(), target))
            .map_or(&self.success, |(_, canned)| canned)
    }
}

impl CannedUpstream {
    /// Starts serving `profile`'s routes and success on `127.0.0.1:0`.
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub async fn start(profile: &ClientProfile) -> std::io::Result<Self> {
        let answers = Arc::new(Answers {
            routes: profile
                .routes
                .iter()
                .map(|r| {
                    let r = &r.value;
                    let headers = r.headers.clone().into_iter().collect();
                    let canned = Canned::new(r.status(), headers, r.content_type(), r.body());
                    (r.request(), canned)
                })
                .collect(),
            success: Canned::new(
                profile.status(),
                profile.headers(),
                profile.content_type(),
                profile.body(),
            ),
            key_at: profile.contract().key_at,
            keyless: AtomicU64::new(0),
            operation: profile.operation(),
            served: tokio::sync::watch::Sender::new(0),
            received: std::sync::Mutex::new(Vec::new()),
        });
        let served = answers.served.subscribe();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let serving = answers.clone();
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let answers = serving.clone();
            async move { answers.answer(request).await }
        });
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            stop: Some(stop),
            served,
            answers,
        })
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many of the operation's requests it has answered, as they are answered (the work was
    /// done once this moves).
    pub fn served(&self) -> tokio::sync::watch::Receiver<u64> {
        self.served.clone()
    }

    /// The operation's requests it has received, in order (at most [`MAX_RECEIVED`]).
    pub fn received(&self) -> Vec<Received> {
        self.answers
            .received
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Stops serving (idempotent).
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for CannedUpstream {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The most of a request body read to find its key (as the profile's route bodies).
const MAX_REQUEST_BODY: usize = ClientProfile::MAX_BODY;

/// A request's body as its sender meant it, or why it could not be read (then `None`: the key is
/// absent, the answer given). It is read within [`MAX_REQUEST_BODY`] and undone of its
/// `Content-Encoding`; JSON nested deeper than serde_json reads is named too, since the key in it
/// cannot be found.
async fn read_body(
    headers: &http::HeaderMap,
    body: Body,
) -> (Option<bytes::Bytes>, Option<String>) {
    let raw = match axum::body::to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(raw) => raw,
        // axum names the limit only in its message.
        Err(e) if e.to_string().contains("length limit exceeded") => {
            let over = format!(
                "the body is over {} KiB, more than idemspec reads",
                MAX_REQUEST_BODY / 1024
            );
            return (None, Some(over));
        }
        Err(e) => return (None, Some(format!("the body was cut off: {e}"))),
    };
    let encoding = headers.get(http::header::CONTENT_ENCODING);
    let body = match content_coding::decoded(encoding.map(|v| v.as_bytes()), &raw) {
        Ok(decoded) => bytes::Bytes::from(decoded.into_owned()),
        Err(why) => return (None, Some(why)),
    };
    let looks_json = body
        .trim_ascii_start()
        .first()
        .is_some_and(|b| *b == b'{' || *b == b'[');
    let too_deep = looks_json
        && serde_json::from_slice::<serde::de::IgnoredAny>(&body)
            .is_err_and(|e| crate::http_client::json_too_deep(&e));
    let unread = too_deep.then(|| {
        format!(
            "its JSON is nested deeper than {} levels, more than idemspec reads",
            crate::http_client::MAX_JSON_DEPTH
        )
    });
    (Some(body), unread)
}

impl Answers {
    /// The answer to `request`, its `{{key}}` and `{{id}}` filled in.
    async fn answer(&self, request: Request<Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let (body, body_unread) = read_body(&parts.headers, body).await;
        let target = parts
            .uri
            .path_and_query()
            .map_or(parts.uri.path(), |pq| pq.as_str());
        let key = self
            .key_at
            .find(
                target,
                |wanted| {
                    parts
                        .headers
                        .iter()
                        .find(|(name, _)| wanted(name.as_str()))
                        .map(|(_, v)| v.as_bytes())
                },
                body.as_deref(),
            )
            .ok()
            .flatten();
        let id = match &key {
            Some(key) => hex::encode(&Sha256::digest(key.as_bytes())[..6]),
            None => format!("{:012x}", self.keyless.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let canned = self.of(&parts.method, &parts.uri);
        if super::attempt::is_operation(&self.operation, parts.method.as_str(), target) {
            if let Ok(mut received) = self.received.lock() {
                if received.len() < MAX_RECEIVED {
                    received.push(Received {
                        target: target.to_owned(),
                        headers: parts
                            .headers
                            .iter()
                            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
                            .collect(),
                        body: body.clone(),
                        body_unread,
                    });
                }
            }
            self.served.send_modify(|n| *n += 1);
        }
        let key = key.unwrap_or_default();
        let fill = |text: &str, escape: fn(&str) -> String| fill(text, &escape(&key), &id);
        let body_escape = if canned.content_type.contains("json") {
            json_escape
        } else if canned.content_type.contains("xml") {
            xml_escape
        } else {
            |s: &str| s.to_owned()
        };
        let mut response = Response::new(Body::from(fill(&canned.body, body_escape)));
        *response.status_mut() = canned.status;
        for (name, value) in &canned.headers {
            // A key HTTP cannot carry in a header leaves the template as written.
            let value = HeaderValue::from_str(&fill(value, |s| s.to_owned()))
                .or_else(|_| HeaderValue::from_str(value));
            if let Ok(value) = value {
                response.headers_mut().insert(name.clone(), value);
            }
        }
        response
    }
}

/// `template` with each `{{key}}` replaced by `key` and each `{{id}}` by `id`, in one pass: what
/// was filled in is never read again (a key that reads `{{id}}` stays itself).
fn fill(template: &str, key: &str, id: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{key}}") {
            out.push_str(key);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{{id}}") {
            out.push_str(id);
            rest = after;
        } else {
            out.push_str("{{");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}

/// `s` as the inside of a JSON string.
fn json_escape(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// `s` as XML character data or an attribute value. A character XML 1.0 cannot carry at all
/// (a control character other than tab, newline and carriage return) becomes U+FFFD, so the
/// document stays well-formed.
fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fill, xml_escape};

    #[test]
    fn templates_fill_in_one_pass_and_xml_stays_well_formed() {
        assert_eq!(fill("{{key}}/{{id}}", "{{id}}", "abc"), "{{id}}/abc");
        assert_eq!(fill("{{x}} {{key", "k", "i"), "{{x}} {{key");
        assert_eq!(xml_escape("a<b&\u{1}c\td"), "a&lt;b&amp;\u{FFFD}c\td");
    }
}
