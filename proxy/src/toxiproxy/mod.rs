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

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use api::BODY_LIMIT;

/// The Toxiproxy API version served, as `GET /version` reports it: the Toxiproxy release whose
/// API (routes, fields, status codes) this module follows.
pub const VERSION: &str = "2.12.0";

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
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(err) = served {
                tracing::warn!(%err, "toxiproxy API stopped");
            }
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
