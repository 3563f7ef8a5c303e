//! The per-request state ([`RequestCtx`]): the event being built while the request moves through
//! the phases. A fault's settings live in the rule; everything about this one request lives here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::header::HeaderName;
use http::request::Parts;
use idemspec_scenarios::rules::Rule;

use super::conn_signals::ConnSignals;
use super::receipt::Receipt;
use crate::event::{ProxyEvent, Side};
use crate::event_log::EventLog;

/// The request header whose value tags an event (`X-Idemspec-Step: lost-1`).
const STEP_HEADER: HeaderName = HeaderName::from_static("x-idemspec-step");
/// The `Idempotency-Key` request header (IETF draft-ietf-httpapi-idempotency-key-header §2).
pub(crate) const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// One request's context. Recorded in the event log exactly once: explicitly by [`commit`]
/// when the exchange ends as planned, or on drop, which means the downstream client went away
/// (hyper drops the in-flight service future and body when the connection dies).
///
/// [`commit`]: RequestCtx::commit
#[derive(Debug)]
pub(crate) struct RequestCtx {
    pub(crate) event: ProxyEvent,
    started: Instant,
    /// Time spent waiting for upstream answers (send to response head), not the proxy's.
    upstream_wait: Duration,
    /// Whether the response head's latency was observed.
    answered: bool,
    receipt: Arc<Receipt>,
    committed: bool,
    /// The downstream connection the request came on: a fault closes or resets it through
    /// this, and the context tells its header-read clock when the request begins and ends.
    conn: Arc<ConnSignals>,
}

/// A header's value as text; the name is pre-parsed, so the lookup does not re-validate it.
fn header(parts: &Parts, name: &HeaderName) -> Option<String> {
    parts
        .headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

impl RequestCtx {
    /// The context of the request with head `parts`, arriving on `conn`, recording `key` as its
    /// key (the body's is filled in once read); its event goes to `log`. From now until the context is dropped
    /// (with the response body, when hyper is done with it), the connection's header-read clock is
    /// stopped.
    pub(crate) fn new(
        log: Arc<EventLog>,
        parts: &Parts,
        key: Option<String>,
        conn: Arc<ConnSignals>,
    ) -> Self {
        let path = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
        Self::begin(
            log,
            parts.method.as_str().to_owned(),
            path,
            key,
            header(parts, &STEP_HEADER),
            conn,
        )
    }

    /// The context of a request read without hyper (the fast path): its method, its
    /// request-target as sent, and the values of its key header and `X-Idemspec-Step`; otherwise
    /// as [`RequestCtx::new`].
    pub(crate) fn begin(
        log: Arc<EventLog>,
        method: String,
        path: String,
        key: Option<String>,
        step: Option<String>,
        conn: Arc<ConnSignals>,
    ) -> Self {
        conn.head.busy();
        let mut event = ProxyEvent::starting_now();
        event.method = method;
        event.path = path;
        event.idempotency_key = key;
        event.step = step;
        Self {
            event,
            started: Instant::now(),
            upstream_wait: Duration::ZERO,
            answered: false,
            receipt: Receipt::new(log),
            committed: false,
            conn,
        }
    }

    /// The downstream connection the request came on.
    pub(crate) fn conn(&self) -> &Arc<ConnSignals> {
        &self.conn
    }

    /// What the request's upstream exchanges report to, even after the client left.
    pub(crate) fn receipt(&self) -> &Arc<Receipt> {
        &self.receipt
    }

    /// Notes that `rule` applies, and logs the fault.
    pub(crate) fn apply(&mut self, rule: &Rule) {
        self.event.rule = Some(rule.name.clone());
        self.event.fault = Some(rule.fault.verb().to_owned());
        tracing::info!(
            rule = %rule.name,
            fault = rule.fault.verb(),
            method = %self.event.method,
            path = %self.event.path,
            step = self.event.step.as_deref().unwrap_or(""),
            "applying fault"
        );
    }

    /// Adds `wait` to the time spent waiting for the upstream.
    pub(crate) fn waited(&mut self, wait: Duration) {
        self.upstream_wait += wait;
    }

    /// The response head is on its way to the client: observes what the proxy added to its
    /// latency (arrival to now, less the upstream waits) in the metrics, once.
    pub(crate) fn answered(&mut self) {
        if !self.answered {
            self.answered = true;
            let added = self.started.elapsed().saturating_sub(self.upstream_wait);
            self.receipt.log().metrics().added_latency(added);
        }
    }

    /// Records a failure and the side it happened on.
    pub(crate) fn failed(&mut self, side: Side, error: String) {
        tracing::debug!(?side, %error, path = %self.event.path, "exchange failed");
        self.event.error_side = Some(side);
        self.event.upstream_error = Some(error);
    }

    /// Records the event now (idempotent).
    pub(crate) fn commit(&mut self) {
        if let Some(event) = self.take() {
            self.receipt.log().push(event);
        }
    }

    /// The finished event, once: nothing reads it after its commit, so it moves out.
    fn take(&mut self) -> Option<ProxyEvent> {
        if self.committed {
            return None;
        }
        self.committed = true;
        self.event.duration_ms = self.started.elapsed().as_millis() as u64;
        Some(std::mem::replace(&mut self.event, ProxyEvent::EMPTY))
    }

    /// The response reached the client completely.
    pub(crate) fn complete(&mut self) {
        self.event.client_complete = true;
        self.commit();
    }
}

impl Drop for RequestCtx {
    fn drop(&mut self) {
        self.conn.head.idle();
        if !self.committed {
            self.event.client_disconnected = true;
            if self.event.error_side.is_none() {
                self.event.error_side = Some(Side::Downstream);
            }
            tracing::debug!(path = %self.event.path, "downstream client went away");
            // An exchange may still be at the upstream: the receipt counts it, and records
            // the upstream's status when it comes.
            if let Some(event) = self.take() {
                self.receipt.record_orphan(event);
            }
        }
    }
}
