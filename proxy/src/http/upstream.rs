//! The upstream ([`Forwarder`]): where requests go, how a request is made fit for it, and how one
//! is sent over a downstream connection's [`UpstreamLink`].

use std::sync::Arc;

use http::header::{self, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use idemspec_scenarios::rules::{check_upstream, Mode};
use tokio::net::TcpStream;

use super::body::RequestBody;
use super::detach::Detached;
use super::head_limit::{HeadRefused, MAX_RESPONSE_HEADERS, MAX_RESPONSE_HEAD_BYTES};
use super::headers;
use super::link::UpstreamLink;
use super::originate::{Identity, Originate};
use super::receipt::Receipt;
use super::stream::UpStream;
use crate::config::UpstreamTls;
use crate::error::ProxyError;
use crate::event::Side;

/// How long upstream exchanges may run on after their downstream connection closed.
pub(super) const UPSTREAM_AFTERLIFE: std::time::Duration = std::time::Duration::from_secs(120);

/// Where requests go: the upstream's address and the `Host` to send when the client sent none,
/// and how TLS is spoken to it (an `https://` upstream).
#[derive(Debug)]
pub(crate) struct Forwarder {
    /// `host:port` to connect to: the authority, with the scheme's port if it names none.
    address: String,
    /// TLS to the upstream (`https://`); `None`: plain HTTP.
    tls: Option<Originate>,
    host: HeaderValue,
    /// The upstream URL's path without its trailing `/` (often empty), put before every path.
    prefix: String,
    base: String,
}

/// Why a request got no upstream response: the upstream failed, or the request's own body from
/// the client did (a broken chunk, a body shorter than its `Content-Length`), which is the
/// downstream side's fault.
#[derive(Debug)]
pub(super) struct NoResponse {
    /// Whether the request may have reached the upstream (false: the connection failed).
    pub(super) sent: bool,
    /// Which side failed.
    pub(super) side: Side,
    /// The client closed its side before its body was whole (downstream failures only).
    pub(super) client_left: bool,
    /// The upstream answered with a head over a limit of [`super::head_limit`]: which one.
    pub(super) head_refused: Option<HeadRefused>,
    pub(super) message: String,
}

impl NoResponse {
    /// The upstream's response body failed (`err`) after its head came.
    pub(super) fn body_failed(err: &hyper::Error) -> Self {
        Self {
            sent: true,
            side: Side::Upstream,
            client_left: false,
            head_refused: None,
            message: format!("response body failed: {err}"),
        }
    }

    /// The request's body from the client failed (`err`): nothing was sent upstream.
    pub(super) fn body_unread(err: &hyper::Error) -> Self {
        Self {
            sent: false,
            side: Side::Downstream,
            client_left: client_left(err),
            head_refused: None,
            message: format!("the request body from the client could not be read: {err}"),
        }
    }
}

/// Whether a body error from the downstream connection says the client closed its side early.
pub(super) fn client_left(err: &hyper::Error) -> bool {
    err.is_incomplete_message()
        || std::iter::successors(Some(err as &(dyn std::error::Error + 'static)), |e| {
            e.source()
        })
        .any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
        })
}

