//! A claim the idempotency layer defers into the handler's first transaction, and the completion
//! the handler's last transaction carries (see [`CreateStore`](crate::store::CreateStore)).
//!
//! The layer hands a [`DeferredClaim`] to a handler that writes through a unit of work (the create);
//! the handler takes the claim, writes it with its first statements, and reports the result back;
//! when the record is its own and it succeeds, it asks for the completion and writes it with its last
//! statements. After the handler the layer reads [`DeferredClaim::progress`] to tell what is left
//! for it to do: claim itself (the handler never got as far), decide over a record someone else
//! holds, record the outcome, or nothing.

use std::sync::{Arc, Mutex, PoisonError};

use http::{HeaderMap, StatusCode};

use super::is_storable;
use super::record::encode;
use crate::metrics::{KeyOutcome, Metrics};
use crate::store::{Claim, ClaimRequest, Completion, IdempotencyRecord};

/// How far a deferred claim got.
#[derive(Debug, Clone)]
pub(crate) enum Progress {
    /// The handler never took the claim (it failed before its first write): nothing is written.
    Deferred,
    /// The handler took the claim but did not report a result: its first transaction failed, so
    /// the claim was rolled back with it (or, after an ambiguous commit, left in flight for the TTL).
    Taken,
    /// The claim inserted the record at `started_at`; the request owns it. `completed`: the
    /// handler's last transaction wrote the completion.
    Owned {
        /// The claim token.
        started_at: i64,
        /// Whether the completion was written.
        completed: bool,
    },
    /// The claim found this existing record; nothing else was written.
    Existing(IdempotencyRecord),
}

/// One request's deferred claim (shared between the layer and the handler through the request's
/// extensions).
#[derive(Debug)]
pub struct DeferredClaim {
    request: ClaimRequest,
    /// The completed record's retention, ms.
    retention_ms: i64,
    /// Whether a 5xx is stored too (the `cache-5xx` flaw).
    store_5xx: bool,
    metrics: Arc<Metrics>,
    progress: Mutex<Progress>,
}

impl DeferredClaim {
    /// A claim of `request`, to be written by the handler; a completion keeps the record
    /// `retention_ms` ms; `store_5xx` stores a 5xx too (the `cache-5xx` flaw).
    pub(crate) fn new(
        request: ClaimRequest,
        retention_ms: i64,
        store_5xx: bool,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            request,
            retention_ms,
            store_5xx,
            metrics,
            progress: Mutex::new(Progress::Deferred),
        }
    }

    /// The claim as the layer would have written it.
    pub(crate) fn request(&self) -> &ClaimRequest {
        &self.request
    }

    /// How far the claim got.
    pub(crate) fn progress(&self) -> Progress {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the claim for the handler's first transaction; `None` once taken.
    pub fn take(&self) -> Option<ClaimRequest> {
        let mut progress = self.lock();
        match *progress {
            Progress::Deferred => {
                *progress = Progress::Taken;
                Some(self.request.clone())
            }
            _ => None,
        }
    }

    /// Records the claim's result (counted as [`KeyOutcome::Claimed`] when it inserted the record);
    /// true when this request owns the record.
    pub fn settle(&self, claim: Claim) -> bool {
        let owned = claim.inserted;
        *self.lock() = if owned {
            self.metrics.outcome(KeyOutcome::Claimed);
            Progress::Owned {
                started_at: claim.record.started_at,
                completed: false,
            }
        } else {
            Progress::Existing(claim.record)
        };
        owned
    }

    /// The completion for a response of `status`, `headers` and `body`, when the record is this
    /// request's and the response is stored (a terminal outcome).
    pub fn completion(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<Completion> {
        let Progress::Owned { started_at, .. } = *self.lock() else {
            return None;
        };
        if !(is_storable(status) || (self.store_5xx && status.is_server_error())) {
            return None;
        }
        Some(Completion {
            scope: self.request.scope.clone(),
            started_at,
            response: encode(status, headers, body),
            expires_at: crate::clock::now_ms() + self.retention_ms,
        })
    }

    /// The handler's last transaction wrote the completion.
    pub fn completed(&self) {
        if let Progress::Owned { completed, .. } = &mut *self.lock() {
            *completed = true;
        }
    }
}
