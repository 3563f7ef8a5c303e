//! The upstream phase: forwarding a request (streamed), or twice (`duplicate`, buffered).

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use idemspec_scenarios::rules::DuplicateMode;

use super::body::{RequestBody, ResponseBody, Source};
use super::ctx::RequestCtx;
use super::forward::{problem, Forwarder, Route};
use crate::event::Side;

/// Sends `req` upstream, recording the send and the status (or the error) in `ctx`.
pub(crate) async fn send(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    ctx: &mut RequestCtx,
) -> Result<Response<Incoming>, String> {
    match fwd.send(req).await {
        Ok(resp) => {
            ctx.event.upstream_sends += 1;
            ctx.event
                .upstream_status
                .get_or_insert(resp.status().as_u16());
            Ok(resp)
        }
        Err(err) => {
            ctx.event.upstream_sends += u8::from(err.sent);
            Err(err.message)
        }
    }
}

/// Streams an upstream response downstream.
pub(crate) fn stream(resp: Response<Incoming>, mut ctx: RequestCtx) -> Response<ResponseBody> {
    let (parts, body) = Forwarder::response_parts(resp);
    ctx.event.client_status = Some(parts.status.as_u16());
    Response::from_parts(parts, ResponseBody::new(Source::Stream(body), ctx))
}

/// 502 with a problem body: the upstream could not be reached or failed before answering.
pub(crate) fn bad_gateway(ctx: RequestCtx, message: String) -> Response<ResponseBody> {
    problem(
        ctx,
        StatusCode::BAD_GATEWAY,
        Side::Upstream,
        format!("idemspec-proxy got no response from the upstream {message}"),
    )
}

/// Pass-through: forward and stream the response back.
pub(crate) async fn forward(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    mut ctx: RequestCtx,
) -> Response<ResponseBody> {
    match send(fwd, req, &mut ctx).await {
        Ok(resp) => stream(resp, ctx),
        Err(message) => bad_gateway(ctx, message),
    }
}

/// Reads a whole body into memory.
pub(crate) async fn collect(body: Incoming) -> Result<Bytes, hyper::Error> {
    Ok(body.collect().await?.to_bytes())
}

fn copy_request(parts: &http::request::Parts, body: &Bytes) -> Request<RequestBody> {
    let mut req = Request::new(RequestBody(Source::Full(Some(body.clone()))));
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers.clone();
    req
}

/// Sends one buffered copy and reads its whole response.
async fn send_buffered(
    fwd: Route<'_>,
    req: Request<RequestBody>,
) -> Result<(http::response::Parts, Bytes), super::forward::UpstreamError> {
    let resp = fwd.send(req).await?;
    let (parts, body) = Forwarder::response_parts(resp);
    let body = collect(body)
        .await
        .map_err(|e| super::forward::UpstreamError {
            sent: true,
            message: format!("response body failed: {e}"),
        })?;
    Ok((parts, body))
}

/// `duplicate`: buffer the request, send it twice, answer with the first response.
pub(crate) async fn duplicate(
    fwd: Route<'_>,
    req: Request<RequestBody>,
    mut ctx: RequestCtx,
    mode: DuplicateMode,
) -> Response<ResponseBody> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            return problem(
                ctx,
                StatusCode::BAD_REQUEST,
                Side::Downstream,
                format!("the request body could not be read: {err}"),
            )
        }
    };
    let (first, second) = match mode {
        DuplicateMode::Sequential => {
            let first = send_buffered(fwd, copy_request(&parts, &body)).await;
            let second = send_buffered(fwd, copy_request(&parts, &body)).await;
            (first, second)
        }
        DuplicateMode::Concurrent => {
            tokio::join!(
                send_buffered(fwd, copy_request(&parts, &body)),
                send_buffered(fwd, copy_request(&parts, &body))
            )
        }
    };
    for outcome in [&first, &second] {
        ctx.event.upstream_sends += match outcome {
            Ok(_) => 1,
            Err(err) => u8::from(err.sent),
        };
    }
    if let Err(err) = &second {
        tracing::debug!(error = %err.message, "second copy of a duplicated request failed");
    }
    match first {
        Ok((parts, body)) => {
            ctx.event.upstream_status = Some(parts.status.as_u16());
            ctx.event.client_status = Some(parts.status.as_u16());
            Response::from_parts(parts, ResponseBody::new(Source::Full(Some(body)), ctx))
        }
        Err(err) => bad_gateway(ctx, err.message),
    }
}
