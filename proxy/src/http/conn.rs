//! One downstream connection: hyper's HTTP/1.1 server over a [`FaultIo`] that lets a fault close
//! or reset the connection from inside a request. The control API's connections are served the
//! same way, for the same edges: hyper's own rejections rewritten with a problem body
//! (`rejections`), the header-read timeout (`head_timer`), and the lingering close (`linger`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use futures::stream::{FuturesUnordered, StreamExt};
use http::StatusCode;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::{service_fn, HttpService};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::conn_signals::{ConnSignals, ABORT, NEW_UPSTREAM, SHUTDOWN, SLOW_HEAD};
use super::head_clock::Expiry;
use super::head_timer::Timed;
use super::linger::{linger, LINGER};
use super::link::{UpstreamConn, UpstreamLink};
use super::rejections::{problem_response, reject_status};
use super::stream::DownStream;
use super::upstream::UPSTREAM_AFTERLIFE;

use super::fast::Exit;
use crate::http::{Shared, Upstream};

/// hyper's answer to a request head it could not parse, held back until the connection's end
/// says what it was (see `rejections`).
#[derive(Debug)]
struct Held {
    status: u16,
    bytes: Vec<u8>,
    /// How much of `bytes` is already out, when they turned out to be a response like any other.
    written: usize,
}

/// The downstream socket, with the hooks [`ConnSignals`] and the connection's edges need.
struct FaultIo {
    stream: DownStream,
    signals: Arc<ConnSignals>,
    held: Option<Held>,
    /// Bytes the fast path read and handed over, read before the socket's.
    prefix: BytesMut,
}

impl FaultIo {
    /// Writes out held bytes: hyper went on after them, so they were a response like any other.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(held) = &mut self.held {
            if held.written == held.bytes.len() {
                self.held = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.stream).poll_write(cx, &held.bytes[held.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            held.written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for FaultIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.held.is_some() {
            ready!(self.poll_release(cx))?;
        }
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix.split_to(n));
            self.signals.head.read();
            return Poll::Ready(Ok(()));
        }
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        // Ready means bytes or EOF; an EOF marks a head begun on a connection that is ending.
        if read.is_ready() {
            self.signals.head.read();
        }
        read
    }
}

impl AsyncWrite for FaultIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.held.is_some() {
            ready!(self.poll_release(cx))?;
        }
        // One prefix comparison per write, on bytes in cache: the price of the problem bodies.
        if buf.starts_with(b"HTTP/1.1 4") {
            if let Some(status) = reject_status(buf) {
                self.held = Some(Held {
                    status,
                    bytes: buf.to_vec(),
                    written: 0,
                });
                return Poll::Ready(Ok(buf.len()));
            }
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    // Vectored writes are not passed on: tokio's default sends the first buffer through
    // `poll_write`, so every byte meets the check above (hyper writes one flattened buffer
    // here anyway, `writev(false)`).

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let ready = Pin::new(&mut self.stream).poll_flush(cx);
        // hyper flushes after writing each batch; once the truncated body is out, reset.
        if ready.is_ready() && self.signals.take_abort_after_flush() {
            self.signals.abort(true);
        }
        ready
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held.is_some() {
            // The connection's end writes what is held (or its replacement) and shuts down.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Drop for FaultIo {
    fn drop(&mut self) {
        if self.signals.wants_reset() {
            // SO_LINGER 0: the close sends RST instead of FIN.
            let _ = self.stream.tcp().set_zero_linger();
        }
    }
}

/// Who answers on a connection, as its problem details name it.
#[derive(Debug, Clone, Copy)]
enum Speaker {
    Proxy,
    Control,
}

impl Speaker {
    fn name(self) -> &'static str {
        match self {
            Speaker::Proxy => "idemspec-proxy",
            Speaker::Control => "the idemspec-proxy control API",
        }
    }
}

/// How hyper's side of a connection ended.
#[derive(Debug)]
enum Ended {
    /// A fault (or the shutdown's cut) ended it: no answer, no lingering.
    Aborted,
    /// hyper's connection finished, well or not.
    Served(hyper::Result<()>),
    /// A request head took longer than the header-read timeout; `started`: a byte of it came.
    SlowHead { started: bool },
}

