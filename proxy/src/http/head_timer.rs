//! The header-read timeout (`ProxyConfig::header_read_timeout`): a request head must arrive
//! whole within it, or the connection is cut (408 with a problem body when part of a head came,
//! a plain close when nothing did), so a client that sends one header byte a second cannot
//! hold a connection, and its descriptor, for as long as it likes.
//!
//! What is timed: from the connection's accept to its first head, and from the first byte of
//! each later head to its end. What is not: the request body, the wait for the upstream, the
//! response, and an idle keep-alive connection between requests. Closing an idle connection
//! would race the client's next request on it (the client's pool decides when to drop it), a
//! failure the proxy would inject without meaning to.
//!
//! Cost: no timer per request, and none per connection. Each connection's place in reading
//! heads is one atomic word ([`HeadClock`], in its `ConnSignals`) that the socket's reads, the
//! request's context and its response body update with plain loads and stores. One task per
//! proxy ([`sweep`]) wakes every [`sweep_period`], reads every live connection's word, and
//! raises `SLOW_HEAD` in the `ConnSignals` of those overdue; the connection's task reads its flags
//! on every wake anyway. So a slow head is cut between the timeout and a period later. Measured
//! against the alternatives (callgrind, the pass-through bench): a timer polled by the
//! connection's task re-registers its waker on every wake (~650 instructions per request); a
//! timer per connection keeps the runtime's timer wheel busy on every park (~110); hyper's own
//! `header_read_timeout` starts a timer per request (and cuts idle keep-alive connections).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::service::Service;

use super::conn_signals::ConnSignals;
use super::head_clock::Expiry;
#[cfg(test)]
use super::head_clock::HeadClock;
use crate::http::Shared;

/// How often [`sweep`] looks: an eighth of the timeout, between 10 ms and 1 s.
pub(crate) fn sweep_period(timeout: Duration) -> Duration {
    (timeout / 8).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// Until the proxy shuts down, tells every live connection (the proxy's and the control API's)
/// whose request head is overdue, every [`sweep_period`].
pub(crate) async fn sweep(shared: Arc<Shared>, timeout: Duration) {
    let mut ticks = tokio::time::interval(sweep_period(timeout));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => shared.http_conns.each(|signals| {
                if let Expiry::Expired { .. } = signals.head.check(timeout) {
                    signals.slow_head();
                }
            }),
            () = shared.shutting_down() => return,
        }
    }
}

/// A service whose requests tell their connection's [`HeadClock`] when they begin and end: the
/// call marks it busy, the response body's drop (hyper is done with it) idle. For the control
/// API; the proxy's own requests do it through their `RequestCtx`, which saves moving their
/// (large) futures into a wrapper.
#[derive(Debug, Clone)]
pub(crate) struct Timed<S> {
    inner: S,
    conn: Arc<ConnSignals>,
}

impl<S> Timed<S> {
    /// `inner`, reporting to `conn`'s clock.
    pub(crate) fn new(inner: S, conn: Arc<ConnSignals>) -> Self {
        Self { inner, conn }
    }
}

impl<S, B> Service<Request<Incoming>> for Timed<S>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
{
    type Response = Response<TimedBody<B>>;
    type Error = S::Error;
    type Future = TimedFuture<S::Future>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.conn.head.busy();
        TimedFuture {
            inner: self.inner.call(req),
            conn: Some(self.conn.clone()),
        }
    }
}

pin_project_lite::pin_project! {
    /// The service's future; its response's body reports the end of the exchange.
    pub(crate) struct TimedFuture<F> {
        #[pin]
        inner: F,
        conn: Option<Arc<ConnSignals>>,
    }
}

impl<F, B, E> Future for TimedFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<TimedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let resp = std::task::ready!(this.inner.poll(cx))?;
        let conn = this.conn.take();
        Poll::Ready(Ok(resp.map(|inner| TimedBody { inner, conn })))
    }
}

/// A response body that marks its connection idle when hyper drops it.
#[derive(Debug)]
pub(crate) struct TimedBody<B> {
    inner: B,
    conn: Option<Arc<ConnSignals>>,
}

impl<B: Body + Unpin> Body for TimedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for TimedBody<B> {
    fn drop(&mut self) {
        if let Some(conn) = &self.conn {
            conn.head.idle();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_head_in_progress_expires() {
        let clock = HeadClock::new();
        let timeout = Duration::ZERO;
        assert_eq!(
            clock.check(timeout),
            Expiry::Expired { started: false },
            "the first head is timed from the accept"
        );
        clock.read();
        assert_eq!(clock.check(timeout), Expiry::Expired { started: true });
        clock.busy();
        assert_eq!(clock.check(timeout), Expiry::InTime, "busy");
        clock.idle();
        assert_eq!(clock.check(timeout), Expiry::InTime, "idle");
        clock.read();
        assert_eq!(
            clock.check(timeout),
            Expiry::Expired { started: true },
            "a later head is timed from its first byte"
        );
        assert_eq!(clock.check(Duration::from_secs(3600)), Expiry::InTime);
        clock.busy();
        clock.read();
        assert_eq!(
            clock.check(timeout),
            Expiry::InTime,
            "busy, bytes pipelined"
        );
        clock.idle();
        assert_eq!(
            clock.check(timeout),
            Expiry::Expired { started: true },
            "bytes that came during the exchange are timed from its end"
        );
    }

    #[test]
    fn the_sweep_looks_often_enough_and_not_too_often() {
        assert_eq!(
            sweep_period(Duration::from_secs(10)),
            Duration::from_millis(1250).min(Duration::from_secs(1))
        );
        assert_eq!(
            sweep_period(Duration::from_millis(800)),
            Duration::from_millis(100)
        );
        assert_eq!(
            sweep_period(Duration::from_millis(20)),
            Duration::from_millis(10)
        );
    }
}
