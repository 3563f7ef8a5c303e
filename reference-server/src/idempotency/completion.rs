//! The last phase of a keyed request, on both roads to a claim: the one completion builder (with
//! the `before_complete` crash point), the record step that stores a terminal answer or marks the
//! record failed, and [`OwnedClaim`], the guard that marks an owned claim failed when its task
//! unwinds before the outcome is recorded (a panic), so the row never stays in flight because of
//! one.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};

use super::config::LayerState;
use super::record::encode;
use crate::clock::now_ms;
use crate::edge::ApiError;
use crate::injection::CrashPoint;
use crate::metrics::{KeyOutcome, Metrics};
use crate::store::{Completion, RecordStore, Scope};

/// A claim this request owns, until its outcome is recorded: the record's scope and the claim
/// token. Dropped unrecorded (the handler's task unwound), it marks the record failed.
pub(crate) struct OwnedClaim {
    scope: Scope,
    started_at: i64,
    /// Where the drop guard writes; `None` once the outcome is recorded.
    armed: Option<(Arc<dyn RecordStore>, Arc<Metrics>)>,
}

impl OwnedClaim {
    /// The claim `started_at` on `scope`, guarded through `layer`'s store.
    pub(crate) fn new(layer: &LayerState, scope: Scope, started_at: i64) -> Self {
        Self {
            scope,
            started_at,
            armed: Some((layer.records.clone(), layer.metrics.clone())),
        }
    }

    /// The record's scope.
    pub(crate) fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The claim token: when the claim was taken, ms since the epoch.
    pub(crate) fn started_at(&self) -> i64 {
        self.started_at
    }

    /// Drops the guard: the unit of work's last transaction recorded the outcome.
    pub(crate) fn recorded(self) {
        self.disarm();
    }

    /// The claim, no longer guarded: its outcome is recorded (or about to be).
    fn disarm(mut self) -> (Scope, i64) {
        self.armed = None;
        (self.scope.clone(), self.started_at)
    }
}

impl Drop for OwnedClaim {
    fn drop(&mut self) {
        let Some((store, metrics)) = self.armed.take() else {
            return;
        };
        metrics.outcome(KeyOutcome::Failed);
        let (scope, started_at) = (self.scope.clone(), self.started_at);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(err) = store.fail(&scope, started_at).await {
                    tracing::error!(error = %err, key = %scope.key, "mark the record failed after a panic");
                }
            });
        }
    }
}

impl LayerState {
    /// The completion of the claim `started_at` on `scope` with the answer (`status`, `headers`,
    /// `body`), when the rules store that answer ([`Rules::stores`](super::Rules::stores));
    /// `None` marks the record failed instead. The one place a completion is built, on both
    /// roads, and so the one `before_complete` crash point of the layer.
    pub(crate) fn completion(
        &self,
        scope: &Scope,
        started_at: i64,
        status: StatusCode,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Option<Completion> {
        self.injections.crash_if(CrashPoint::BeforeComplete);
        if !self.rules.stores(status) {
            return None;
        }
        let response = encode(status, headers, body);
        Some(Completion {
            scope: scope.clone(),
            started_at,
            response,
            expires_at: now_ms() + self.config.retention_ms(),
        })
    }

    /// Records the handler's `response` as the outcome of `claim`: a terminal outcome is stored,
    /// anything else marks the record failed. Returns the response as it was sent.
    pub(crate) async fn record(&self, claim: OwnedClaim, response: Response) -> Response {
        let (scope, started_at) = claim.disarm();
        let store = self.records.as_ref();
        let (parts, body) = response.into_parts();
        let body = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(body) => body,
            Err(err) => {
                self.metrics.outcome(KeyOutcome::Failed);
                if let Err(err) = store.fail(&scope, started_at).await {
                    tracing::error!(error = %err, key = %scope.key, "mark the record failed");
                }
                return ApiError::Internal(format!("read the handler's response body: {err}"))
                    .into_response();
            }
        };
        let recorded =
            match self.completion(&scope, started_at, parts.status, &parts.headers, &body) {
                Some(done) => {
                    store
                        .complete(&scope, started_at, &done.response, done.expires_at)
                        .await
                }
                None => {
                    self.metrics.outcome(KeyOutcome::Failed);
                    store.fail(&scope, started_at).await
                }
            };
        match recorded {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(key = %scope.key, "the claim was reclaimed before this request finished")
            }
            // The record stays in flight; the in-flight TTL lets a retry reclaim it and resume.
            Err(err) => tracing::error!(error = %err, key = %scope.key, "record the outcome"),
        }
        Response::from_parts(parts, Body::from(body))
    }
}