/// Renders an error with its sources, `outer: inner: innermost`.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
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
    /// A forwarder to the base URL `http(s)://host[:port][/prefix]`; an `https://` one speaks TLS
    /// as `tls` says (the platform's roots and no client certificate without it).
    pub(crate) fn new(upstream: &str, tls: Option<&UpstreamTls>) -> Result<Self, ProxyError> {
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
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let address = format!("{}:{port}", authority.host());
        let tls = https
            .then(|| Originate::new(authority.host(), tls.unwrap_or(&UpstreamTls::default())))
            .transpose()?;
        Ok(Self {
            address,
            tls,
            host,
            prefix: uri.path().trim_end_matches('/').to_owned(),
            base: upstream.trim_end_matches('/').to_owned(),
        })
    }

    /// The upstream's `host:port`, to connect to.
    pub(super) fn authority(&self) -> &str {
        &self.address
    }

    /// Whether the upstream is reached over TLS (the fast path, plain TCP only, stands aside).
    pub(super) fn originates_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The upstream URL's path without its trailing `/`, put before every request-target.
    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The upstream's base URL, as errors name it.
    pub(super) fn base(&self) -> &str {
        &self.base
    }

    /// Makes the request an origin-form HTTP/1.1 request for the upstream and removes what must
    /// not be forwarded. A missing `Host` (HTTP/1.0 clients) becomes the upstream's authority.
    pub(super) fn prepare(&self, parts: &mut http::request::Parts) {
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
        if let Some(tls) = &self.tls {
            let identity = tls.identity(&parts.headers);
            if identity != Identity::default() {
                parts.extensions.insert(identity);
            }
        }
        headers::strip_hop_by_hop(&mut parts.headers);
        headers::strip_control(&mut parts.headers);
        if !parts.headers.contains_key(header::HOST) {
            parts.headers.insert(header::HOST, self.host.clone());
        }
    }

    /// The upstream failed: a TLS failure in words that say what to do, anything else as its
    /// error chain.
    fn failed(&self, sent: bool, err: &(dyn std::error::Error + 'static)) -> NoResponse {
        let cause = self
            .tls
            .as_ref()
            .and_then(|tls| idemspec_tls::explain_peer(err, "the upstream", tls.advice()))
            .unwrap_or_else(|| error_chain(err));
        NoResponse {
            sent,
            side: Side::Upstream,
            client_left: false,
            head_refused: None,
            message: format!("{}: {cause}", self.base),
        }
    }

    /// The upstream answered with a head over `limit`: the request was sent.
    pub(super) fn refused(&self, limit: HeadRefused) -> NoResponse {
        NoResponse {
            sent: true,
            side: Side::Upstream,
            client_left: false,
            head_refused: Some(limit),
            message: limit.detail(&self.base),
        }
    }

    /// A failed send: the upstream's fault, unless hyper's client says the request body it was
    /// streaming failed (a user error whose cause is the downstream connection's body error).
    fn send_failed(&self, sent: bool, err: &hyper::Error) -> NoResponse {
        let body = err
            .is_user()
            .then(|| std::error::Error::source(err))
            .flatten()
            .and_then(|cause| cause.downcast_ref::<hyper::Error>());
        match body {
            Some(cause) => NoResponse {
                sent,
                side: Side::Downstream,
                client_left: client_left(cause),
                head_refused: None,
                message: format!(
                    "the request body from the client is malformed or incomplete: {}",
                    error_chain(cause)
                ),
            },
            None => match HeadRefused::of_hyper(err) {
                Some(limit) => self.refused(limit),
                None => self.failed(sent, err),
            },
        }
    }

    /// Opens a new upstream connection (TLS showing `identity`'s certificate for an `https://`
    /// upstream) and hands its I/O half to the link's task.
    async fn connect(
        &self,
        link: &UpstreamLink,
        identity: Identity,
    ) -> Result<SendRequest<RequestBody>, NoResponse> {
        let tcp = TcpStream::connect(self.address.as_str())
            .await
            .map_err(|e| self.failed(false, &e))?;
        let _ = tcp.set_nodelay(true);
        let stream = match &self.tls {
            None => UpStream::Plain(tcp),
            Some(tls) => UpStream::Tls(Box::new(
                tls.connect(tcp, identity)
                    .await
                    .map_err(|e| self.failed(false, &e))?,
            )),
        };
        let (sender, conn) = http1::Builder::new()
            .writev(false)
            .max_headers(MAX_RESPONSE_HEADERS)
            .max_buf_size(MAX_RESPONSE_HEAD_BYTES)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| self.failed(false, &e))?;
        link.adopt(conn);
        Ok(sender)
    }

    /// Sends one request upstream over the link's connection (or a new one). A request the
    /// upstream provably never received (a stale keep-alive connection) is retried once.
    pub(super) async fn send(
        &self,
        link: &UpstreamLink,
        receipt: &Arc<Receipt>,
        mut req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, NoResponse> {
        let identity = Identity::of(&req);
        for attempt in 0..2 {
            let mut sender = match link.take(identity) {
                Some(sender) => sender,
                None => self.connect(link, identity).await?,
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
                    link.put(identity, sender);
                    return Ok(resp);
                }
                Err(mut err) => {
                    let unsent = err.take_message();
                    if unsent.is_some() {
                        receipt.unsent();
                    }
                    match unsent {
                        Some(unsent) if attempt == 0 => req = unsent,
                        unsent => return Err(self.send_failed(unsent.is_none(), err.error())),
                    }
                }
            }
        }
        unreachable!("the second attempt returns")
    }
}
