//! The proxy's Prometheus metrics, served by the control API as `GET /metrics` in the
//! OpenMetrics text format (`application/openmetrics-text; version=1.0.0`), and by the
//! Toxiproxy API as its own `GET /metrics` for the proxies it made (a connection is one exchange;
//! the toxics that acted are the `rule`, their type the `verb`).
//!
//! | name | type | labels | unit, meaning |
//! |---|---|---|---|
//! | `idemspec_proxy_requests_total` | counter | `outcome` | exchanges recorded in the event log (HTTP: requests, TCP: connections), by [`ExchangeEnd`] |
//! | `idemspec_proxy_faults_total` | counter | `rule`, `verb` | exchanges a rule's fault applied to, by rule name and fault verb (`drop_response`) |
//! | `idemspec_proxy_upstream_errors_total` | counter | – | exchanges that failed on the upstream side (unreachable, reset, broken body) |
//! | `idemspec_proxy_added_latency_seconds` | histogram | – | seconds from a request's arrival to its response head, less the time spent waiting for the upstream's answers: what the proxy itself (and a `delay` fault) added. Responses only; HTTP mode only |
//!
//! Every figure is counted from what the event log records, when it records it (an exchange is
//! counted once, when it ends), so the metrics and `GET /events` never disagree; a reset of the
//! event log does not reset them (Prometheus counters only go up).

use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::event::{ProxyEvent, Side};

/// The media type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How an exchange ended, the `outcome` label of `idemspec_proxy_requests_total`; the first
/// that holds, in this order.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // the label values are snake_case, as the event log's fields
pub enum ExchangeEnd {
    /// The exchange failed on the upstream side (the client got a 502, or a cut response).
    upstream_error,
    /// The client went away first (not because of a fault).
    client_disconnected,
    /// The request from the client could not be read (the client got a 400).
    downstream_error,
    /// The client got the complete response (the upstream's, or a `respond` fault's).
    complete,
    /// A fault ended it before a complete response (dropped, cut, reset).
    incomplete,
}

impl ExchangeEnd {
    const ALL: [ExchangeEnd; 5] = [
        ExchangeEnd::upstream_error,
        ExchangeEnd::client_disconnected,
        ExchangeEnd::downstream_error,
        ExchangeEnd::complete,
        ExchangeEnd::incomplete,
    ];

    /// How `event` ended.
    pub fn of(event: &ProxyEvent) -> Self {
        if event.error_side == Some(Side::Upstream) {
            ExchangeEnd::upstream_error
        } else if event.client_disconnected {
            ExchangeEnd::client_disconnected
        } else if event.error_side == Some(Side::Downstream) {
            ExchangeEnd::downstream_error
        } else if event.client_complete {
            ExchangeEnd::complete
        } else {
            ExchangeEnd::incomplete
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndLabels {
    outcome: ExchangeEnd,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    rule: String,
    verb: String,
}

/// One proxy's metrics (each proxy has its own registry, so proxies in one process do not mix).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Resolved once, in [`ExchangeEnd::ALL`]'s order: counting a request is one atomic add.
    outcomes: [Counter; 5],
    faults: Family<FaultLabels, Counter>,
    upstream_errors: Counter,
    added_latency: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("idemspec_proxy");
        let by_outcome = Family::<EndLabels, Counter>::default();
        let outcomes = ExchangeEnd::ALL
            .map(|outcome| by_outcome.get_or_create(&EndLabels { outcome }).clone());
        registry.register(
            "requests",
            "Exchanges recorded in the event log (HTTP: requests, TCP: connections), by how they ended",
            by_outcome,
        );
        let faults = Family::<FaultLabels, Counter>::default();
        registry.register(
            "faults",
            "Exchanges a rule's fault applied to, by rule name and fault verb",
            faults.clone(),
        );
        let upstream_errors = Counter::default();
        registry.register(
            "upstream_errors",
            "Exchanges that failed on the upstream side",
            upstream_errors.clone(),
        );
        // 10 µs to ~10 s in factors of 2 (21 buckets).
        let added_latency = Histogram::new(exponential_buckets(10e-6, 2.0, 21));
        registry.register_with_unit(
            "added_latency",
            "Time from a request's arrival to its response head, less the time spent waiting for the upstream",
            prometheus_client::registry::Unit::Seconds,
            added_latency.clone(),
        );
        Self {
            registry,
            outcomes,
            faults,
            upstream_errors,
            added_latency,
        }
    }
}

impl Metrics {
    /// Counts an exchange the event log records.
    pub(crate) fn record(&self, event: &ProxyEvent) {
        let outcome = ExchangeEnd::of(event);
        self.outcomes[ExchangeEnd::ALL
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(4)]
        .inc();
        if event.error_side == Some(Side::Upstream) {
            self.upstream_errors.inc();
        }
        if let (Some(rule), Some(verb)) = (&event.rule, &event.fault) {
            self.faults
                .get_or_create(&FaultLabels {
                    rule: rule.clone(),
                    verb: verb.clone(),
                })
                .inc();
        }
    }

    /// Observes what the proxy added to one response's latency.
    pub(crate) fn added_latency(&self, added: Duration) {
        self.added_latency.observe(added.as_secs_f64());
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]), ending in `# EOF`.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
