//! The accept loop shared by both modes: `run(listener, shared)` as in mini-redis, with graceful
//! shutdown (stop accepting, let in-flight exchanges finish for a grace period, then cut them).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use idemspec_scenarios::rules::Mode;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::http::Shared;

/// Serves `stream` with `serve` on the next of `io_threads`, or on the caller's runtime without
/// them; the task joins `conns`.
pub(crate) fn spawn_on_io_threads<F, Fut>(
    conns: &mut JoinSet<()>,
    stream: TcpStream,
    io_threads: Option<&crate::io_threads::IoThreads>,
    serve: F,
) where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(threads) = io_threads else {
        conns.spawn(serve(stream));
        return;
    };
    // A tokio socket reports readiness to the runtime it was registered with: hand the I/O thread
    // the plain socket so that it registers it with its own, or every read would wake this
    // thread first and cross to the I/O thread.
    let stream = match stream.into_std() {
        Ok(stream) => stream,
        Err(err) => {
            tracing::warn!(error = %err, "could not hand a connection to an I/O thread");
            return;
        }
    };
    threads.spawn_into(conns, async move {
        match TcpStream::from_std(stream) {
            Ok(stream) => serve(stream).await,
            Err(err) => tracing::warn!(error = %err, "could not register a connection"),
        }
    });
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    match shared.mode {
        Mode::Http => crate::http::serve_connection(stream, shared).await,
        Mode::Tcp => crate::tcp::serve_connection(stream, shared).await,
    }
}

/// Accepts connections on `listener` and hands each (TCP_NODELAY set) to `serve` until the proxy
/// shuts down; returns the connections still running. `what` names the listener in logs. The
/// proxy's port and the control API's are served by it.
pub(crate) async fn accept_until_shutdown(
    listener: TcpListener,
    shared: &Shared,
    what: &'static str,
    serve: impl FnMut(&mut JoinSet<()>, TcpStream),
) -> JoinSet<()> {
    accept_until(listener, shared.shutting_down(), what, serve).await
}

/// Accepts connections on `listener` and hands each (TCP_NODELAY set) to `serve` until `stop`
/// resolves; returns the connections still running (the listener is closed). `what` names the
/// listener in logs. Every accept loop of the crate is this one.
pub(crate) async fn accept_until(
    listener: TcpListener,
    stop: impl Future<Output = ()>,
    what: &'static str,
    mut serve: impl FnMut(&mut JoinSet<()>, TcpStream),
) -> JoinSet<()> {
    let mut conns = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // Latency matters more than packet count for a test proxy.
                    let _ = stream.set_nodelay(true);
                    serve(&mut conns, stream);
                }
                Err(err) => {
                    // Typically EMFILE; back off instead of spinning.
                    tracing::warn!(error = %err, listener = what, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            () = &mut stop => break,
        }
    }
    conns
}

/// Accepts connections until shutdown, then drains them.
pub(crate) async fn run(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = accept_until_shutdown(listener, &shared, "proxy", |conns, stream| {
        let conn_shared = shared.clone();
        spawn_on_io_threads(conns, stream, shared.io_threads.as_ref(), move |stream| {
            serve(stream, conn_shared)
        })
    })
    .await;
    shared.http_conns.shutdown_all();
    let drained = tokio::time::timeout(shared.grace, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = conns.len(),
            "shutdown grace period over, cutting connections"
        );
        conns.shutdown().await;
    }
    if let Some(threads) = &shared.io_threads {
        threads.stop();
    }
}
