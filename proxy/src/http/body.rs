//! The bodies the proxy sends: [`RequestBody`] upstream and [`ResponseBody`] downstream.
//!
//! Both stream hyper's `Incoming` through untouched, or carry bytes a fault had to buffer. The
//! response body also records delivery into the request's event, and can cut the response after
//! a number of bytes (for `reset_mid_response`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::conn_signals::ConnSignals;
use super::ctx::RequestCtx;
use crate::event::Side;

/// A body that is either streamed from the peer or fully buffered.
#[derive(Debug)]
pub(crate) enum Source {
    Stream(Incoming),
    Full(Option<Bytes>),
    /// Bytes read first (to find a key in them), then the rest of the stream.
    Prefixed(Option<Bytes>, Incoming),
}

impl Source {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self {
            Source::Stream(body) => Pin::new(body).poll_frame(cx),
            Source::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Source::Prefixed(read, body) => match read.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => Pin::new(body).poll_frame(cx),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Source::Stream(body) => body.is_end_stream(),
            // An empty body is over before its first poll (hyper may never poll a zero length).
            Source::Full(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            Source::Prefixed(read, body) => read.is_none() && body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Source::Stream(body) => body.size_hint(),
            Source::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Source::Full(None) => SizeHint::with_exact(0),
            Source::Prefixed(read, body) => {
                let read = read.as_ref().map_or(0, |b| b.len() as u64);
                let rest = body.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(rest.lower() + read);
                if let Some(upper) = rest.upper() {
                    hint.set_upper(upper + read);
                }
                hint
            }
        }
    }
}

/// The body of a request sent upstream.
#[derive(Debug)]
pub(crate) struct RequestBody(pub(crate) Source);

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        self.0.poll(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

/// Cuts a response after `limit` body bytes, then resets the downstream connection.
#[derive(Debug)]
struct Cut {
    limit: u64,
    signals: Arc<ConnSignals>,
    tripped: bool,
}

/// The body of a response sent downstream; records what the client got into the event.
#[derive(Debug)]
pub(crate) struct ResponseBody {
    source: Source,
    ctx: Option<RequestCtx>,
    sent: u64,
    cut: Option<Cut>,
}

impl ResponseBody {
    /// Streams or sends `source` completely.
    pub(crate) fn new(source: Source, mut ctx: RequestCtx) -> Self {
        ctx.answered();
        Self {
            source,
            ctx: Some(ctx),
            sent: 0,
            cut: None,
        }
    }

    /// Sends at most `limit` bytes of `source` (never all of it), then resets the connection.
    pub(crate) fn cut(
        source: Source,
        mut ctx: RequestCtx,
        limit: u64,
        signals: Arc<ConnSignals>,
    ) -> Self {
        ctx.answered();
        // Never deliver the whole body: with a known length keep its last byte back.
        let limit = match source.size_hint().exact() {
            Some(len) if len > 0 => limit.min(len - 1),
            _ => limit,
        };
        Self {
            source,
            ctx: Some(ctx),
            sent: 0,
            cut: Some(Cut {
                limit,
                signals,
                tripped: false,
            }),
        }
    }

    fn trip(&mut self) {
        let Some(cut) = &mut self.cut else { return };
        if cut.tripped {
            return;
        }
        cut.tripped = true;
        if let Some(ctx) = &mut self.ctx {
            ctx.commit();
        }
        cut.signals.reset_after_flush();
        // Should hyper not flush again (nothing left to write), reset anyway shortly.
        let signals = cut.signals.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            signals.abort(true);
        });
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        if let Some(cut) = &this.cut {
            if cut.tripped || this.sent >= cut.limit {
                this.trip();
                // The connection is about to be reset; nothing more will be sent.
                return Poll::Pending;
            }
        }
        match this.source.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                if this.cut.is_some() {
                    this.trip();
                    return Poll::Pending;
                }
                if let Some(ctx) = &mut this.ctx {
                    ctx.complete();
                }
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                let frame = match frame.into_data() {
                    Ok(mut data) => {
                        if let Some(cut) = &this.cut {
                            let room = (cut.limit - this.sent) as usize;
                            data.truncate(room);
                        }
                        this.sent += data.len() as u64;
                        if let Some(ctx) = &mut this.ctx {
                            ctx.event.client_bytes = this.sent;
                        }
                        Frame::data(data)
                    }
                    Err(trailers) => trailers,
                };
                if this.cut.is_none() && this.source.is_end_stream() {
                    if let Some(ctx) = &mut this.ctx {
                        ctx.complete();
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => {
                if let Some(ctx) = &mut this.ctx {
                    ctx.failed(Side::Upstream, format!("upstream body failed: {err}"));
                    ctx.commit();
                }
                Poll::Ready(Some(Err(err)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.cut.is_none() && self.source.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.source.size_hint()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        // hyper may drop a body it knows is finished without polling its end.
        if self.cut.is_none() && self.source.is_end_stream() {
            if let Some(ctx) = &mut self.ctx {
                ctx.complete();
            }
        }
    }
}
