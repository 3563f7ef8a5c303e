//! Controlling a running proxy: [`ProxyHandle`] (made by [`crate::start`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemspec_scenarios::rules::{Mode, Rule, TcpRule};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::ProxyError;
use crate::event::ProxyEvent;
use crate::http::Shared;
use crate::matcher::{unique_names, CompiledRule, RuleSet, TcpRuleSet};

/// A running proxy. Cheap to clone; every clone controls the same proxy.
///
/// The proxy runs until [`ProxyHandle::shutdown`] (dropping every handle does not stop it).
#[derive(Debug, Clone)]
pub struct ProxyHandle {
    running: Arc<RunningProxy>,
}

/// What every clone of a handle controls: the proxy's shared state, its addresses, its stop
/// signal and its tasks.
#[derive(Debug)]
struct RunningProxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    control_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl ProxyHandle {
    /// A handle on the proxy `shared`, listening on `addr` (and `control_addr`); `stop` tells
    /// it to shut down. Its tasks are handed over with [`ProxyHandle::hold`].
    pub(crate) fn new(
        shared: Arc<Shared>,
        addr: SocketAddr,
        control_addr: Option<SocketAddr>,
        stop: watch::Sender<bool>,
    ) -> Self {
        Self {
            running: Arc::new(RunningProxy {
                shared,
                addr,
                control_addr,
                stop,
                tasks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Keeps the proxy's tasks, for [`ProxyHandle::shutdown`] to wait for.
    pub(crate) fn hold(&self, tasks: Vec<JoinHandle<()>>) {
        *self
            .running
            .tasks
            .lock()
            .expect("task lock is never poisoned") = tasks;
    }

    /// The bound address downstream clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.running.addr
    }

    /// The bound address of the control API, when one was asked for.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        self.running.control_addr
    }

    /// HTTP or TCP mode.
    pub fn mode(&self) -> Mode {
        self.running.shared.mode
    }

    /// The HTTP rules in force, in order.
    pub fn rules(&self) -> Vec<Rule> {
        self.running.shared.http_rules().to_rules()
    }

    /// The TCP rules in force, in order.
    pub fn tcp_rules(&self) -> Vec<TcpRule> {
        self.running.shared.tcp_rules().to_rules()
    }

    fn require(&self, mode: Mode, given: &'static str) -> Result<(), ProxyError> {
        if self.mode() == mode {
            Ok(())
        } else {
            Err(ProxyError::wrong_mode(given, self.mode()))
        }
    }

    fn replace_http(&self, set: RuleSet) {
        let replaced: Result<(), ProxyError> = self.running.shared.replace_http_rules(|_| Ok(set));
        replaced.expect("a replacement that cannot fail");
    }

    /// Replaces the HTTP rules atomically, with fresh counters. Requests already in flight keep
    /// the rule they matched. Errors: an invalid rule, or a TCP-mode proxy.
    pub fn set_rules(&self, rules: Vec<Rule>) -> Result<(), ProxyError> {
        self.require(Mode::Http, "http")?;
        self.replace_http(RuleSet::compile(rules)?);
        Ok(())
    }

    /// Appends one HTTP rule; the other rules keep their counters. Errors: an invalid rule, a
    /// rule of that name already in force, or a TCP-mode proxy.
    pub fn add_rule(&self, rule: Rule) -> Result<(), ProxyError> {
        self.require(Mode::Http, "http")?;
        let compiled = Arc::new(CompiledRule::new(rule)?);
        self.running.shared.replace_http_rules(|current| {
            let names = current
                .rules
                .iter()
                .map(|r| &r.rule)
                .chain([&compiled.rule]);
            unique_names(names.map(|r| r.name.as_str()))?;
            let mut rules = current.rules.clone();
            rules.push(compiled);
            Ok(RuleSet { rules })
        })
    }

    /// Replaces the TCP rules atomically, with fresh counters. Errors: an invalid rule, two
    /// rules with one name, or an HTTP-mode proxy.
    pub fn set_tcp_rules(&self, rules: Vec<TcpRule>) -> Result<(), ProxyError> {
        self.require(Mode::Tcp, "tcp")?;
        let set = TcpRuleSet::compile(rules)?;
        *self
            .running
            .shared
            .tcp_rules
            .write()
            .expect("rule lock is never poisoned") = Arc::new(set);
        Ok(())
    }

    /// Appends one TCP rule, with fresh counters for all (as [`ProxyHandle::set_tcp_rules`]).
    /// Errors: as there, and a rule of that name already in force.
    pub fn add_tcp_rule(&self, rule: TcpRule) -> Result<(), ProxyError> {
        self.require(Mode::Tcp, "tcp")?;
        let mut guard = self
            .running
            .shared
            .tcp_rules
            .write()
            .expect("rule lock is never poisoned");
        let mut rules = guard.to_rules();
        rules.push(rule);
        *guard = Arc::new(TcpRuleSet::compile(rules)?);
        Ok(())
    }

    /// Removes every rule (of either mode): all traffic passes through.
    pub fn clear_rules(&self) {
        self.replace_http(RuleSet::default());
        *self
            .running
            .shared
            .tcp_rules
            .write()
            .expect("rule lock is never poisoned") = Arc::new(TcpRuleSet::default());
    }

    /// Every retained event, in order.
    pub fn events(&self) -> Vec<ProxyEvent> {
        self.running.shared.events.all()
    }

    /// The retained events with `seq > since`, in order.
    pub fn events_since(&self, since: u64) -> Vec<ProxyEvent> {
        self.running.shared.events.since(since)
    }

    /// The first `limit` retained events with `seq > since`, in order (`GET /events`'s page).
    pub fn events_page(&self, since: u64, limit: usize) -> Vec<ProxyEvent> {
        self.running.shared.events.page(since, limit)
    }

    /// The proxy's metrics in the OpenMetrics text format ([`crate::metrics`]).
    pub fn metrics_text(&self) -> String {
        self.running.shared.events.metrics().encode()
    }

    /// The seq of the newest event (0 if none yet): a cursor for [`ProxyHandle::events_since`].
    pub fn last_seq(&self) -> u64 {
        self.running.shared.events.last_seq()
    }

    /// Resets every rule's counters (`nth`, the seeded sequence, `times`) and forgets the
    /// retained events; seqs keep counting.
    pub fn reset(&self) {
        let shared = &self.running.shared;
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
        self.running.stop.send_replace(true);
        let tasks = std::mem::take(
            &mut *self
                .running
                .tasks
                .lock()
                .expect("task lock is never poisoned"),
        );
        let deadline =
            tokio::time::Instant::now() + self.running.shared.grace + Duration::from_secs(1);
        for mut task in tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                tracing::warn!("shutdown grace period over, cutting the control API");
                task.abort();
            }
        }
    }
}
