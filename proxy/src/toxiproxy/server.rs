//! The Toxiproxy API server: binds, serves the API's connections, and stops every proxy it made.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use idemspec_scenarios::rules::Mode;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::event::ProxyEvent;
use crate::event_log::EventLog;
use crate::http::{Shared, Upstream};
use crate::server::accept_until_shutdown;
use crate::ProxyConfig;

use super::{api, registry};

/// How long a client may take to send a request head, as Toxiproxy's read timeout (15 s); a
/// slower one gets `408` with a problem body and its connection is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);

/// A running Toxiproxy API server.
#[derive(Debug)]
pub struct ToxiproxyServer {
    addr: SocketAddr,
    /// The server's state as the proxy's connections know it: the event log, the I/O threads,
    /// the shutdown signal and the header-read timeout of the API's connections. Its `upstream`
    /// is empty: each proxy has its own.
    host: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl ToxiproxyServer {
    /// Binds `addr` (port 0 for a free one) and serves the API on it, with one I/O thread per
    /// CPU for the proxies' connections.
    ///
    /// Errors: the address cannot be bound, a thread cannot be started.
    pub async fn start(addr: SocketAddr) -> std::io::Result<Self> {
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self::start_with_threads(addr, threads).await
    }

    /// As [`ToxiproxyServer::start`], with `io_threads` threads serving the proxies'
    /// connections (each a single-threaded runtime, a connection pinned to one, as
    /// [`ProxyConfig::io_threads`]); 0 serves them on the caller's runtime.
    ///
    /// Errors: the address cannot be bound, a thread cannot be started.
    pub async fn start_with_threads(addr: SocketAddr, io_threads: usize) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let io_threads = match io_threads {
            0 => None,
            n => Some(crate::io_threads::IoThreads::start(n)?),
        };
        let defaults = ProxyConfig::default();
        let (stop, stopped) = watch::channel(false);
        let host = Arc::new(Shared::new(
            Mode::Tcp,
            Default::default(),
            (
                Arc::new(EventLog::new(defaults.event_capacity)),
                crate::http::RequestKey::new(defaults.key_at)
                    .expect("the default key header is a header name"),
            ),
            Upstream::Tcp(String::new()),
            stopped,
            (defaults.shutdown_grace, Some(HEADER_READ_TIMEOUT)),
            io_threads,
        ));
        let task = tokio::spawn(serve(listener, host.clone()));
        Ok(Self {
            addr,
            host,
            stop,
            task,
        })
    }

    /// The address the API is served on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The events of the proxies' connections (one per connection, `proxy` naming the proxy)
    /// with `seq > since`, oldest first.
    pub fn events_since(&self, since: u64) -> Vec<ProxyEvent> {
        self.host.events.since(since)
    }

    /// Stops the API and every proxy it made, closing their connections.
    pub async fn shutdown(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
    }
}

/// Serves the API on `listener` until `host` shuts down, each connection as the control API's
/// (`http::serve_control`: a problem body for hyper's own rejections, the header-read timeout,
/// the lingering close); then stops every proxy and closes every connection.
async fn serve(listener: TcpListener, host: Arc<Shared>) {
    let registry = Arc::new(registry::Registry::new(host.clone()));
    let app = api::router(registry.clone());
    let sweep = tokio::spawn(crate::http::sweep_slow_heads(
        host.clone(),
        HEADER_READ_TIMEOUT,
    ));
    let mut conns = accept_until_shutdown(listener, &host, "toxiproxy API", |conns, stream| {
        conns.spawn(crate::http::serve_control(
            stream,
            host.clone(),
            app.clone(),
        ));
    })
    .await;
    host.http_conns.shutdown_all();
    registry.stop_all().await;
    let drained = tokio::time::timeout(host.grace, async {
        while conns.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        conns.shutdown().await;
    }
    let _ = sweep.await;
    if let Some(threads) = &host.io_threads {
        threads.stop();
    }
}