impl FaultIo {
    /// Ends the connection after hyper's part: the answer hyper could not give (a problem for a
    /// head it could not parse or that came too slowly, or its held response), then a lingering
    /// close, bounded by [`LINGER`] and the proxy's shutdown.
    async fn finish(mut self, ended: Ended, who: Speaker, timeout: Duration, shared: &Shared) {
        let answer = match (ended, self.held.take()) {
            (Ended::Aborted, _) | (Ended::SlowHead { started: false }, None) => return,
            (Ended::Served(Err(err)), Some(held)) if err.is_parse() => {
                let status = StatusCode::from_u16(held.status).expect("a status hyper sent");
                let detail = format!("{} could not parse the request: {err}", who.name());
                problem_response(status, &detail)
            }
            (_, Some(held)) => held.bytes[held.written..].to_vec(),
            (Ended::SlowHead { started: true }, None) => {
                let detail = format!(
                    "{} did not receive a whole request head within {}",
                    who.name(),
                    humantime::format_duration(timeout)
                );
                problem_response(StatusCode::REQUEST_TIMEOUT, &detail)
            }
            (Ended::Served(_), None) => Vec::new(),
        };
        let stream = &mut self.stream;
        let end = async {
            if answer.is_empty() || stream.write_all(&answer).await.is_ok() {
                linger(stream, shared.shutting_down()).await;
            }
        };
        // A client that reads nothing cannot hold the answer's write past the lingering time.
        let _ = tokio::time::timeout(LINGER, end).await;
    }
}

/// The upstream connections a downstream connection's requests opened.
struct Upstreams {
    conns: FuturesUnordered<UpstreamConn>,
    link: Arc<UpstreamLink>,
}

/// A downstream connection's task: hyper's server connection and the upstream connections its
/// requests opened (polled here, so an exchange never hops between tasks or threads). Ends when
/// the server connection does, a fault aborts it or the header-read sweep finds its head
/// overdue; a shutdown lets the exchange in progress end.
struct ConnTask<S: HttpService<Incoming>> {
    conn: http1::Connection<TokioIo<FaultIo>, S>,
    upstream: Option<Upstreams>,
    /// The header-read timeout.
    head: Option<Duration>,
    signals: Arc<ConnSignals>,
    graceful: bool,
}

