//! Prometheus metrics, served in the text exposition format (OpenMetrics 1.0) at `GET /metrics` on the
//! admin listener.
//!
//! - `leasebroker_idempotency_outcomes_total{outcome}`: what the idempotency layer decided for a keyed
//!   request ([`KeyOutcome`]).
//! - `leasebroker_creates_total{result}`: runs of the create handler (`POST /v1/workers`), by
//!   [`CreateResult`]; a replay does not run it and is not counted here.
//! - `leasebroker_store_operation_seconds{operation}`: a histogram of how long one store call took
//!   (one statement or one transaction, from taking a connection to the last row), by the store
//!   trait's method name (`claim`, `complete`, `allocate_node`, …).
//! - `leasebroker_store_scripts_per_commit`: on SQLite, a histogram of how many transactions one
//!   commit committed: 1 for a script run alone, more for scripts that waited for the connection
//!   and were committed together (`store::batch`).
//!
//! Everything is in process memory: counts start at zero when leasebroker starts.

use std::fmt::Write as _;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What the idempotency layer decided for one keyed request (label `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyOutcome {
    /// `claimed`: the request owns the record and runs — a new record, or a failed record (or a
    /// terminal one past the retention window) taken over.
    Claimed,
    /// `replayed`: a completed record's response was replayed.
    Replayed,
    /// `in_flight_conflict`: `409 request-in-progress` — the record is in flight, or another retry won
    /// the take-over.
    InFlightConflict,
    /// `mismatch`: `409 key-reused-with-different-request` (another fingerprint).
    Mismatch,
    /// `reclaimed`: an in-flight record older than the in-flight TTL was taken over; the request runs
    /// and resumes the stuck attempt's side effects.
    Reclaimed,
    /// `failed`: an owned run ended without a storable outcome (a 5xx where the contract re-runs it, or
    /// a panic) and its record was marked failed.
    Failed,
}

impl KeyOutcome {
    /// Every outcome.
    pub const ALL: [Self; 6] = [
        Self::Claimed,
        Self::Replayed,
        Self::InFlightConflict,
        Self::Mismatch,
        Self::Reclaimed,
        Self::Failed,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Replayed => "replayed",
            Self::InFlightConflict => "in_flight_conflict",
            Self::Mismatch => "mismatch",
            Self::Reclaimed => "reclaimed",
            Self::Failed => "failed",
        }
    }
}

/// How a run of the create handler ended (label `result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateResult {
    /// `created`: 201 with the worker (new, or found again by a retry that resumed).
    Created,
    /// `error`: any error answer (pool exhausted, hypervisor error, invalid body, storage).
    Error,
}

impl CreateResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Error => "error",
        }
    }
}

/// A label value from a `&'static str`-valued enum.
macro_rules! label_value {
    ($($ty:ty),*) => {$(
        impl EncodeLabelValue for $ty {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
                encoder.write_str(self.as_str())
            }
        }
    )*};
}
label_value!(KeyOutcome, CreateResult);

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: KeyOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CreateLabels {
    result: CreateResult,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

/// The store latency buckets, in seconds: 100 µs doubling up to 3.3 s (16 buckets).
fn store_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
}

/// The scripts-per-commit buckets: 1, 2, 4, … 64 (the group commit's most, `store::batch`).
fn group_commit_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 7))
}

/// The store's metrics, shared by the store (which observes) and [`Metrics`] (which renders): the
/// latency of each store call, and on SQLite how many scripts each group commit committed. Cheap
/// to clone.
#[derive(Clone)]
pub struct StoreMetrics {
    latency: Family<OperationLabels, Histogram, fn() -> Histogram>,
    committed_together: Histogram,
}

impl StoreMetrics {
    /// Records that one call of store method `operation` took `elapsed`.
    pub fn observe(&self, operation: &'static str, elapsed: Duration) {
        self.latency
            .get_or_create(&OperationLabels { operation })
            .observe(elapsed.as_secs_f64());
    }

    /// Records that one commit committed `scripts` scripts (SQLite's group commit; 1 for a script
    /// run alone).
    pub fn committed_together(&self, scripts: usize) {
        self.committed_together.observe(scripts as f64);
    }
}

impl Default for StoreMetrics {
    fn default() -> Self {
        Self {
            latency: Family::new_with_constructor(store_histogram),
            committed_together: group_commit_histogram(),
        }
    }
}

impl std::fmt::Debug for StoreMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreMetrics")
    }
}

/// leasebroker's metrics and their registry.
pub struct Metrics {
    registry: Registry,
    outcomes: Family<OutcomeLabels, Counter>,
    creates: Family<CreateLabels, Counter>,
    store: StoreMetrics,
}

impl Metrics {
    /// The registry with every metric registered, at zero; `store` is the histogram the store observes.
    pub fn new(store: StoreMetrics) -> Self {
        let mut registry = Registry::default();
        let outcomes = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "leasebroker_idempotency_outcomes",
            "Keyed requests by what the idempotency layer decided",
            outcomes.clone(),
        );
        let creates = Family::<CreateLabels, Counter>::default();
        registry.register(
            "leasebroker_creates",
            "Runs of the create handler (POST /v1/workers) by result",
            creates.clone(),
        );
        registry.register_with_unit(
            "leasebroker_store_operation",
            "How long one store call (a statement or a transaction) took, by store method",
            Unit::Seconds,
            store.latency.clone(),
        );
        registry.register(
            "leasebroker_store_scripts_per_commit",
            "SQLite: how many transactions' scripts one commit committed (the group commit)",
            store.committed_together.clone(),
        );
        // Every label value from the start, so a scrape shows the zeros too.
        for outcome in KeyOutcome::ALL {
            outcomes.get_or_create_owned(&OutcomeLabels { outcome });
        }
        for result in [CreateResult::Created, CreateResult::Error] {
            creates.get_or_create_owned(&CreateLabels { result });
        }
        Self {
            registry,
            outcomes,
            creates,
            store,
        }
    }

    /// Counts one idempotency [`KeyOutcome`].
    pub fn outcome(&self, outcome: KeyOutcome) {
        self.outcomes
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Counts one run of the create handler.
    pub fn create(&self, result: CreateResult) {
        self.creates.get_or_create(&CreateLabels { result }).inc();
    }

    /// The store's metrics (what the store observes into).
    pub fn store_metrics(&self) -> &StoreMetrics {
        &self.store
    }

    /// The text exposition of every metric, ending with `# EOF`.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail; an encoder error would be a bug in a label.
        if let Err(err) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(error = %err, "encode the metrics");
        }
        text
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(StoreMetrics::default())
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}
