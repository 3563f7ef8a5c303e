//! Starting a proxy and controlling it: [`start`] and [`ProxyHandle`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemspec_scenarios::rules::{check_upstream, Mode, Rule, TcpRule};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::ProxyConfig;
use crate::error::ProxyError;
use crate::event::{EventLog, ProxyEvent};
use crate::http::Forwarder;
use crate::matcher::{CompiledRule, RuleSet, TcpRuleSet};
use crate::server::{Shared, Upstream};

/// A running proxy. Cheap to clone; every clone controls the same proxy.
///
/// The proxy runs until [`ProxyHandle::shutdown`] (dropping every handle does not stop it).
#[derive(Debug, Clone)]
pub struct ProxyHandle {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<Shared>,
    addr: SocketAddr,
    control_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, ProxyError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ProxyError::Bind { addr, source })
}

/// Starts a proxy: binds `config.listen` (and `config.control`), then serves in the background.
///
/// Errors: the address cannot be bound, the upstream does not suit the mode, a rule is invalid,
/// or rules of the other mode were given.
pub async fn start(config: ProxyConfig) -> Result<ProxyHandle, ProxyError> {
    let upstream = match config.mode {
        Mode::Http => Upstream::Http(Box::new(Forwarder::new(&config.upstream)?)),
        Mode::Tcp => {
            check_upstream(Mode::Tcp, &config.upstream).map_err(ProxyError::Upstream)?;
            Upstream::Tcp(config.upstream.clone())
        }
    };
    match config.mode {
        Mode::Http if !config.tcp_rules.is_empty() => return Err(wrong_mode("tcp", Mode::Http)),
        Mode::Tcp if !config.rules.is_empty() => return Err(wrong_mode("http", Mode::Tcp)),
        _ => {}
    }
    if config.io_threads > ProxyConfig::MAX_IO_THREADS {
        return Err(ProxyError::IoThreads {
            threads: config.io_threads,
            reason: format!(
                "at most {} (one per CPU is the default)",
                ProxyConfig::MAX_IO_THREADS
            ),
        });
    }
    let http_rules = RuleSet::compile(config.rules)?;
    let tcp_rules = TcpRuleSet::compile(config.tcp_rules)?;
    let listener = bind(config.listen).await?;
    let addr = listener.local_addr().map_err(|source| ProxyError::Bind {
        addr: config.listen,
        source,
    })?;
    let control = match config.control {
        Some(c) => Some(bind(c).await?),
        None => None,
    };
    let workers = match config.io_threads {
        0 => None,
        n => Some(
            crate::workers::Workers::start(n).map_err(|e| ProxyError::IoThreads {
                threads: n,
                reason: e.to_string(),
            })?,
        ),
    };
    let (stop, stopped) = watch::channel(false);
    let shared = Arc::new(Shared::new(
        config.mode,
        (http_rules, tcp_rules),
        Arc::new(EventLog::new(config.event_capacity)),
        upstream,
        stopped,
        config.shutdown_grace,
        workers,
    ));
    let mut tasks = vec![tokio::spawn(crate::server::run(listener, shared.clone()))];
    let control_addr = control.as_ref().and_then(|l| l.local_addr().ok());
    let handle = ProxyHandle {
        inner: Arc::new(Inner {
            shared: shared.clone(),
            addr,
            control_addr,
            stop,
            tasks: Mutex::new(Vec::new()),
        }),
    };
    if let Some(listener) = control {
        let app = crate::control::router(handle.clone());
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            let serve = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shared.shutting_down().await });
            if let Err(err) = serve.await {
                tracing::warn!(error = %err, "control API stopped");
            }
        }));
    }
    *handle
        .inner
        .tasks
        .lock()
        .expect("task lock is never poisoned") = tasks;
    tracing::info!(%addr, upstream = %config.upstream, mode = ?config.mode, "idemspec-proxy started");
    Ok(handle)
}

fn wrong_mode(given: &'static str, mode: Mode) -> ProxyError {
    ProxyError::WrongMode {
        given,
        mode: match mode {
            Mode::Http => "http",
            Mode::Tcp => "tcp",
        },
    }
}

