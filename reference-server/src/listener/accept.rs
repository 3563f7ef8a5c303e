//! The accept loop, one task per connection (its TLS handshake first on a TLS listener), and
//! graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use http::{Method, Request};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::io::{ConnIo, Observed};
use super::linger::linger;
use super::tls::{handshake, Accepted};
use super::Timeouts;
use crate::edge::{ApiError, BodyDeadline, ClientCertificate};
use crate::edge::{MAX_HEADER_FIELDS, MAX_HEAD_BYTES};

/// Serves `router` on `listener` until `shutdown` changes (or its sender is dropped): then stops
/// accepting, lets every connection finish the request it is on ([`http1::Connection::graceful_shutdown`])
/// and returns once all are closed. Each request must arrive within `timeouts`. With `tls`, every
/// connection is HTTPS: its handshake must finish within the header read timeout, a plain HTTP
/// request is answered 400 `plain-http-to-tls-port`, and a verified client certificate goes with
/// each of its requests as a [`ClientCertificate`] extension.
pub fn serve(
    listener: TcpListener,
    router: Router,
    timeouts: Timeouts,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let tls = tls.map(TlsAcceptor::from);
    tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        connections.spawn(connection(
                            stream,
                            router.clone(),
                            timeouts,
                            tls.clone(),
                            shutdown.clone(),
                        ));
                    }
                    Err(err) => accept_failed(err).await,
                },
                // Reap finished connections, so the set holds only live ones.
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                _ = shutdown.changed() => break,
            }
        }
        drop(listener);
        while connections.join_next().await.is_some() {}
    })
}

/// An accept that failed: a connection that died in the backlog is skipped; anything else (out of
/// descriptors, most often) is logged and retried after a pause, since accepting again at once would
/// fail the same way and spin.
async fn accept_failed(err: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %err, "accept failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Serves one accepted connection: as HTTP, or on a TLS listener after its handshake (a client
/// that began with plain HTTP gets one problem answer in plain HTTP, then a lingering close).
async fn connection(
    stream: TcpStream,
    router: Router,
    timeouts: Timeouts,
    tls: Option<TlsAcceptor>,
    stop: watch::Receiver<bool>,
) {
    let Some(acceptor) = tls else {
        return serve_http(stream, router, timeouts, None, stop).await;
    };
    match handshake(stream, &acceptor, timeouts.header_read).await {
        Accepted::Tls(stream, cert) => serve_http(*stream, router, timeouts, cert, stop).await,
        Accepted::PlainHttp(mut stream) => {
            let answer = ApiError::PlainHttpToTlsPort.wire_response(b"");
            if stream.write_all(&answer).await.is_ok() {
                linger(&mut stream).await;
            }
        }
        Accepted::Gone => {}
    }
}

/// Serves HTTP/1.1 on `stream` (with `cert` on every request, when a handshake verified one), then
/// closes it: lingering (see [`linger`]) when it answered something and the client had not closed
/// its side, since the client may still be sending the request that was answered early. A
/// connection cut for its header read timeout closes at once: what the client was sending, slowly,
/// was a request nobody answered.
async fn serve_http<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    router: Router,
    timeouts: Timeouts,
    cert: Option<ClientCertificate>,
    mut stop: watch::Receiver<bool>,
) {
    let observed = Arc::new(Observed::default());
    let result = {
        let service = {
            let observed = observed.clone();
            hyper::service::service_fn(move |mut req: Request<Incoming>| {
                observed.awaiting.push(req.method() == Method::HEAD);
                let deadline = tokio::time::Instant::now() + timeouts.body_read;
                req.extensions_mut()
                    .insert(BodyDeadline(deadline, timeouts.body_read));
                if let Some(cert) = &cert {
                    req.extensions_mut().insert(cert.clone());
                }
                router.clone().oneshot(req.map(Body::new))
            })
        };
        let io = TokioIo::new(ConnIo::new(&mut stream, observed.clone()));
        let conn = http1::Builder::new()
            // A client may close its sending side once its request is out and still wait for the
            // answer; without this, hyper drops the answer at that end of stream.
            .half_close(true)
            .timer(TokioTimer::new())
            .header_read_timeout(timeouts.header_read)
            .max_headers(MAX_HEADER_FIELDS)
            // The first bounds a head that arrived whole, the second one still arriving.
            .max_header_size(MAX_HEAD_BYTES)
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(io, service);
        tokio::pin!(conn);
        let mut stopping = false;
        loop {
            tokio::select! {
                result = conn.as_mut() => break result,
                _ = stop.changed(), if !stopping => {
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    };
    let timed_out = match &result {
        Ok(()) => false,
        Err(err) => {
            tracing::debug!(error = %err, "connection ended with an error");
            err.is_timeout()
        }
    };
    if observed.answered() && !observed.client_closed() && !timed_out {
        linger(&mut stream).await;
    }
}
