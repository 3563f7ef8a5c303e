//! The state every connection of one proxy shares ([`Shared`]: its mode, its rule sets, its event
//! log, its upstream, its shutdown signal and limits) and where its requests go ([`Upstream`]).
//!
//! It lives with the HTTP code because all of it but the TCP rules serves HTTP (the forwarder, the
//! key's place, the live connections); a TCP-mode connection (`crate::tcp`) reads its mode-neutral
//! part. The accept loop that hands connections to either is `crate::server`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use idemspec_scenarios::rules::Mode;
use tokio::sync::watch;

use super::{ConnRegistry, Forwarder, RequestKey};
use crate::event_log::EventLog;
use crate::matcher::{RuleSet, TcpRuleSet};

/// State shared by every connection of one proxy.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) mode: Mode,
    /// Replaced as a whole (through [`Shared::replace_http_rules`]); a reader clones the `Arc`
    /// and releases the lock before any await.
    http_rules: RwLock<Arc<RuleSet>>,
    /// Whether `http_rules` is non-empty, so a pass-through request touches no shared lock or
    /// reference count. Written under the write lock, after the set.
    any_http_rules: AtomicBool,
    pub(crate) tcp_rules: RwLock<Arc<TcpRuleSet>>,
    pub(crate) events: Arc<EventLog>,
    pub(crate) upstream: Upstream,
    /// Turns `true` once when the proxy shuts down.
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) grace: Duration,
    /// How long a downstream connection may take to send a request head; `None`: no limit.
    pub(crate) header_read_timeout: Option<Duration>,
    /// The single-threaded runtimes connections are pinned to; `None`: the caller's runtime.
    pub(crate) io_threads: Option<crate::io_threads::IoThreads>,
    /// Where each request's key is ([`crate::ProxyConfig::key_at`]).
    pub(crate) key: RequestKey,
    /// The live HTTP downstream connections, told when the proxy shuts down.
    pub(crate) http_conns: Arc<ConnRegistry>,
    /// TLS on the proxy's port ([`crate::ProxyConfig::listen_tls`]); `None`: plain HTTP.
    pub(crate) listen_tls: Option<Arc<idemspec_tls::rustls::ServerConfig>>,
}

/// Where requests or bytes go.
#[derive(Debug)]
pub(crate) enum Upstream {
    Http(Box<Forwarder>),
    Tcp(String),
}

impl Shared {
    /// Shared state for a proxy with these rule sets, event log (and the header it records as a
    /// request's key), upstream, shutdown signal, and times (the shutdown's grace period, the
    /// header-read timeout).
    pub(crate) fn new(
        mode: Mode,
        (http_rules, tcp_rules): (RuleSet, TcpRuleSet),
        (events, key): (Arc<EventLog>, RequestKey),
        upstream: Upstream,
        shutdown: watch::Receiver<bool>,
        (grace, header_read_timeout): (Duration, Option<Duration>),
        io_threads: Option<crate::io_threads::IoThreads>,
    ) -> Self {
        Self {
            mode,
            any_http_rules: AtomicBool::new(!http_rules.rules.is_empty()),
            http_rules: RwLock::new(Arc::new(http_rules)),
            tcp_rules: RwLock::new(Arc::new(tcp_rules)),
            events,
            upstream,
            shutdown,
            grace,
            header_read_timeout,
            io_threads,
            key,
            http_conns: Arc::default(),
            listen_tls: None,
        }
    }

    /// Replaces the HTTP rule set with `make(current)`, atomically; an error leaves it as it was.
    pub(crate) fn replace_http_rules<E>(
        &self,
        make: impl FnOnce(&RuleSet) -> Result<RuleSet, E>,
    ) -> Result<(), E> {
        let mut guard = self
            .http_rules
            .write()
            .expect("rule lock is never poisoned");
        let set = make(&guard)?;
        let any = !set.rules.is_empty();
        *guard = Arc::new(set);
        self.any_http_rules.store(any, Ordering::Release);
        Ok(())
    }

    /// The rules a new request is matched against; `None` when there are none (pass-through).
    /// A request that races a rule change sees the set from before or after it, never a mix.
    pub(crate) fn http_rules_for_request(&self) -> Option<Arc<RuleSet>> {
        if self.any_http_rules.load(Ordering::Acquire) {
            Some(self.http_rules())
        } else {
            None
        }
    }

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
