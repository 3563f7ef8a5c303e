//! The request phase: faults that act before (or instead of) forwarding.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use idemspec_scenarios::rules::Status;

use super::body::{RequestBody, ResponseBody, Source};
use super::ctl::ConnCtl;
use super::ctx::RequestCtx;
use super::forward::synthetic;
use crate::server::Shared;

/// `refuse`: close (or reset) the downstream connection without forwarding.
pub(crate) async fn refuse(
    mut ctx: RequestCtx,
    ctl: &ConnCtl,
    reset: bool,
) -> Response<ResponseBody> {
    ctx.commit();
    ctl.abort(reset);
    std::future::pending().await
}

/// `respond`: a synthetic response, not forwarded.
pub(crate) fn respond(
    ctx: RequestCtx,
    status: Status,
    body: &str,
    content_type: Option<&str>,
) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(status.get()).expect("Status is validated to 100..=599");
    synthetic(
        ctx,
        status,
        content_type.unwrap_or("text/plain; charset=utf-8"),
        Bytes::copy_from_slice(body.as_bytes()),
    )
}

/// Reads and discards a request body, so hyper can notice the client leaving.
pub(crate) async fn drain(body: RequestBody) {
    if let Source::Stream(body) = body.0 {
        let _ = super::upstream_phase::collect(body).await;
    }
}

/// `hang`: hold the connection without answering until the client gives up (the service future
/// is then dropped and the event says so) or the proxy shuts down.
pub(crate) async fn hang(
    mut ctx: RequestCtx,
    ctl: &Arc<ConnCtl>,
    shared: &Shared,
) -> Response<ResponseBody> {
    shared.shutting_down().await;
    ctx.commit();
    ctl.abort(false);
    std::future::pending().await
}
