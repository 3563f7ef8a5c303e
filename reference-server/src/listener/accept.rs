//! The accept loop, one task per connection, and graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use http::{Method, Request};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tower::ServiceExt;

use super::io::{ConnIo, Observed};
use super::linger::linger;
use super::Timeouts;
use crate::edge::BodyDeadline;
use crate::edge::{MAX_HEADER_FIELDS, MAX_HEAD_BYTES};

/// Serves `router` on `listener` until `shutdown` changes (or its sender is dropped): then stops
/// accepting, lets every connection finish the request it is on ([`http1::Connection::graceful_shutdown`])
/// and returns once all are closed. Each request must arrive within `timeouts`.
pub fn serve(
    listener: TcpListener,
    router: Router,
    timeouts: Timeouts,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
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

/// Serves one connection, then closes it: lingering (see [`linger`]) when it answered something and
/// the client had not closed its side, since the client may still be sending the request that was
/// answered early. A connection cut for its header read timeout closes at once: what the client was
/// sending, slowly, was a request nobody answered.
async fn connection(
    mut stream: TcpStream,
    router: Router,
    timeouts: Timeouts,
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
