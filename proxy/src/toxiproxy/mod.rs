//! A Toxiproxy-compatible control API (`idemspec proxy --toxiproxy-api ADDR`): Toxiproxy's REST
//! surface over per-connection TCP relays, so that Toxiproxy's own clients (toxiproxy-python,
//! toxiproxy-node-client, Testcontainers' Toxiproxy module) drive idemspec unchanged. Every
//! proxy made through it is a TCP relay on its own listen address; its toxics act on the bytes.
//! Per-request HTTP faults stay idemspec's own rules (`control`, `--control`).
//!
//! Layout: `api` (routes, status codes, bodies), `error` (Toxiproxy's error body as a problem
//! document), `registry` (the proxies and their accept loops), `link` (one relayed connection and
//! its toxic chain), `toxics/` (one file per toxic type). `docs/toxiproxy.md` lists what is
//! served and every deliberate difference from Toxiproxy.

mod api;
mod error;
mod link;
mod registry;
mod toxics;

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

pub use api::BODY_LIMIT;

/// The Toxiproxy API version served, as `GET /version` reports it: the Toxiproxy release whose
/// API (routes, fields, status codes) this module follows.
pub const VERSION: &str = "2.12.0";

/// How long a client may take to send a request head, as Toxiproxy's read timeout (15 s); a
/// slower one has its connection closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves `app` on `listener`, one HTTP/1.1 connection per task, until `stopped`; then closes
/// every connection.
async fn serve(listener: TcpListener, app: axum::Router, mut stopped: oneshot::Receiver<()>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            Some(_) = conns.join_next() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let service = TowerToHyperService::new(app.clone());
                conns.spawn(async move {
                    let mut http = hyper::server::conn::http1::Builder::new();
                    http.timer(TokioTimer::new())
                        .header_read_timeout(HEADER_READ_TIMEOUT);
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
    }
    drop(listener);
    conns.shutdown().await;
}

/// A running Toxiproxy API server.
#[derive(Debug)]
pub struct ToxiproxyServer {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl ToxiproxyServer {
    /// Binds `addr` (port 0 for a free one) and serves the API on it.
    ///
    /// Errors: the address cannot be bound.
    pub async fn start(addr: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let registry = Arc::new(registry::Registry::default());
        let app = api::router(registry.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            serve(listener, app, stopped).await;
            registry.stop_all().await;
        });
        Ok(Self { addr, stop, task })
    }

    /// The address the API is served on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the API and every proxy it made, closing their connections.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}
