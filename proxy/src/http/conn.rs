//! One downstream connection: hyper's HTTP/1.1 server over a [`FaultIo`] that lets a fault close
//! or reset the connection from inside a request.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::{FuturesUnordered, StreamExt};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::ctl::{ConnCtl, ConnRegistry, ABORT, NEW_UPSTREAM, SHUTDOWN};
use super::link::{UpstreamConn, UpstreamLink};

use crate::server::Shared;

/// The downstream socket, with the hooks [`ConnCtl`] needs.
struct FaultIo {
    stream: TcpStream,
    ctl: Arc<ConnCtl>,
}

impl AsyncRead for FaultIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let ready = Pin::new(&mut self.stream).poll_flush(cx);
        // hyper flushes after writing each batch; once the truncated body is out, reset.
        if ready.is_ready() && self.ctl.take_abort_after_flush() {
            self.ctl.abort(true);
        }
        ready
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Drop for FaultIo {
    fn drop(&mut self) {
        if self.ctl.wants_reset() {
            // SO_LINGER 0: the close sends RST instead of FIN.
            let _ = self.stream.set_zero_linger();
        }
    }
}

/// How long upstream exchanges may run on after their downstream connection closed.
const UPSTREAM_AFTERLIFE: std::time::Duration = std::time::Duration::from_secs(120);

/// A downstream connection's task: hyper's server connection, and the upstream connections its
/// requests opened (polled here, so an exchange never hops between tasks or threads). Ends when
/// the server connection does or a fault aborts it; a shutdown lets the exchange in progress end.
struct ConnTask<C> {
    conn: Pin<Box<C>>,
    upstream: FuturesUnordered<UpstreamConn>,
    link: Arc<UpstreamLink>,
    ctl: Arc<ConnCtl>,
    graceful: bool,
}

impl<C> Future for ConnTask<C>
where
    C: Future<Output = hyper::Result<()>> + GracefulShutdown,
{
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let flags = this.ctl.poll_flags(cx.waker());
        if flags & ABORT != 0 {
            return Poll::Ready(());
        }
        if flags & SHUTDOWN != 0 && !this.graceful {
            this.graceful = true;
            this.conn.as_mut().graceful_shutdown();
        }
        if flags & NEW_UPSTREAM != 0 {
            this.ctl.clear(NEW_UPSTREAM);
            this.link.drain(&mut this.upstream, false);
        }
        while let Poll::Ready(Some(result)) = this.upstream.poll_next_unpin(cx) {
            if let Err(err) = result {
                tracing::debug!(error = %err, side = "upstream", "upstream connection ended with an error");
            }
        }
        match this.conn.as_mut().poll(cx) {
            Poll::Ready(result) => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, side = "downstream", "connection ended with an error");
                }
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// What [`ConnTask`] needs of hyper's server connection besides polling it.
trait GracefulShutdown {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S> GracefulShutdown for http1::Connection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http1::Connection::graceful_shutdown(self);
    }
}

/// Serves one downstream connection until the client closes it, a fault ends it, or the proxy
/// shuts down (idle keep-alive connections close at once, busy ones after their exchange).
pub(crate) async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let ctl = Arc::new(ConnCtl::default());
    let _registration = ConnRegistry::register(&shared, &ctl);
    let link = Arc::new(UpstreamLink::new(ctl.clone()));
    let io = TokioIo::new(FaultIo {
        stream,
        ctl: ctl.clone(),
    });
    let service = {
        let (shared, ctl, link) = (shared.clone(), ctl.clone(), link.clone());
        service_fn(move |req| {
            super::service::handle(shared.clone(), ctl.clone(), link.clone(), req)
        })
    };
    // Small messages are copied into one buffer and sent with one `send`, which costs the
    // kernel less than a `writev` of head and body (measured, docs/BENCHMARKS.md).
    let conn = http1::Builder::new()
        .writev(false)
        .keep_alive(true)
        .serve_connection(io, service);
    let mut task = ConnTask {
        conn: Box::pin(conn),
        upstream: FuturesUnordered::new(),
        link,
        ctl,
        graceful: false,
    };
    (&mut task).await;
    // Dropping the downstream side drops the service and with it the link's idle upstream
    // sender; exchanges still at the upstream finish in the background (see `detach`), bounded
    // in time and by the proxy's shutdown.
    let ConnTask {
        conn,
        mut upstream,
        link,
        ..
    } = task;
    drop(conn);
    link.drain(&mut upstream, true);
    drop(link);
    if upstream.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let drive = async {
            while let Some(result) = upstream.next().await {
                if let Err(err) = result {
                    tracing::debug!(error = %err, side = "upstream", "upstream connection ended with an error");
                }
            }
        };
        tokio::select! {
            _ = tokio::time::timeout(UPSTREAM_AFTERLIFE, drive) => {}
            () = shared.shutting_down() => {}
        }
    });
}
