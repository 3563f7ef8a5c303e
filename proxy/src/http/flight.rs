//! What a fault works with: one request on its way through the proxy ([`Flight`]) and, once
//! it has been forwarded or set aside, the way back to its client ([`Reply`]).
//!
//! A [`Flight`] owns the request (head rewritten for the upstream, body not yet read), its
//! [`RequestCtx`] and borrows the way upstream. Forwarding consumes the request, so a fault can
//! forward it once (`duplicate` buffers it and sends copies); everything after that is the
//! [`Reply`]'s: send the upstream's response (whole, late, or cut), a problem response, or none
//! (abort the downstream connection). Every method records what it did in the request's event.

use std::time::Instant;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;

use super::body::{RequestBody, ResponseBody, Source};
use super::ctx::RequestCtx;
use super::headers::downstream_head;
use super::link::UpstreamLink;
use super::sink::{self, Uncollected};
use super::synthetic;
use super::upstream::{Forwarder, NoResponse};
use crate::event::{ProxyEvent, Side};
use crate::http::Shared;

/// One request on its way through the proxy, before it is forwarded.
#[derive(Debug)]
pub(super) struct Flight<'a> {
    req: Request<RequestBody>,
    reply: Reply<'a>,
}

/// The way back to a request's client, and the request's way upstream for buffered copies.
#[derive(Debug)]
pub(super) struct Reply<'a> {
    ctx: RequestCtx,
    fwd: &'a Forwarder,
    link: &'a UpstreamLink,
    shared: &'a Shared,
}

/// A request head and its whole body, so that it can be sent more than once.
#[derive(Debug)]
pub(super) struct Buffered {
    parts: http::request::Parts,
    body: Bytes,
}

impl Buffered {
    /// A copy of the request to send upstream.
    pub(super) fn copy(&self) -> Request<RequestBody> {
        let mut req = Request::new(RequestBody(Source::Full(Some(self.body.clone()))));
        *req.method_mut() = self.parts.method.clone();
        *req.uri_mut() = self.parts.uri.clone();
        *req.version_mut() = self.parts.version;
        *req.headers_mut() = self.parts.headers.clone();
        // The identity an upstream connection shows (`originate::Identity`) goes with each copy.
        *req.extensions_mut() = self.parts.extensions.clone();
        req
    }
}

/// The most request body `duplicate` holds to send twice, and the most of the first copy's
/// answer it holds while the second is sent (sequential mode): 8 MiB, the bound the runner's own
/// client reads an answer to. A longer request is answered 413 without being forwarded.
pub(super) const BUFFER_LIMIT: u64 = 8 * 1024 * 1024;

/// Why [`Flight::buffer`] holds no copy of the request.
#[derive(Debug)]
pub(super) enum Unbuffered {
    /// The body from the client failed.
    Broken(NoResponse),
    /// The body is longer than [`BUFFER_LIMIT`]: this many bytes had come when reading stopped.
    TooLong(u64),
}

impl<'a> Flight<'a> {
    /// `req` (already prepared for the upstream, see [`Forwarder::prepare`]) with its context,
    /// arriving on a downstream connection whose upstream link is `link`.
    pub(super) fn new(
        req: Request<RequestBody>,
        ctx: RequestCtx,
        fwd: &'a Forwarder,
        link: &'a UpstreamLink,
        shared: &'a Shared,
    ) -> Self {
        Self {
            req,
            reply: Reply {
                ctx,
                fwd,
                link,
                shared,
            },
        }
    }

    /// Sends the request upstream (its body streamed) and returns the response head, or why
    /// there is none; the send and the status are in the event.
    pub(super) async fn forward(self) -> (Reply<'a>, Result<Response<Incoming>, NoResponse>) {
        let Flight { req, mut reply } = self;
        let ctx = &mut reply.ctx;
        let asked = Instant::now();
        let answer = reply.fwd.send(reply.link, ctx.receipt(), req).await;
        ctx.waited(asked.elapsed());
        let answer = match answer {
            Ok(resp) => {
                ctx.event.upstream_sends += 1;
                ctx.event
                    .upstream_status
                    .get_or_insert(resp.status().as_u16());
                Ok(resp)
            }
            Err(err) => {
                ctx.event.upstream_sends += u8::from(err.sent);
                Err(err)
            }
        };
        (reply, answer)
    }

    /// Pass-through: forwards the request and streams the response back (without one, see
    /// [`Reply::no_response`]).
    pub(super) async fn pass(self) -> Response<ResponseBody> {
        match self.forward().await {
            (reply, Ok(resp)) => reply.send(resp),
            (reply, Err(err)) => reply.no_response(err),
        }
    }

