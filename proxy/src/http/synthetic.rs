//! The responses the proxy makes itself instead of forwarding one: a `respond` fault's, and the
//! RFC 9457 problem responses for its own failures (502 when the upstream failed, 400 when the
//! request could not be read). The control API's errors use the same problem body.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

use super::body::{ResponseBody, Source};
use super::ctx::RequestCtx;
use super::upstream::NoResponse;
use crate::event::Side;

/// The media type of an RFC 9457 problem body.
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem document: `type` `about:blank`, with `title`, `status` and `detail`; a
/// caller may add extension members (the control API adds where a rule is wrong).
pub(crate) fn problem_document(
    status: StatusCode,
    title: &str,
    detail: &str,
) -> serde_json::Map<String, serde_json::Value> {
    let mut doc = serde_json::Map::new();
    doc.insert("type".into(), "about:blank".into());
    doc.insert("title".into(), title.into());
    doc.insert("status".into(), status.as_u16().into());
    doc.insert("detail".into(), detail.into());
    doc
}

/// A response with `status`, `content_type` and `body`; recorded as the client's status.
pub(super) fn response(
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
        HeaderValue::from_str(content_type)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    resp
}

/// The answer to a request whose body from the client failed (`err`, downstream): 400, and the
/// event says whether the client left.
pub(super) fn bad_request(mut ctx: RequestCtx, err: NoResponse) -> Response<ResponseBody> {
    ctx.event.client_disconnected |= err.client_left;
    problem(ctx, StatusCode::BAD_REQUEST, Side::Downstream, err.message)
}

/// A problem response for a failure of the proxy's own on `side`, recorded in the event.
pub(super) fn problem(
    mut ctx: RequestCtx,
    status: StatusCode,
    side: Side,
    detail: String,
) -> Response<ResponseBody> {
    let body = problem_document(
        status,
        status.canonical_reason().unwrap_or("Error"),
        &detail,
    );
    ctx.failed(side, detail);
    let body = serde_json::Value::Object(body).to_string();
    response(ctx, status, PROBLEM_JSON, Bytes::from(body))
}

/// The detail of a 502: the upstream could not be reached or failed before answering;
/// `message`: the upstream's base URL and the error, `http://host:port: what failed`.
pub(super) fn no_response_detail(message: &str) -> String {
    format!("idemspec-proxy got no response from the upstream {message}")
}

/// The `502` for a request that got no upstream answer the proxy passes on (`err`, on the
/// upstream's side): none came, or one came with a head over the proxy's limits (recorded in the
/// event as `upstream_head_refused`, and said in the detail).
pub(super) fn bad_gateway(mut ctx: RequestCtx, err: NoResponse) -> Response<ResponseBody> {
    let detail = match err.head_refused {
        Some(limit) => {
            ctx.event.upstream_head_refused = Some(limit.limit());
            err.message
        }
        None => no_response_detail(&err.message),
    };
    problem(ctx, StatusCode::BAD_GATEWAY, Side::Upstream, detail)
}
