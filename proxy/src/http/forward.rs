//! The upstream side: a pooled HTTP/1.1 client, and the header rewriting a transparent reverse
//! proxy does (hop-by-hop headers and the `x-idemspec-*` control headers go; everything else,
//! `Host` included, reaches the upstream as the client sent it).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery};
use http::{Request, Response, StatusCode, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use idemspec_scenarios::rules::{check_upstream, Mode};
use tokio::net::TcpStream;

use super::body::{RequestBody, ResponseBody, Source};
use super::ctl::ConnCtl;
use super::ctx::RequestCtx;
use super::detach::Detached;
use super::receipt::Receipt;
use crate::error::ProxyError;
use crate::event::Side;

/// Where requests go: the upstream's address and the `Host` to send when the client sent none.
#[derive(Debug)]
pub(crate) struct Forwarder {
    authority: Authority,
    host: HeaderValue,
    /// The upstream URL's path without its trailing `/` (often empty), put before every path.
    prefix: String,
    base: String,
}

/// One upstream connection's I/O half; it is polled by the downstream connection's task.
pub(crate) type UpstreamConn = http1::Connection<TokioIo<TcpStream>, RequestBody>;

/// The upstream connections of one downstream connection.
///
/// A downstream connection gets its own upstream connection (made on its first request, reused
/// by the next ones), and that connection is driven inside the downstream connection's task: a
/// request and its response never hop between tasks or threads, which is what makes the
/// pass-through path cheap. A second simultaneous send (`duplicate` in concurrent mode) opens
/// another connection. Everything closes with the downstream connection.
#[derive(Debug)]
pub(crate) struct UpstreamLink {
    idle: Mutex<Option<SendRequest<RequestBody>>>,
    /// Connections opened but not yet taken by the task; `None` once the task is gone.
    pending: Mutex<Option<Vec<UpstreamConn>>>,
    ctl: Arc<ConnCtl>,
}

impl UpstreamLink {
    /// A link whose new connections the task behind `ctl` drives.
    pub(crate) fn new(ctl: Arc<ConnCtl>) -> Self {
        Self {
            idle: Mutex::new(None),
            pending: Mutex::new(Some(Vec::new())),
            ctl,
        }
    }

    fn take(&self) -> Option<SendRequest<RequestBody>> {
        self.idle
            .lock()
            .expect("link lock is never poisoned")
            .take()
            .filter(|s| !s.is_closed())
    }

    fn put(&self, sender: SendRequest<RequestBody>) {
        *self.idle.lock().expect("link lock is never poisoned") = Some(sender);
    }

    /// Hands a new connection to the task (or, if it is gone, to a task of its own).
    fn adopt(&self, conn: UpstreamConn) {
        let mut pending = self.pending.lock().expect("link lock is never poisoned");
        match pending.as_mut() {
            Some(pending) => pending.push(conn),
            None => {
                tokio::spawn(conn);
                return;
            }
        }
        drop(pending);
        self.ctl.new_upstream();
    }

    /// Moves the connections handed over so far into `into`; with `close`, later ones get a
    /// task of their own.
    pub(crate) fn drain(&self, into: &mut impl Extend<UpstreamConn>, close: bool) {
        let mut pending = self.pending.lock().expect("link lock is never poisoned");
        if let Some(conns) = pending.as_mut() {
            into.extend(conns.drain(..));
        }
        if close {
            *pending = None;
        }
    }
}

/// A request's way upstream: the proxy's forwarder and its downstream connection's link.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route<'a> {
    pub(crate) fwd: &'a Forwarder,
    pub(crate) link: &'a UpstreamLink,
    /// The request's receipt: sends and the upstream's answer, even after the client left.
    pub(crate) receipt: &'a Arc<Receipt>,
}

impl Route<'_> {
    /// See [`Forwarder::send`].
    pub(crate) async fn send(
        &self,
        req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        self.fwd.send(self.link, self.receipt, req).await
    }
}

/// Why a request got no upstream response.
#[derive(Debug)]
pub(crate) struct UpstreamError {
    /// Whether the request may have reached the upstream (false: the connection failed).
    pub(crate) sent: bool,
    pub(crate) message: String,
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus `expect`,
/// which the downstream side already answered.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::EXPECT,
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none: one pass over the names (standard names compare by tag) saves
    // the eight hashed removals.
    if !headers.keys().any(|name| HOP_BY_HOP.contains(name)) {
        return;
    }
    // Names listed in Connection are hop-by-hop too.
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in HOP_BY_HOP.iter().chain(&listed) {
        headers.remove(name);
    }
}

/// Renders an error with its sources, `outer: inner: innermost`.
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