    /// Reads the request body to the end without forwarding it, so that hyper notices a client
    /// that leaves.
    pub(super) async fn drain(self) -> Reply<'a> {
        if let Source::Stream(body) = self.req.into_body().0 {
            let _ = sink::discard(body).await;
        }
        self.reply
    }

    /// Reads the whole request body (to send copies) when it has at most [`BUFFER_LIMIT`] bytes,
    /// or says why it holds none (the client's body failed, or is longer).
    pub(super) async fn buffer(self) -> (Reply<'a>, Result<Buffered, Unbuffered>) {
        let (parts, body) = self.req.into_parts();
        let buffered = match sink::collect_within(body, BUFFER_LIMIT).await {
            Ok(body) => Ok(Buffered { parts, body }),
            Err(Uncollected::Failed(err)) => Err(Unbuffered::Broken(NoResponse::body_unread(&err))),
            Err(Uncollected::TooLong(read)) => Err(Unbuffered::TooLong(read)),
        };
        (self.reply, buffered)
    }

    /// Answers with a response of the proxy's own; the request is not forwarded.
    pub(super) fn synthetic(
        self,
        status: StatusCode,
        content_type: &str,
        body: Bytes,
    ) -> Response<ResponseBody> {
        synthetic::response(self.reply.ctx, status, content_type, body)
    }

    /// Ends the downstream connection (FIN, or RST with `reset`) without forwarding and without a
    /// byte of response. Never resolves: the connection's end drops it.
    pub(super) async fn abort(self, reset: bool) -> Response<ResponseBody> {
        // The unread request stays with the connection until it goes.
        let Flight {
            req: _unread,
            reply,
        } = self;
        reply.abort(reset).await
    }
}

impl Reply<'_> {
    /// The request's event, for what a fault records beyond what these methods do.
    pub(super) fn event(&mut self) -> &mut ProxyEvent {
        &mut self.ctx.event
    }

    /// Streams the upstream's response to the client.
    pub(super) fn send(mut self, resp: Response<Incoming>) -> Response<ResponseBody> {
        let (parts, body) = downstream_head(resp);
        self.ctx.event.client_status = Some(parts.status.as_u16());
        Response::from_parts(parts, ResponseBody::new(Source::Stream(body), self.ctx))
    }

    /// Sends the upstream's response head and at most `after_bytes` of its body (never all of
    /// it), then resets the downstream connection.
    pub(super) fn send_cut(
        mut self,
        resp: Response<Incoming>,
        after_bytes: u64,
    ) -> Response<ResponseBody> {
        let (parts, body) = downstream_head(resp);
        self.ctx.event.client_status = Some(parts.status.as_u16());
        let conn = self.ctx.conn().clone();
        let body = ResponseBody::cut(Source::Stream(body), self.ctx, after_bytes, conn);
        Response::from_parts(parts, body)
    }

    /// Sends a response read whole before.
    pub(super) fn send_buffered(
        mut self,
        parts: http::response::Parts,
        body: Bytes,
    ) -> Response<ResponseBody> {
        self.ctx.event.client_status = Some(parts.status.as_u16());
        Response::from_parts(parts, ResponseBody::new(Source::Full(Some(body)), self.ctx))
    }

    /// Answers with a problem response of the proxy's own (`status`, `detail`), recording the
    /// failure on `side`.
    pub(super) fn problem(
        self,
        status: StatusCode,
        side: Side,
        detail: String,
    ) -> Response<ResponseBody> {
        synthetic::problem(self.ctx, status, side, detail)
    }

    /// Answers a request that got no upstream response: 502 when the upstream failed, 400 when
    /// the request's body from the client did (and the event says whether the client left).
    pub(super) fn no_response(self, err: NoResponse) -> Response<ResponseBody> {
        match err.side {
            Side::Upstream => synthetic::bad_gateway(self.ctx, err.message),
            Side::Downstream => synthetic::bad_request(self.ctx, err),
        }
    }

    /// Reads the upstream's whole response a frame at a time and discards it, so that the
    /// upstream has finished the work; the bytes read and a failure (no response, or a broken
    /// body) go into the event.
    pub(super) async fn discard(&mut self, answer: Result<Response<Incoming>, NoResponse>) {
        let (side, failure) = match answer {
            Ok(resp) => match sink::discard(resp.into_body()).await {
                Ok(read) => {
                    self.ctx.event.discarded_bytes += read;
                    return;
                }
                Err((err, read)) => {
                    self.ctx.event.discarded_bytes += read;
                    (Side::Upstream, format!("upstream body failed: {err}"))
                }
            },
            Err(err) => {
                self.ctx.event.client_disconnected |= err.client_left;
                (err.side, err.message)
            }
        };
        self.ctx.failed(side, failure);
    }

    /// Sends one buffered copy of the request upstream and returns its response, body unread.
    /// Not recorded in the event: the caller counts the copies, and tells [`Reply::waited`] how
    /// long they took (copies may overlap).
    pub(super) async fn exchange(
        &self,
        req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, NoResponse> {
        self.fwd.send(self.link, self.ctx.receipt(), req).await
    }

    /// Adds `wait` to the time the request spent waiting for the upstream (not the proxy's).
    pub(super) fn waited(&mut self, wait: std::time::Duration) {
        self.ctx.waited(wait);
    }

    /// Resolves when the proxy shuts down.
    pub(super) async fn shutting_down(&self) {
        self.shared.shutting_down().await;
    }

    /// Records the event and ends the downstream connection (FIN, or RST with `reset`) without
    /// another byte. Never resolves: the connection's end drops it.
    pub(super) async fn abort(mut self, reset: bool) -> Response<ResponseBody> {
        self.ctx.commit();
        self.ctx.conn().abort(reset);
        std::future::pending().await
    }
}
