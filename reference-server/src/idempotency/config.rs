//! What the idempotency layer works with on a route: its settings ([`IdempotencyConfig`]), the
//! rules, stores, injections and metrics it shares with every route ([`LayerState`]), and where the
//! route writes its claim ([`ClaimSite`], chosen by the router per route).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};

use super::rules::Rules;
use crate::injection::Injections;
use crate::metrics::Metrics;
use crate::store::{CreateStore, RecordStore, UnguardedRecords, Worker};

/// How the layer behaves.
#[derive(Debug, Clone)]
pub struct IdempotencyConfig {
    /// How long a completed record is kept and replayed (default 24 h).
    pub retention: Duration,
    /// How long an in-flight record blocks its key before a retry may reclaim it (default 30 s).
    pub in_flight_ttl: Duration,
    /// Whether `POST` endpoints (create, reboot) require a key (400 `missing-idempotency-key`).
    pub require_key_on_post: bool,
    /// Whether `DELETE` requires a key.
    pub require_key_on_delete: bool,
    /// The seconds sent in `Retry-After` with `request-in-progress`.
    pub retry_after_secs: u64,
}

impl IdempotencyConfig {
    /// Whether a request with `method` must carry a key.
    pub(super) fn requires_key(&self, method: &Method) -> bool {
        if method == Method::DELETE {
            self.require_key_on_delete
        } else {
            self.require_key_on_post
        }
    }

    /// The retention window, ms.
    pub(super) fn retention_ms(&self) -> i64 {
        ms(self.retention)
    }

    /// The in-flight TTL, ms.
    pub(super) fn in_flight_ttl_ms(&self) -> i64 {
        ms(self.in_flight_ttl)
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// The answer a route gives for a create that ended in a worker: status, headers and body, as the
/// handler sends them (the layer stores exactly this, to replay it).
pub type AnswerFor = Arc<dyn Fn(&Worker) -> (StatusCode, HeaderMap, Bytes) + Send + Sync>;

/// Where a route's claim is written, which the router chooses per route.
#[derive(Clone)]
pub enum ClaimSite {
    /// In a statement of its own, before the handler runs (every route but the synchronous create).
    Alone,
    /// In the create's first transaction: the handler writes through a
    /// [`UnitOfWork`](super::UnitOfWork) over `creates`, which carries the claim in the
    /// reservation and the completion, the route's `answer` for the new worker, in the last
    /// transaction (`unit_of_work.rs`). Where the rules' claim is not atomic
    /// ([`Rules::claim_is_atomic`]), no transaction can carry it, and the claim is written alone.
    InCreate {
        /// The store whose two create transactions carry the record.
        creates: Arc<dyn CreateStore>,
        /// The answer the route gives for a new worker.
        answer: AnswerFor,
    },
}

/// What the idempotency layer works with on a route (cheap to clone): its settings, the rules it
/// follows, the record stores, the injections it crashes at, its metrics, and where the route's
/// claim is written.
#[derive(Clone)]
pub struct LayerState {
    /// The layer's settings.
    pub config: Arc<IdempotencyConfig>,
    /// The rules at each point a server could bend them
    /// ([`ArticleRules`](super::ArticleRules), or bent by the `--flaw`s).
    pub rules: Arc<dyn Rules>,
    /// The idempotency records.
    pub records: Arc<dyn RecordStore>,
    /// The same records without a claim, for a bent claim (`check-then-act`).
    pub unguarded: Arc<dyn UnguardedRecords>,
    /// The process's injections (a crash before the claim or the completion).
    pub injections: Arc<Injections>,
    /// The counters and histograms `GET /metrics` serves.
    pub metrics: Arc<Metrics>,
    /// Where this route's claim is written.
    pub site: ClaimSite,
}