impl Forwarder {
    /// A forwarder to the base URL `http://host:port[/prefix]`.
    pub(crate) fn new(upstream: &str) -> Result<Self, ProxyError> {
        check_upstream(Mode::Http, upstream).map_err(ProxyError::Upstream)?;
        let uri: Uri = upstream
            .parse()
            .map_err(|e| ProxyError::Upstream(format!("`{upstream}`: {e}")))?;
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| ProxyError::Upstream(format!("`{upstream}` has no host")))?;
        let host = HeaderValue::from_str(authority.as_str())
            .map_err(|e| ProxyError::Upstream(format!("`{upstream}`: {e}")))?;
        Ok(Self {
            authority,
            host,
            prefix: uri.path().trim_end_matches('/').to_owned(),
            base: upstream.trim_end_matches('/').to_owned(),
        })
    }

    /// Makes the request an origin-form HTTP/1.1 request for the upstream and removes what must
    /// not be forwarded. A missing `Host` (HTTP/1.0 clients) becomes the upstream's authority.
    pub(crate) fn prepare(&self, parts: &mut http::request::Parts) {
        let pq = parts
            .uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        parts.uri = if self.prefix.is_empty() {
            Uri::from(pq)
        } else {
            // Both parts are valid URI components, so their concatenation is one too.
            PathAndQuery::try_from(format!("{}{}", self.prefix, pq.as_str()))
                .map(Uri::from)
                .unwrap_or_else(|_| Uri::from(pq))
        };
        parts.version = http::Version::HTTP_11;
        strip_hop_by_hop(&mut parts.headers);
        let control: Vec<HeaderName> = parts
            .headers
            .keys()
            .filter(|name| name.as_str().starts_with("x-idemspec-"))
            .cloned()
            .collect();
        for name in control {
            parts.headers.remove(name);
        }
        if !parts.headers.contains_key(header::HOST) {
            parts.headers.insert(header::HOST, self.host.clone());
        }
    }

    fn failed(&self, sent: bool, err: &(dyn std::error::Error + 'static)) -> UpstreamError {
        UpstreamError {
            sent,
            message: format!("{}: {}", self.base, error_chain(err)),
        }
    }

    /// Opens a new upstream connection and hands its I/O half to the link's task.
    async fn connect(
        &self,
        link: &UpstreamLink,
    ) -> Result<SendRequest<RequestBody>, UpstreamError> {
        let stream = TcpStream::connect(self.authority.as_str())
            .await
            .map_err(|e| self.failed(false, &e))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = http1::Builder::new()
            .writev(false)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| self.failed(false, &e))?;
        link.adopt(conn);
        Ok(sender)
    }

    /// Sends one request upstream over the link's connection (or a new one). A request the
    /// upstream provably never received (a stale keep-alive connection) is retried once.
    pub(crate) async fn send(
        &self,
        link: &UpstreamLink,
        receipt: &Arc<Receipt>,
        mut req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        for attempt in 0..2 {
            let mut sender = match link.take() {
                Some(sender) => sender,
                None => self.connect(link).await?,
            };
            if let Err(err) = sender.ready().await {
                if attempt == 0 {
                    continue;
                }
                return Err(self.failed(false, &err));
            }
            receipt.handed();
            match Detached::new(sender.try_send_request(req), receipt.clone()).await {
                Ok(resp) => {
                    link.put(sender);
                    return Ok(resp);
                }
                Err(mut err) => {
                    let unsent = err.take_message();
                    if unsent.is_some() {
                        receipt.unsent();
                    }
                    match unsent {
                        Some(unsent) if attempt == 0 => req = unsent,
                        unsent => return Err(self.failed(unsent.is_none(), err.error())),
                    }
                }
            }
        }
        unreachable!("the second attempt returns")
    }

    /// The response head to send downstream, with hop-by-hop headers removed.
    pub(crate) fn response_parts(resp: Response<Incoming>) -> (http::response::Parts, Incoming) {
        let (mut parts, body) = resp.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        (parts, body)
    }
}

/// A synthetic response: `status`, `content_type`, `body`; recorded as the client's status.
pub(crate) fn synthetic(
    mut ctx: RequestCtx,
    status: StatusCode,
    content_type: &str,
    body: Bytes,
) -> Response<ResponseBody> {
    ctx.event.client_status = Some(status.as_u16());
    let mut resp = Response::new(ResponseBody::new(Source::Full(Some(body)), ctx));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_str(content_type)
            .unwrap_or(header::HeaderValue::from_static("application/octet-stream")),
    );
    resp
}

/// RFC 9457 problem body for a failure of the proxy's own (502 when the upstream failed).
pub(crate) fn problem(
    mut ctx: RequestCtx,
    status: StatusCode,
    side: Side,
    detail: String,
) -> Response<ResponseBody> {
    ctx.failed(side, detail.clone());
    let body = serde_json::json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
        "detail": detail,
    });
    synthetic(
        ctx,
        status,
        "application/problem+json",
        Bytes::from(body.to_string()),
    )
}