impl ProxyHandle {
    /// The bound address downstream clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The bound address of the control API, when one was asked for.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        self.inner.control_addr
    }

    /// HTTP or TCP mode.
    pub fn mode(&self) -> Mode {
        self.inner.shared.mode
    }

    /// The HTTP rules in force, in order.
    pub fn rules(&self) -> Vec<Rule> {
        self.inner.shared.http_rules().to_rules()
    }

    /// The TCP rules in force, in order.
    pub fn tcp_rules(&self) -> Vec<TcpRule> {
        self.inner.shared.tcp_rules().to_rules()
    }

    fn require(&self, mode: Mode, given: &'static str) -> Result<(), ProxyError> {
        if self.mode() == mode {
            Ok(())
        } else {
            Err(wrong_mode(given, self.mode()))
        }
    }

    fn replace_http(&self, set: RuleSet) {
        self.inner.shared.replace_http_rules(|_| set);
    }

    /// Replaces the HTTP rules atomically, with fresh counters. Requests already in flight keep
    /// the rule they matched. Errors: an invalid rule, or a TCP-mode proxy.
    pub fn set_rules(&self, rules: Vec<Rule>) -> Result<(), ProxyError> {
        self.require(Mode::Http, "http")?;
        self.replace_http(RuleSet::compile(rules)?);
        Ok(())
    }

    /// Appends one HTTP rule; the other rules keep their counters.
    pub fn add_rule(&self, rule: Rule) -> Result<(), ProxyError> {
        self.require(Mode::Http, "http")?;
        let compiled = Arc::new(CompiledRule::new(rule)?);
        self.inner.shared.replace_http_rules(|current| {
            let mut rules = current.rules.clone();
            rules.push(compiled);
            RuleSet { rules }
        });
        Ok(())
    }

    /// Replaces the TCP rules atomically, with fresh counters. Errors: an HTTP-mode proxy.
    pub fn set_tcp_rules(&self, rules: Vec<TcpRule>) -> Result<(), ProxyError> {
        self.require(Mode::Tcp, "tcp")?;
        let set = TcpRuleSet::compile(rules)?;
        *self
            .inner
            .shared
            .tcp_rules
            .write()
            .expect("rule lock is never poisoned") = Arc::new(set);
        Ok(())
    }

    /// Removes every rule (of either mode): all traffic passes through.
    pub fn clear_rules(&self) {
        self.replace_http(RuleSet::default());
        *self
            .inner
            .shared
            .tcp_rules
            .write()
            .expect("rule lock is never poisoned") = Arc::new(TcpRuleSet::default());
    }

    /// Every retained event, in order.
    pub fn events(&self) -> Vec<ProxyEvent> {
        self.inner.shared.events.all()
    }

    /// The retained events with `seq > since`, in order.
    pub fn events_since(&self, since: u64) -> Vec<ProxyEvent> {
        self.inner.shared.events.since(since)
    }

    /// The seq of the newest event (0 if none yet): a cursor for [`ProxyHandle::events_since`].
    pub fn last_seq(&self) -> u64 {
        self.inner.shared.events.last_seq()
    }

    /// Resets every rule's counters (`nth`, the seeded sequence, `times`) and forgets the
    /// retained events; seqs keep counting.
    pub fn reset(&self) {
        let shared = &self.inner.shared;
        for rule in &shared.http_rules().rules {
            rule.gate.reset();
        }
        for rule in &shared.tcp_rules().rules {
            rule.gate.reset();
        }
        shared.events.clear();
    }

    /// Stops accepting, lets in-flight exchanges finish (up to the configured grace period; hung
    /// requests are released at once), and returns when everything has stopped. Idempotent.
    ///
    /// Bounded: what is still running when the grace period (plus a second) is over — a control
    /// API client that never finishes its request, say — is cut.
    pub async fn shutdown(&self) {
        self.inner.stop.send_replace(true);
        let tasks = std::mem::take(
            &mut *self
                .inner
                .tasks
                .lock()
                .expect("task lock is never poisoned"),
        );
        let deadline =
            tokio::time::Instant::now() + self.inner.shared.grace + Duration::from_secs(1);
        for mut task in tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                tracing::warn!("shutdown grace period over, cutting the control API");
                task.abort();
            }
        }
    }
}
