//! Upstream exchanges outlive the downstream client, as in haproxy without `abortonclose`.
//!
//! When a client gives up (times out, disconnects) while its request is at the upstream, hyper
//! drops the request's future. Dropping the upstream response future would make hyper close the
//! upstream connection, and an upstream built on hyper or axum would then cancel its handler
//! half-way: a crash, not the "server keeps working" a client timeout is about. [`Detached`]
//! instead hands the rest of the exchange to a task of its own, which reads the response to the
//! end a frame at a time, keeping none of it; the downstream connection's task hands over its upstream connections likewise.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::Incoming;
use hyper::Response;

use super::receipt::Receipt;

type Exchange<E> = Pin<Box<dyn Future<Output = Result<Response<Incoming>, E>> + Send>>;

/// An upstream response future that, if dropped unfinished, finishes in the background and
/// reports the upstream's status to the request's [`Receipt`].
pub(crate) struct Detached<E: Send + 'static> {
    exchange: Option<Exchange<E>>,
    receipt: Arc<Receipt>,
}

impl<E: Send + 'static> Detached<E> {
    pub(crate) fn new(
        exchange: impl Future<Output = Result<Response<Incoming>, E>> + Send + 'static,
        receipt: Arc<Receipt>,
    ) -> Self {
        Self {
            exchange: Some(Box::pin(exchange)),
            receipt,
        }
    }
}

impl<E: Send + 'static> Future for Detached<E> {
    type Output = Result<Response<Incoming>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let exchange = self
            .exchange
            .as_mut()
            .expect("Detached is not polled after completion");
        let out = exchange.as_mut().poll(cx);
        if out.is_ready() {
            self.exchange = None;
        }
        out
    }
}

impl<E: Send + 'static> Drop for Detached<E> {
    fn drop(&mut self) {
        // Without a runtime (it is being torn down) there is nothing to finish on.
        let (Some(exchange), Ok(runtime)) =
            (self.exchange.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        tracing::debug!("downstream left mid-exchange; letting the upstream finish");
        let receipt = self.receipt.clone();
        runtime.spawn(async move {
            if let Ok(resp) = exchange.await {
                receipt.answered(resp.status().as_u16());
                let _ = super::sink::discard(resp.into_body()).await;
            }
        });
    }
}
