//! The accept loop shared by both modes: `run(listener, shared)` as in mini-redis, with graceful
//! shutdown (stop accepting, let in-flight exchanges finish for a grace period, then cut them).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use idemspec_scenarios::rules::Mode;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::event::EventLog;
use crate::http::Forwarder;
use crate::matcher::{RuleSet, TcpRuleSet};

/// State shared by every connection of one proxy.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) mode: Mode,
    /// Replaced as a whole; a reader clones the `Arc` and releases the lock before any await.
    pub(crate) http_rules: RwLock<Arc<RuleSet>>,
    pub(crate) tcp_rules: RwLock<Arc<TcpRuleSet>>,
    pub(crate) events: Arc<EventLog>,
    pub(crate) upstream: Upstream,
    /// Turns `true` once when the proxy shuts down.
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) grace: Duration,
}

/// Where requests or bytes go.
#[derive(Debug)]
pub(crate) enum Upstream {
    Http(Box<Forwarder>),
    Tcp(String),
}

impl Shared {
    pub(crate) fn http_rules(&self) -> Arc<RuleSet> {
        self.http_rules
            .read()
            .expect("rule lock is never poisoned")
            .clone()
    }

    pub(crate) fn tcp_rules(&self) -> Arc<TcpRuleSet> {
        self.tcp_rules
            .read()
            .expect("rule lock is never poisoned")
            .clone()
    }

    /// Resolves when the proxy shuts down.
    pub(crate) async fn shutting_down(&self) {
        let mut rx = self.shutdown.clone();
        // An Err means the handle is gone, which is a shutdown too.
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

/// Accepts connections until shutdown, then drains them.
pub(crate) async fn run(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // Latency matters more than packet count for a test proxy.
                    let _ = stream.set_nodelay(true);
                    let shared = shared.clone();
                    match shared.mode {
                        Mode::Http => conns.spawn(crate::http::serve_connection(stream, shared)),
                        Mode::Tcp => conns.spawn(crate::tcp::serve_connection(stream, shared)),
                    };
                }
                Err(err) => {
                    // Typically EMFILE; back off instead of spinning.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            () = shared.shutting_down() => break,
        }
    }
    drop(listener);
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
}
