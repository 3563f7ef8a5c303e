//! Serving a connection on the fast path: read a head, plan it ([`super::wire`]), forward it or
//! hand the connection to hyper's path, copy the response, keep the connection alive or end it.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::wire::{self, Answer, Framing, PlainRequest, Request, Response};
use crate::event::Side;
use crate::http::conn_signals::{ConnSignals, ABORT, SHUTDOWN, SLOW_HEAD};
use crate::http::ctx::RequestCtx;
use crate::http::head_limit::HeadRefused;
use crate::http::linger::{linger, LINGER};
use crate::http::receipt::Receipt;
use crate::http::rejections::problem_bytes;
use crate::http::synthetic::no_response_detail;
use crate::http::upstream::{Forwarder, UPSTREAM_AFTERLIFE};
use crate::http::Shared;

/// Bytes read from a socket at a time.
const READ: usize = 16 * 1024;

/// How a connection leaves the fast path.
pub(in crate::http) enum Exit {
    /// It is over.
    Done,
    /// hyper's path takes it: the socket, and the bytes read from it and not yet handled (the
    /// next request's head, whole or in part).
    Handoff(TcpStream, BytesMut),
}

/// What one exchange leaves of the connection.
enum AfterExchange {
    KeepAlive,
    /// Close it the polite way (see `linger`): the response said `connection: close`.
    Close,
    /// Drop it: the client left, or the response was cut.
    Gone,
    Handoff,
}

/// The upstream connection of a downstream connection, reused request after request.
struct Up {
    stream: TcpStream,
    /// Read from the upstream, not yet forwarded.
    buf: BytesMut,
}

impl Up {
    /// A new connection over `stream`, just connected.
    fn new(stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        Self {
            stream,
            buf: BytesMut::with_capacity(READ),
        }
    }
}

struct Conn<'a> {
    shared: &'a Arc<Shared>,
    /// The header that carries the idempotency key (lowercase).
    key_header: &'a str,
    signals: &'a Arc<ConnSignals>,
    fwd: &'a Forwarder,
    down: TcpStream,
    /// Read from the client, not yet handled.
    buf: BytesMut,
    up: Option<Up>,
    /// The head being sent, either way, and the body bytes that go with it.
    out: Vec<u8>,
}

/// Serves `stream`'s requests on the fast path until the connection ends or hyper's path must
/// take it. `signals`: the connection's signals, which hyper's path goes on with.
pub(in crate::http) async fn serve(
    stream: TcpStream,
    shared: &Arc<Shared>,
    signals: &Arc<ConnSignals>,
    fwd: &Forwarder,
) -> Exit {
    // The fast path reads a key only from a header; a key elsewhere is hyper's path's to find.
    let Some(key_header) = shared.key.header() else {
        return Exit::Handoff(stream, BytesMut::new());
    };
    let _registration = shared.http_conns.register(signals);
    let mut conn = Conn {
        shared,
        key_header,
        signals,
        fwd,
        down: stream,
        buf: BytesMut::with_capacity(READ),
        up: None,
        out: Vec::with_capacity(1024),
    };
    loop {
        match conn.exchange().await {
            AfterExchange::KeepAlive => {}
            AfterExchange::Close => {
                let _ = tokio::time::timeout(
                    LINGER,
                    linger(&mut conn.down, conn.shared.shutting_down()),
                )
                .await;
                return Exit::Done;
            }
            AfterExchange::Gone => return Exit::Done,
            AfterExchange::Handoff => return Exit::Handoff(conn.down, conn.buf),
        }
    }
}