impl<S, B> Future for ConnTask<S>
where
    S: HttpService<Incoming, ResBody = B> + Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Output = Ended;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Ended> {
        let this = &mut *self;
        let flags = this.signals.poll_flags(cx.waker());
        if flags & ABORT != 0 {
            return Poll::Ready(Ended::Aborted);
        }
        if flags & SHUTDOWN != 0 && !this.graceful {
            this.graceful = true;
            Pin::new(&mut this.conn).graceful_shutdown();
        }
        if let Some(up) = &mut this.upstream {
            if flags & NEW_UPSTREAM != 0 {
                this.signals.clear(NEW_UPSTREAM);
                up.link.drain(&mut up.conns, false);
            }
            while let Poll::Ready(Some(result)) = up.conns.poll_next_unpin(cx) {
                if let Err(err) = result {
                    tracing::debug!(error = %err, side = "upstream", "upstream connection ended with an error");
                }
            }
        }
        if flags & SLOW_HEAD != 0 {
            this.signals.clear(SLOW_HEAD);
            // Checked again: the head may have completed since the sweep looked.
            if let Some(timeout) = this.head {
                if let Expiry::Expired { started } = this.signals.head.check(timeout) {
                    tracing::debug!(started, "request head too slow, closing the connection");
                    return Poll::Ready(Ended::SlowHead { started });
                }
            }
        }
        match Pin::new(&mut this.conn).poll(cx) {
            Poll::Ready(result) => {
                if let Err(err) = &result {
                    tracing::debug!(error = %err, side = "downstream", "connection ended with an error");
                }
                Poll::Ready(Ended::Served(result))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Serves `stream` with `service` until the client closes it, a fault ends it, a head is too slow
/// or the proxy shuts down (idle keep-alive connections close at once, busy ones after their
/// exchange), then ends it (see [`FaultIo::finish`]). `link`: the proxy's upstream connections
/// for this connection, which outlive it for exchanges still at the upstream.
async fn serve<S, B>(
    stream: DownStream,
    prefix: BytesMut,
    shared: Arc<Shared>,
    signals: Arc<ConnSignals>,
    service: S,
    link: Option<Arc<UpstreamLink>>,
    who: Speaker,
) where
    S: HttpService<Incoming, ResBody = B> + Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let _registration = shared.http_conns.register(&signals);
    let io = TokioIo::new(FaultIo {
        stream,
        signals: signals.clone(),
        held: None,
        prefix,
    });
    // Small messages are copied into one buffer and sent with one `send`, which costs the
    // kernel less than a `writev` of head and body (measured, docs/measurement-log.md). hyper's own
    // header-read timeout stays off (no timer is given): `head_timer` is cheaper.
    let conn = http1::Builder::new()
        .writev(false)
        .keep_alive(true)
        .serve_connection(io, service);
    let timeout = shared.header_read_timeout;
    let mut task = ConnTask {
        conn,
        upstream: link.map(|link| Upstreams {
            conns: FuturesUnordered::new(),
            link,
        }),
        head: timeout,
        signals,
        graceful: false,
    };
    let ended = (&mut task).await;
    let ConnTask { conn, upstream, .. } = task;
    // Dropping the service drops the link's idle upstream sender; exchanges still at the
    // upstream finish in the background (see `detach`), bounded in time and by the shutdown.
    let hyper::server::conn::http1::Parts { io, service, .. } = conn.into_parts();
    drop(service);
    if let Some(up) = upstream {
        let Upstreams { mut conns, link } = up;
        link.drain(&mut conns, true);
        drop(link);
        if !conns.is_empty() {
            let shared = shared.clone();
            tokio::spawn(async move {
                let drive = async {
                    while let Some(result) = conns.next().await {
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
    }
    let timeout = timeout.unwrap_or_default();
    io.into_inner().finish(ended, who, timeout, &shared).await;
}

/// Serves one downstream connection of the proxy until the client closes it, a fault ends it, a
/// head is too slow, or the proxy shuts down: on the fast path while it can, then on hyper's.
/// TLS on either side bypasses the fast path (it forwards plain TCP bytes): a connection with a
/// TLS client, or to a TLS upstream, is served by hyper's path from its first request.
pub(crate) async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let signals = Arc::new(ConnSignals::default());
    let Upstream::Http(fwd) = &shared.upstream else {
        unreachable!("HTTP connections are only served in HTTP mode")
    };
    let (stream, prefix) = match &shared.listen_tls {
        Some(acceptor) => match super::terminate::accept(acceptor, stream, &shared).await {
            Some(tls) => (tls, BytesMut::new()),
            None => return,
        },
        None if fwd.originates_tls() => (DownStream::Plain(stream), BytesMut::new()),
        None => match super::fast::serve(stream, &shared, &signals, fwd).await {
            Exit::Done => return,
            Exit::Handoff(stream, prefix) => (DownStream::Plain(stream), prefix),
        },
    };
    let link = Arc::new(UpstreamLink::new(signals.clone()));
    let service = {
        let (shared, signals, link) = (shared.clone(), signals.clone(), link.clone());
        service_fn(move |req| {
            super::service::handle(shared.clone(), signals.clone(), link.clone(), req)
        })
    };
    serve(
        stream,
        prefix,
        shared,
        signals,
        service,
        Some(link),
        Speaker::Proxy,
    )
    .await;
}

/// Serves one connection of the control API with `router`, at the same edges as the proxy's.
pub(crate) async fn serve_control(stream: TcpStream, shared: Arc<Shared>, router: axum::Router) {
    let signals = Arc::new(ConnSignals::default());
    let service = Timed::new(TowerToHyperService::new(router), signals.clone());
    serve(
        DownStream::Plain(stream),
        BytesMut::new(),
        shared,
        signals,
        service,
        None,
        Speaker::Control,
    )
    .await;
}
