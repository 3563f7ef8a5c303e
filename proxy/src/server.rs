//! The accept loop shared by both modes: `run(listener, shared)` as in mini-redis, with graceful
//! shutdown (stop accepting, let in-flight exchanges finish for a grace period, then cut them).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use idemspec_scenarios::rules::Mode;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::event_log::EventLog;
use crate::http::Forwarder;
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
    pub(crate) key: crate::http::RequestKey,
    /// The live HTTP downstream connections, told when the proxy shuts down.
    pub(crate) http_conns: crate::http::ConnRegistry,
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
        (events, key): (Arc<EventLog>, crate::http::RequestKey),
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
            http_conns: crate::http::ConnRegistry::default(),
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
