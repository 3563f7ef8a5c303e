//! One downstream connection: hyper's HTTP/1.1 server over a [`FaultIo`] that lets a fault close
//! or reset the connection from inside a request.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::{FuturesUnordered, StreamExt};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};

use super::forward::{UpstreamConn, UpstreamLink};

use crate::server::Shared;

/// Lets a request's fault end its connection: close (FIN) or reset (RST), now or after the bytes
/// written so far have been flushed to the socket.
#[derive(Debug, Default)]
pub(crate) struct ConnCtl {
    abort: Notify,
    reset: AtomicBool,
    abort_after_flush: AtomicBool,
}

impl ConnCtl {
    /// Ends the connection as soon as the connection task sees it.
    pub(crate) fn abort(&self, reset: bool) {
        if reset {
            self.reset.store(true, Ordering::SeqCst);
        }
        // notify_one keeps a permit if the connection task is not waiting yet.
        self.abort.notify_one();
    }

    /// Resets the connection once what has been written so far is flushed.
    pub(crate) fn reset_after_flush(&self) {
        self.reset.store(true, Ordering::SeqCst);
        self.abort_after_flush.store(true, Ordering::SeqCst);
    }
}

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
        if ready.is_ready() && self.ctl.abort_after_flush.swap(false, Ordering::SeqCst) {
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
        if self.ctl.reset.load(Ordering::SeqCst) {
            // SO_LINGER 0: the close sends RST instead of FIN.
            let _ = self.stream.set_zero_linger();
        }
    }
}

/// Drives the upstream connections a downstream connection opened, inside its task. Ends once
/// the link is gone (the downstream connection closed) and every upstream connection finished.
async fn drive_upstream(mut new_conns: mpsc::UnboundedReceiver<UpstreamConn>) {
    let mut conns = FuturesUnordered::new();
    loop {
        tokio::select! {
            Some(conn) = new_conns.recv() => conns.push(conn),
            Some(result) = conns.next(), if !conns.is_empty() => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, side = "upstream", "upstream connection ended with an error");
                }
            }
            else => break,
        }
    }
}

/// How long upstream exchanges may run on after their downstream connection closed.
const UPSTREAM_AFTERLIFE: std::time::Duration = std::time::Duration::from_secs(120);

/// Serves one downstream connection until the client closes it, a fault ends it, or the proxy
/// shuts down (idle keep-alive connections close at once, busy ones after their exchange).
pub(crate) async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let ctl = Arc::new(ConnCtl::default());
    let (conn_tx, conn_rx) = mpsc::unbounded_channel();
    let link = Arc::new(UpstreamLink::new(conn_tx));
    let io = TokioIo::new(FaultIo {
        stream,
        ctl: ctl.clone(),
    });
    let service = {
        let (shared, ctl) = (shared.clone(), ctl.clone());
        service_fn(move |req| {
            super::service::handle(shared.clone(), ctl.clone(), link.clone(), req)
        })
    };
    let mut conn = Box::pin(
        http1::Builder::new()
            .keep_alive(true)
            .serve_connection(io, service),
    );
    let mut upstream = Box::pin(drive_upstream(conn_rx));
    let mut shutting_down = false;
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(err) = result {
                tracing::debug!(error = %err, side = "downstream", "connection ended with an error");
            }
        }
        () = ctl.abort.notified() => {}
        () = shared.shutting_down() => {
            shutting_down = true;
            conn.as_mut().graceful_shutdown();
        }
        () = upstream.as_mut() => {}
    }
    if shutting_down {
        tokio::select! {
            _ = conn.as_mut() => {}
            () = ctl.abort.notified() => {}
            () = upstream.as_mut() => {}
        }
    }
    // Dropping the downstream side drops the link; exchanges still at the upstream finish in the
    // background (see `detach`), bounded in time and by the proxy's shutdown.
    drop(conn);
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::timeout(UPSTREAM_AFTERLIFE, upstream) => {}
            () = shared.shutting_down() => {}
        }
    });
}
