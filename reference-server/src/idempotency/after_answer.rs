//! The seam for work that outlives its answer (`--creates async`): a create answers `202` with an
//! operation, and the boot it started runs after that answer.
//!
//! - The layer hands the handler a [`KeyRelease`] (a request extension) when the request owns an
//!   idempotency record: how a later failure of that work releases the key, so that a retry runs
//!   again, as after a 5xx. Where the rules store a 5xx ([`Rules::stores`](super::Rules::stores)),
//!   the layer hands none: the failure stays answered by the stored `202`.
//! - The handler attaches its work to its response as an [`AfterAnswer`]; the layer starts it only
//!   once the answer is recorded (stored or not), so the work's failure cannot race the record's
//!   completion.

use std::sync::{Arc, Mutex, PoisonError};

use axum::response::Response;
use futures::future::BoxFuture;

use crate::store::{RecordStore, Scope};

/// How a failure after the answer releases the request's idempotency key: the record's scope and
/// the claim (`started_at`) the answer was recorded under. Stored with the work (JSON), so that a
/// restarted process that finishes the work can still release the key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyRelease {
    principal: String,
    endpoint: String,
    key: String,
    started_at: i64,
}

impl KeyRelease {
    /// The release of the claim `started_at` on `scope`.
    pub(super) fn of(scope: &Scope, started_at: i64) -> Self {
        Self {
            principal: scope.principal.clone(),
            endpoint: scope.endpoint.clone(),
            key: scope.key.clone(),
            started_at,
        }
    }

    /// Marks the record failed (its stored answer is dropped), if the claim still holds: a retry
    /// with the key then runs again. Returns whether it did.
    ///
    /// # Errors
    /// The store's, when the record could not be written.
    pub async fn release(
        &self,
        records: &dyn RecordStore,
    ) -> Result<bool, crate::store::StoreError> {
        let scope = Scope {
            principal: self.principal.clone(),
            endpoint: self.endpoint.clone(),
            key: self.key.clone(),
        };
        records.fail_answered(&scope, self.started_at).await
    }
}

/// Work a handler leaves to run after its answer is recorded (a response extension; cloning
/// shares the one piece of work, which runs once).
#[derive(Clone)]
pub struct AfterAnswer(Arc<Mutex<Option<BoxFuture<'static, ()>>>>);

impl AfterAnswer {
    /// Attaches `work` to `response`.
    pub fn attach(response: &mut Response, work: BoxFuture<'static, ()>) {
        response
            .extensions_mut()
            .insert(Self(Arc::new(Mutex::new(Some(work)))));
    }

    /// Starts the work attached to `response`, if any (in its own task: the answer is not held
    /// back by it). The layer calls this once the answer is recorded.
    pub(super) fn start(response: &Response) {
        let Some(Self(work)) = response.extensions().get::<Self>() else {
            return;
        };
        let work = work.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(work) = work {
            tokio::spawn(work);
        }
    }
}
