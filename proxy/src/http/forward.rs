//! The upstream side: a pooled HTTP/1.1 client, and the header rewriting a transparent reverse
//! proxy does (hop-by-hop headers and the `x-idemspec-*` control headers go; everything else,
//! `Host` included, reaches the upstream as the client sent it).

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Request, Response, StatusCode, Uri};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use idemspec_scenarios::rules::{check_upstream, Mode};

use super::body::{RequestBody, ResponseBody, Source};
use super::ctx::RequestCtx;
use crate::error::ProxyError;
use crate::event::Side;

/// Sends requests to the upstream over pooled keep-alive connections.
#[derive(Debug)]
pub(crate) struct Forwarder {
    client: Client<HttpConnector, RequestBody>,
    authority: Authority,
    base: String,
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
    /// A client for the base URL `http://host:port`.
    pub(crate) fn new(upstream: &str) -> Result<Self, ProxyError> {
        check_upstream(Mode::Http, upstream).map_err(ProxyError::Upstream)?;
        let uri: Uri = upstream
            .parse()
            .map_err(|e| ProxyError::Upstream(format!("`{upstream}`: {e}")))?;
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| ProxyError::Upstream(format!("`{upstream}` has no host")))?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .build(connector);
        Ok(Self {
            client,
            authority,
            base: upstream.trim_end_matches('/').to_owned(),
        })
    }

    /// Points the request at the upstream and removes what must not be forwarded.
    pub(crate) fn prepare(&self, parts: &mut http::request::Parts) {
        let pq = parts
            .uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        let mut uri = http::uri::Parts::default();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(self.authority.clone());
        uri.path_and_query = Some(pq);
        parts.uri = Uri::from_parts(uri).expect("scheme, authority and path make a valid URI");
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
    }

    /// Sends one request upstream.
    pub(crate) async fn send(
        &self,
        req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        self.client.request(req).await.map_err(|err| UpstreamError {
            sent: !err.is_connect(),
            message: format!("{}: {}", self.base, error_chain(&err)),
        })
    }

    /// The response head to send downstream, with hop-by-hop headers removed.
    pub(crate) fn response_parts(
        &self,
        resp: Response<Incoming>,
    ) -> (http::response::Parts, Incoming) {
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
