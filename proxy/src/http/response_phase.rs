//! The response phase: faults that forward first and then act on the response.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};

use super::body::{RequestBody, ResponseBody, Source};
use super::ctl::ConnCtl;
use super::ctx::RequestCtx;
use super::forward::{Forwarder, Route};
use super::upstream_phase::{bad_gateway, collect, send, stream};
use crate::event::Side;

/// `delay_response`: forward at once, hold the response `duration`, then stream it.
pub(crate) async fn delay_response(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    mut ctx: RequestCtx,
    duration: Duration,
) -> Response<ResponseBody> {
    match send(fwd, req, &mut ctx).await {
        Ok(resp) => {
            tokio::time::sleep(duration).await;
            stream(resp, ctx)
        }
        Err(message) => bad_gateway(ctx, message),
    }
}

/// Forwards and reads the whole response, so the upstream has finished the work; records its
/// status. Returns false when the upstream failed (recorded in `ctx`).
pub(crate) async fn forward_and_discard(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    ctx: &mut RequestCtx,
) -> bool {
    match send(fwd, req, ctx).await {
        Ok(resp) => match collect(resp.into_body()).await {
            Ok(_) => true,
            Err(err) => {
                ctx.failed(Side::Upstream, format!("upstream body failed: {err}"));
                false
            }
        },
        Err(message) => {
            ctx.failed(Side::Upstream, message);
            false
        }
    }
}

/// `drop_response`: forward, read the whole response, then close the downstream connection
/// without sending a byte of it.
pub(crate) async fn drop_response(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    mut ctx: RequestCtx,
    ctl: &ConnCtl,
) -> Response<ResponseBody> {
    forward_and_discard(fwd, req, &mut ctx).await;
    ctx.commit();
    ctl.abort(false);
    std::future::pending().await
}

/// `reset_mid_response`: forward, send the head and `after_bytes` body bytes, then reset.
pub(crate) async fn reset_mid_response(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    mut ctx: RequestCtx,
    ctl: &Arc<ConnCtl>,
    after_bytes: u64,
) -> Response<ResponseBody> {
    match send(fwd, req, &mut ctx).await {
        Ok(resp) => {
            let (parts, body) = Forwarder::response_parts(resp);
            ctx.event.client_status = Some(parts.status.as_u16());
            let body = ResponseBody::cut(Source::Stream(body), ctx, after_bytes, ctl.clone());
            Response::from_parts(parts, body)
        }
        Err(message) => bad_gateway(ctx, message),
    }
}
