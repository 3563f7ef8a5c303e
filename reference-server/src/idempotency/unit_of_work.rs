//! The seam through which a create's own transactions carry its idempotency record: a
//! [`CreateStore`] that the layer wraps around the store for one keyed request.
//!
//! A keyed create would cost four commits if the layer wrote its claim and its completion apart
//! from the create's two transactions (docs/BENCHMARKS.md, leasebroker). So on the create route the
//! layer hands the handler a [`UnitOfWork`] instead of claiming first. The handler passes it to the
//! fleet as the store to write through, and it does what the layer would have done, in the same
//! round trips:
//! - [`CreateStore::reserve`] carries the layer's claim: the reservation's rows are written only when
//!   the claim inserts the record ([`Reserved::owned`]); otherwise nothing is written;
//! - [`CreateStore::finish`] carries the completion, the answer the route gives for the new worker
//!   ([`AnswerFor`]), when the record is this request's and that answer is stored.
//!
//! Neither the API nor the fleet writes or reads a claim: the fleet learns only that its reservation
//! wrote nothing because the key's record is someone else's ([`Reserved::owned`]), and stops. After
//! the handler, the layer reads how far the unit of work got ([`Progress`]) and does what is left:
//! claim itself (the handler answered before its first write), decide over a record someone else
//! holds, record the outcome, or nothing. Only a synchronous create with an atomic claim
//! ([`Rules::claim_is_atomic`](super::Rules::claim_is_atomic)) goes this way; an asynchronous one
//! writes its record as every other route does.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, StatusCode};

use super::record::encode;
use super::rules::Rules;
use crate::faults::{CrashPoint, Faults};
use crate::metrics::{KeyOutcome, Metrics};
use crate::store::{
    ClaimRequest, Completion, CreateStore, Finished, IdempotencyRecord, NewWorker, Reservation,
    Reserved, StoreError, Worker,
};

/// The answer a route gives for a create that ended in a worker: status, headers and body, as the
/// handler sends them (the layer stores exactly this, to replay it).
pub type AnswerFor = Arc<dyn Fn(&Worker) -> (StatusCode, HeaderMap, Bytes) + Send + Sync>;

/// How far a unit of work got.
#[derive(Debug, Clone)]
pub(crate) enum Progress {
    /// The handler never reserved (it answered before its first write): nothing is written.
    Unsent,
    /// The reservation was sent but its result never came back: its transaction failed, so the
    /// claim was rolled back with it (or, after an ambiguous commit, left in flight for the TTL).
    Taken,
    /// The claim inserted the record at `started_at`; the request owns it. `completed`: the last
    /// transaction wrote the completion.
    Owned {
        /// The claim token.
        started_at: i64,
        /// Whether the completion was written.
        completed: bool,
    },
    /// The claim found this existing record; nothing else was written.
    Existing(IdempotencyRecord),
}

/// One keyed create's unit of work: the store's two create transactions with the layer's claim and
/// completion in them (a request extension, `Arc<UnitOfWork>`, on the create route).
pub struct UnitOfWork {
    store: Arc<dyn CreateStore>,
    request: ClaimRequest,
    settings: UnitSettings,
    progress: Mutex<Progress>,
}

/// What a [`UnitOfWork`] is made of, besides the store and the claim.
pub(crate) struct UnitSettings {
    /// The route's answer for a new worker.
    pub answer: AnswerFor,
    /// The completed record's retention, ms.
    pub retention_ms: i64,
    /// Which answers are stored.
    pub rules: Arc<dyn Rules>,
    /// Where the process crashes (`before_complete`).
    pub faults: Arc<Faults>,
    /// Where a claim is counted.
    pub metrics: Arc<Metrics>,
}

impl UnitOfWork {
    /// A unit of work writing `request`'s claim through `store`.
    pub(crate) fn new(
        store: Arc<dyn CreateStore>,
        request: ClaimRequest,
        settings: UnitSettings,
    ) -> Self {
        Self {
            store,
            request,
            settings,
            progress: Mutex::new(Progress::Unsent),
        }
    }

    /// The claim as the layer would have written it.
    pub(crate) fn request(&self) -> &ClaimRequest {
        &self.request
    }

    /// How far the unit of work got.
    pub(crate) fn progress(&self) -> Progress {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the claim sent; false once it was (a second reservation carries none).
    fn take(&self) -> bool {
        let mut progress = self.lock();
        let first = matches!(*progress, Progress::Unsent);
        if first {
            *progress = Progress::Taken;
        }
        first
    }

    /// The completion for `worker`, when the record is this request's and the route's answer for
    /// it is stored (a terminal outcome).
    fn completion(&self, worker: &NewWorker) -> Option<Completion> {
        let Progress::Owned { started_at, .. } = *self.lock() else {
            return None;
        };
        let (status, headers, body) = (self.settings.answer)(&worker.stored());
        if !self.settings.rules.stores(status) {
            return None;
        }
        Some(Completion {
            scope: self.request.scope.clone(),
            started_at,
            response: encode(status, &headers, &body),
            expires_at: crate::clock::now_ms() + self.settings.retention_ms,
        })
    }
}

impl CreateStore for UnitOfWork {
    /// The reservation with the layer's claim in it (the first one only); its rows are written only
    /// when the claim inserts the record.
    fn reserve<'a>(
        &'a self,
        reservation: Reservation<'a>,
    ) -> BoxFuture<'a, Result<Reserved, StoreError>> {
        Box::pin(async move {
            if !self.take() {
                return self.store.reserve(reservation).await;
            }
            let reserved = self
                .store
                .reserve(Reservation {
                    claim: Some(&self.request),
                    ..reservation
                })
                .await?;
            if let Some(claim) = &reserved.claim {
                *self.lock() = if claim.inserted {
                    self.settings.metrics.outcome(KeyOutcome::Claimed);
                    Progress::Owned {
                        started_at: claim.record.started_at,
                        completed: false,
                    }
                } else {
                    Progress::Existing(claim.record.clone())
                };
            }
            Ok(reserved)
        })
    }

    /// The last transaction with the completion in it, when the record is this request's and the
    /// answer is stored; a `completion` the caller gives is written only otherwise.
    fn finish<'a>(
        &'a self,
        worker: &'a NewWorker,
        completion: Option<&'a Completion>,
    ) -> BoxFuture<'a, Result<Finished, StoreError>> {
        Box::pin(async move {
            let Some(own) = self.completion(worker) else {
                return self.store.finish(worker, completion).await;
            };
            self.settings.faults.crash_if(CrashPoint::BeforeComplete);
            let finished = self.store.finish(worker, Some(&own)).await?;
            if finished.completed {
                if let Progress::Owned { completed, .. } = &mut *self.lock() {
                    *completed = true;
                }
            }
            Ok(finished)
        })
    }
}