/// Resolves with the connection's flags once one of `bits` is raised.
async fn raised(signals: &ConnSignals, bits: u8) -> u8 {
    poll_fn(|cx| {
        let flags = signals.poll_flags(cx.waker());
        if flags & bits != 0 {
            Poll::Ready(flags)
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Resolves when the idle upstream connection can carry no more requests: it closed, failed, or
/// sent bytes nobody asked for.
async fn unusable(up: Option<&Up>) {
    let Some(up) = up else {
        return std::future::pending().await;
    };
    loop {
        if up.stream.readable().await.is_err() {
            return;
        }
        let mut probe = [0u8; 1];
        match up.stream.try_read(&mut probe) {
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            _ => return,
        }
    }
}

/// Reads more of `stream` into `buf`; `Ok(false)`: the peer closed its side.
async fn fill(stream: &mut TcpStream, buf: &mut BytesMut) -> std::io::Result<bool> {
    buf.reserve(READ);
    Ok(stream.read_buf(buf).await? > 0)
}

/// What of a slice belongs to the response body.
struct Part {
    /// Bytes at the front that belong to the body (forwarded).
    used: usize,
    /// Body data among them (chunked framing excluded).
    data: u64,
    /// Whether the body ended with them; an error: the body is malformed after them.
    outcome: Result<bool, &'static str>,
}

/// What of the front of `bytes` belongs to the response body in `framing`.
fn body_part(framing: &mut Framing, bytes: &[u8]) -> Part {
    let (used, data, done) = match framing {
        Framing::Empty => (0, 0, true),
        Framing::Length(left) => {
            let n = (*left).min(bytes.len() as u64);
            *left -= n;
            (n as usize, n, *left == 0)
        }
        Framing::Chunked(chunks) => {
            let fed = chunks.feed(bytes);
            return Part {
                used: fed.used,
                data: fed.data,
                outcome: fed.outcome,
            };
        }
        Framing::UntilClose => (bytes.len(), bytes.len() as u64, false),
    };
    Part {
        used,
        data,
        outcome: Ok(done),
    }
}

impl Conn<'_> {
    /// Reads the next plain request head, its body whole behind it, or says how the connection
    /// goes on instead.
    async fn read_head(&mut self) -> Result<PlainRequest, AfterExchange> {
        if !self.buf.is_empty() {
            // Bytes of the next head came with the last exchange: they start its clock.
            self.signals.head.read();
        }
        loop {
            if !self.buf.is_empty() {
                // Read per request: a rule added mid-connection applies to the next request.
                let rules = self.shared.http_rules_for_request();
                match wire::analyse_request(
                    &self.buf,
                    self.fwd.prefix(),
                    self.key_header,
                    rules.as_deref(),
                    &mut self.out,
                ) {
                    // A body still to come goes to hyper's path, which reads the upstream's
                    // answer while it sends (an early 413, a full-duplex echo).
                    Request::Plain(plan)
                        if plan.body_len > (self.buf.len() - plan.head_len) as u64 =>
                    {
                        return Err(AfterExchange::Handoff)
                    }
                    Request::Plain(plan) => return Ok(plan),
                    Request::Handoff => return Err(AfterExchange::Handoff),
                    Request::Partial => {}
                }
            }
            let up = self.up.is_some();
            tokio::select! {
                biased;
                flags = raised(self.signals, ABORT | SHUTDOWN | SLOW_HEAD) => {
                    // hyper's path sees the same flags at once and ends the connection its way
                    // (a 408 for a slow head, a graceful close for a shutdown).
                    return Err(if flags & ABORT != 0 { AfterExchange::Gone } else { AfterExchange::Handoff });
                }
                // Until the next request is sent, the upstream connection may say nothing.
                () = unusable(self.up.as_ref()), if up => self.up = None,
                read = fill(&mut self.down, &mut self.buf) => match read {
                    Ok(true) => self.signals.head.read(),
                    Ok(false) if self.buf.is_empty() => return Err(AfterExchange::Gone),
                    Ok(false) => return Err(AfterExchange::Handoff),
                    Err(_) => return Err(AfterExchange::Gone),
                },
            }
        }
    }

    /// Connects to the upstream, watching the client meanwhile; `Err(None)`: the client left,
    /// `Err(Some(e))`: the connect failed.
    async fn connect(&mut self) -> Result<(), Option<std::io::Error>> {
        let watch = self.buf.len() < wire::MAX_REQUEST_HEAD;
        let connect = TcpStream::connect(self.fwd.authority());
        tokio::pin!(connect);
        loop {
            tokio::select! {
                biased;
                stream = &mut connect => {
                    self.up = Some(Up::new(stream.map_err(Some)?));
                    return Ok(());
                }
                read = fill(&mut self.down, &mut self.buf), if watch => {
                    if !matches!(read, Ok(true)) {
                        return Err(None);
                    }
                }
            }
        }
    }

    /// Serves one request, from its head to the end of its response.
    async fn exchange(&mut self) -> AfterExchange {
        let plan = match self.read_head().await {
            Ok(plan) => plan,
            Err(after) => return after,
        };
        let PlainRequest {
            head_len,
            body_len,
            close,
            head_method,
            method,
            path,
            key,
            step,
        } = plan;
        // The head is whole: the context stops its clock, as for hyper's requests.
        let mut ctx = RequestCtx::begin(
            self.shared.events.clone(),
            method,
            path,
            key,
            step,
            self.signals.clone(),
        );
        let body_len = body_len as usize;
        self.out
            .extend_from_slice(&self.buf[head_len..head_len + body_len]);
        self.buf.advance(head_len + body_len);
        let fresh = self.up.is_none();
        if fresh {
            match self.connect().await {
                Ok(()) => {}
                // Its context records the departure.
                Err(None) => return AfterExchange::Gone,
                Err(Some(err)) => {
                    let detail = self.no_response(&err.to_string());
                    return self.bad_gateway(ctx, detail, false, close).await;
                }
            }
        }
        let receipt = ctx.receipt().clone();
        receipt.handed();
        let asked = Instant::now();
        if let Err(err) = self.send_head(fresh).await {
            receipt.unsent();
            let detail = self.no_response(&err.to_string());
            return self.bad_gateway(ctx, detail, false, close).await;
        }
        let answer = match self.response_head(head_method, close).await {
            Ok(answer) => answer,
            Err(Wait::Failed(why)) => {
                let detail = self.no_response(&why);
                return self.bad_gateway(ctx, detail, true, close).await;
            }
            Err(Wait::Refused(limit)) => {
                ctx.event.upstream_head_refused = Some(limit.limit());
                let detail = limit.detail(self.fwd.base());
                return self.bad_gateway(ctx, detail, true, close).await;
            }
            Err(Wait::ClientLeft) => {
                self.orphan(ctx, receipt, head_method);
                return AfterExchange::Gone;
            }
        };
        ctx.waited(asked.elapsed());
        ctx.event.upstream_sends = 1;
        ctx.event.upstream_status = Some(answer.status);
        ctx.event.client_status = Some(answer.status);
        ctx.answered();
        self.forward_body(ctx, answer).await
    }

    /// Writes the upstream head and body; on a reused connection that turns out dead, once more
    /// on a new one.
    async fn send_head(&mut self, fresh: bool) -> std::io::Result<()> {
        let up = self.up.as_mut().expect("connected before");
        let Err(err) = up.stream.write_all(&self.out).await else {
            return Ok(());
        };
        self.up = None;
        if fresh {
            return Err(err);
        }
        let stream = TcpStream::connect(self.fwd.authority()).await?;
        let up = self.up.insert(Up::new(stream));
        let sent = up.stream.write_all(&self.out).await;
        if sent.is_err() {
            self.up = None;
        }
        sent
    }

    /// Whether the client's connection closes after this exchange: it asked, or the proxy
    /// shuts down.
    fn closing(&self, close: bool) -> bool {
        close || self.signals.raised(SHUTDOWN)
    }

    /// Waits for the final response head (forwarding 1xx heads), written to `out`.
    async fn response_head(&mut self, head_method: bool, close: bool) -> Result<Answer, Wait> {
        loop {
            let close_down = self.closing(close);
            let up = self.up.as_mut().expect("connected before");
            if !up.buf.is_empty() {
                match wire::analyse_response(&up.buf, head_method, close_down, &mut self.out) {
                    Response::Partial => {}
                    Response::Invalid(why) => return Err(Wait::Failed(why)),
                    Response::Refused(limit) => return Err(Wait::Refused(limit)),
                    Response::Interim { head_len } => {
                        up.buf.advance(head_len);
                        if self.down.write_all(&self.out).await.is_err() {
                            return Err(Wait::ClientLeft);
                        }
                        continue;
                    }
                    Response::Final(answer) => return Ok(answer),
                }
            }
            // The client's side is read too: its close means it gave up (pipelined bytes wait
            // in the buffer, up to a head's worth).
            let watch = self.buf.len() < wire::MAX_REQUEST_HEAD;
            tokio::select! {
                biased;
                read = fill(&mut up.stream, &mut up.buf) => match read {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(Wait::Failed("connection closed before message completed".into()))
                    }
                    Err(err) => return Err(Wait::Failed(err.to_string())),
                },
                read = fill(&mut self.down, &mut self.buf), if watch => {
                    if !matches!(read, Ok(true)) {
                        return Err(Wait::ClientLeft);
                    }
                }
            }
        }
    }

    /// Sends the response head in `out` and copies the body as it comes.
    async fn forward_body(&mut self, mut ctx: RequestCtx, answer: Answer) -> AfterExchange {
        let Answer {
            head_len,
            mut framing,
            upstream_closes,
            close_down,
            ..
        } = answer;
        let until_close = framing == Framing::UntilClose;
        let up = self.up.as_mut().expect("connected before");
        up.buf.advance(head_len);
        let mut part = body_part(&mut framing, &up.buf);
        self.out.extend_from_slice(&up.buf[..part.used]);
        up.buf.advance(part.used);
        ctx.event.client_bytes += part.data;
        // Recorded before the last bytes go out, as hyper's path records it when it takes the
        // body's last frame: a client that has its answer finds its event.
        if part.outcome == Ok(true) {
            ctx.complete();
        }
        if self.down.write_all(&self.out).await.is_err() {
            self.up = None;
            return AfterExchange::Gone;
        }
        loop {
            let up = self.up.as_mut().expect("connected before");
            let failure = match part.outcome {
                Ok(true) => break,
                Err(why) => why.to_owned(),
                Ok(false) => match fill(&mut up.stream, &mut up.buf).await {
                    Ok(true) => {
                        part = body_part(&mut framing, &up.buf);
                        ctx.event.client_bytes += part.data;
                        if part.outcome == Ok(true) {
                            ctx.complete();
                        }
                        if self.down.write_all(&up.buf[..part.used]).await.is_err() {
                            self.up = None;
                            return AfterExchange::Gone;
                        }
                        up.buf.advance(part.used);
                        continue;
                    }
                    Ok(false) if until_close => break,
                    Ok(false) => "connection closed before message completed".to_owned(),
                    Err(err) => err.to_string(),
                },
            };
            // The response is cut: the client sees the connection end before its end.
            ctx.failed(Side::Upstream, format!("upstream body failed: {failure}"));
            ctx.commit();
            self.up = None;
            return AfterExchange::Gone;
        }
        // A body that ran to the upstream's close ends here (the others were recorded already).
        ctx.complete();
        let up = self.up.as_ref().expect("connected before");
        if upstream_closes || !up.buf.is_empty() {
            self.up = None;
        }
        if close_down || until_close {
            AfterExchange::Close
        } else {
            AfterExchange::KeepAlive
        }
    }

    /// The detail of a 502 for an upstream that failed before its response head (`cause`).
    fn no_response(&self, cause: &str) -> String {
        no_response_detail(&format!("{}: {cause}", self.fwd.base()))
    }

    /// Answers 502 with a problem body whose detail is `detail`: the upstream failed before its
    /// response head, or answered with one the proxy refuses. `sent`: the request may have
    /// reached it; `close`: the client asked to close after it.
    async fn bad_gateway(
        &mut self,
        mut ctx: RequestCtx,
        detail: String,
        sent: bool,
        close: bool,
    ) -> AfterExchange {
        self.up = None;
        ctx.event.upstream_sends = u8::from(sent);
        let close = self.closing(close);
        let (bytes, body) = problem_bytes(StatusCode::BAD_GATEWAY, &detail, close);
        ctx.failed(Side::Upstream, detail);
        ctx.event.client_status = Some(StatusCode::BAD_GATEWAY.as_u16());
        ctx.answered();
        // Recorded before the answer goes out (see `forward_body`).
        ctx.event.client_bytes = body as u64;
        ctx.complete();
        if self.down.write_all(&bytes).await.is_err() {
            return AfterExchange::Gone;
        }
        if close {
            AfterExchange::Close
        } else {
            AfterExchange::KeepAlive
        }
    }

    /// The client left while its request was at the upstream: its event is recorded now (by
    /// the context's drop), and the exchange runs on without it, bounded, to record the
    /// upstream's status when it comes.
    fn orphan(&mut self, ctx: RequestCtx, receipt: Arc<Receipt>, head_method: bool) {
        drop(ctx);
        let Some(mut up) = self.up.take() else {
            return;
        };
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let mut scratch = Vec::new();
            let status = async {
                loop {
                    match wire::analyse_response(&up.buf, head_method, false, &mut scratch) {
                        Response::Final(answer) => return Some(answer.status),
                        Response::Interim { head_len } => up.buf.advance(head_len),
                        Response::Invalid(_) | Response::Refused(_) => return None,
                        Response::Partial => {
                            if !matches!(fill(&mut up.stream, &mut up.buf).await, Ok(true)) {
                                return None;
                            }
                        }
                    }
                }
            };
            tokio::select! {
                status = tokio::time::timeout(UPSTREAM_AFTERLIFE, status) => {
                    if let Ok(Some(status)) = status {
                        receipt.answered(status);
                    }
                }
                () = shared.shutting_down() => {}
            }
        });
    }
}

/// Why no final response head came.
enum Wait {
    /// The upstream failed (closed, reset, sent no HTTP): why.
    Failed(String),
    /// The upstream answered with a head over a limit of `head_limit`.
    Refused(HeadRefused),
    /// The client closed its side first.
    ClientLeft,
}
