//! The seam through which a create's own transactions carry its idempotency record: a
//! [`CreateStore`] that the layer wraps around the store for one keyed request.
//!
//! A keyed create would cost four commits if the layer wrote its claim and its completion apart
//! from the create's two transactions (docs/BENCHMARKS.md, leasebroker). So on a route whose
//! [`ClaimSite`](super::ClaimSite) is the create, the layer hands the handler a [`UnitOfWork`]
//! instead of claiming first. The handler passes it to the fleet as the store to write through,
//! and it does what the layer would have done, in the same round trips:
//! - [`CreateStore::reserve`] carries the layer's claim: the reservation's rows are written only when
//!   the claim inserts the record ([`Reserved::owned`]); otherwise nothing is written. The moment
//!   that write returns, the unit of work reports the claim's outcome to the layer ([`Reported`]);
//! - [`CreateStore::finish`] carries the completion, the answer the route gives for the new worker
//!   ([`AnswerFor`]), built by the layer's one completion builder, when the record is this
//!   request's and that answer is stored.
//!
//! Neither the API nor the fleet writes or reads a claim: the fleet learns only that its reservation
//! wrote nothing because the key's record is someone else's ([`Reserved::owned`]), and stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock, PoisonError};

use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::completion::OwnedClaim;
use super::config::{AnswerFor, LayerState};
use crate::store::{
    ClaimRequest, Completion, CreateStore, Finished, IdempotencyRecord, NewWorker, Reservation,
    Reserved, StoreError,
};

/// What a unit of work reports of its claim, the moment the transaction carrying it returns.
pub(crate) enum Reported {
    /// The claim inserted the record: this request owns it (guarded from then on).
    Owned(OwnedClaim),
    /// The claim found this record, someone else's; nothing was written.
    Found(IdempotencyRecord),
    /// The transaction failed, and the claim with it (rolled back, or, after an ambiguous commit,
    /// left in flight for the TTL); the handler answers the store's error.
    Failed,
}

/// One keyed create's unit of work: the store's two create transactions with the layer's claim and
/// completion in them (a request extension, `Arc<UnitOfWork>`, on the create route).
pub struct UnitOfWork {
    store: Arc<dyn CreateStore>,
    request: ClaimRequest,
    layer: LayerState,
    answer: AnswerFor,
    /// Where the claim's outcome goes; taken by the first reservation (a second one carries none).
    report: Mutex<Option<oneshot::Sender<Reported>>>,
    /// The claim token, once the claim inserted the record.
    owned: OnceLock<i64>,
    /// Whether the last transaction wrote the completion.
    completed: AtomicBool,
}

impl UnitOfWork {
    /// A unit of work writing `request`'s claim through `store`, for `layer`, whose completion is
    /// the route's `answer`; the claim's outcome goes to `report`.
    pub(crate) fn new(
        store: Arc<dyn CreateStore>,
        request: ClaimRequest,
        layer: LayerState,
        answer: AnswerFor,
        report: oneshot::Sender<Reported>,
    ) -> Self {
        Self {
            store,
            request,
            layer,
            answer,
            report: Mutex::new(Some(report)),
            owned: OnceLock::new(),
            completed: AtomicBool::new(false),
        }
    }

    /// Whether the last transaction wrote the completion (the layer then records nothing).
    pub(crate) fn completed(&self) -> bool {
        self.completed.load(Ordering::SeqCst)
    }

    /// The completion for `worker`, when the record is this request's and the route's answer for
    /// it is stored (a terminal outcome).
    fn completion(&self, worker: &NewWorker) -> Option<Completion> {
        let started_at = *self.owned.get()?;
        let (status, headers, body) = (self.answer)(&worker.stored());
        self.layer
            .completion(&self.request.scope, started_at, status, &headers, &body)
    }
}

impl CreateStore for UnitOfWork {
    /// The reservation with the layer's claim in it (the first one only); its rows are written only
    /// when the claim inserts the record. Reports the claim's outcome as soon as it returns.
    fn reserve<'a>(
        &'a self,
        reservation: Reservation<'a>,
    ) -> BoxFuture<'a, Result<Reserved, StoreError>> {
        Box::pin(async move {
            let report = self
                .report
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let Some(report) = report else {
                return self.store.reserve(reservation).await;
            };
            let reserved = self
                .store
                .reserve(Reservation {
                    claim: Some(&self.request),
                    ..reservation
                })
                .await;
            let reported = match reserved.as_ref().map(|r| r.claim.as_ref()) {
                Ok(Some(claim)) if claim.inserted => {
                    let started_at = claim.record.started_at;
                    let _ = self.owned.set(started_at);
                    let scope = self.request.scope.clone();
                    Reported::Owned(OwnedClaim::new(&self.layer, scope, started_at))
                }
                Ok(Some(claim)) => Reported::Found(claim.record.clone()),
                Ok(None) | Err(_) => Reported::Failed,
            };
            // The layer waits for the handler before it reads the report; it never drops first.
            let _ = report.send(reported);
            reserved
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
            let finished = self.store.finish(worker, Some(&own)).await?;
            if finished.completed {
                self.completed.store(true, Ordering::SeqCst);
            }
            Ok(finished)
        })
    }
}
