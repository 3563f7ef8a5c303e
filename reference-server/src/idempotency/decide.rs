//! The decision phase: what a keyed request gets once its claim's outcome is known. A claim that
//! inserted the record runs; over a record someone else holds, the state machine decides — by the
//! retention window, [`Rules::on_mismatch`](super::Rules::on_mismatch), the record's state and
//! [`Rules::on_in_flight`](super::Rules::on_in_flight) — to replay, refuse, run without owning
//! the record, or take the record over (the optimistic reclaim, one winner).

use super::completion::OwnedClaim;
use super::config::LayerState;
use super::rules::{OnInFlight, OnMismatch};
use crate::edge::ApiError;
use crate::metrics::{KeyOutcome, Metrics};
use crate::store::{ClaimRequest, IdempotencyRecord, RecordState};

/// A claim the request owns, and how its handler is to run.
pub(super) struct Owned {
    /// The claim, guarded until its outcome is recorded.
    pub claim: OwnedClaim,
    /// The salt of the side-effect sub-keys: the record's nonce, kept across retries of one record
    /// (they resume), new for a record created after the old one expired (a new operation).
    pub nonce: String,
    /// Whether the nonce is new: no attempt of this operation ran before, nothing to resume.
    pub first: bool,
    /// [`KeyOutcome::Claimed`] or [`KeyOutcome::Reclaimed`] (an in-flight record past the TTL).
    pub how: KeyOutcome,
}

/// What a request gets once its claim's outcome is known.
pub(super) enum Decision {
    /// This request owns the record: run it and record the outcome.
    Run(Owned),
    /// Run without owning the record (only where the rules are bent): fresh sub-keys, nothing
    /// recorded.
    RunUnowned,
    /// Replay a stored outcome.
    Replay(IdempotencyRecord),
    /// Refuse (in progress, mismatch).
    Refuse(ApiError),
}

impl Decision {
    /// Counts the decision's [`KeyOutcome`] (running without owning the record, which only bent
    /// rules decide, counts nothing).
    pub(super) fn count(&self, metrics: &Metrics) {
        let outcome = match self {
            Self::Run(owned) => owned.how,
            Self::RunUnowned => return,
            Self::Replay(_) => KeyOutcome::Replayed,
            Self::Refuse(ApiError::KeyMismatch) => KeyOutcome::Mismatch,
            Self::Refuse(ApiError::InProgress(_)) => KeyOutcome::InFlightConflict,
            Self::Refuse(_) => return,
        };
        metrics.outcome(outcome);
    }
}

/// The state machine over an existing `record` that the claim `request` found (it did not insert),
/// on `endpoint`; of `request`, its scope, fingerprint and times are used, not its nonce (a
/// take-over decides its own from the record).
///
/// # Errors
/// [`ApiError::Internal`] when the take-over's statement fails.
pub(super) async fn decide(
    state: &LayerState,
    record: IdempotencyRecord,
    request: &ClaimRequest,
    endpoint: &str,
) -> Result<Decision, ApiError> {
    let (store, cfg, rules) = (state.records.as_ref(), &state.config, &state.rules);
    let ClaimRequest {
        scope,
        fingerprint,
        now,
        expires_at,
        ..
    } = request;
    let (now, expires_at) = (*now, *expires_at);
    let fingerprint = fingerprint.as_str();
    // Reclaiming a failed or stuck record keeps its nonce (the retry resumes its side effects); an
    // expired record is a new operation and gets a new one.
    let record_nonce = record.nonce.as_str();
    let take_over = |nonce: String, how: KeyOutcome| async move {
        // A nonce other than the record's is new: no attempt of this operation ran before.
        let first = nonce != record_nonce;
        let won = store
            .take_over(
                scope,
                record.state,
                record.started_at,
                fingerprint,
                &nonce,
                now,
                expires_at,
            )
            .await
            .map_err(ApiError::internal)?;
        Ok::<_, ApiError>(if won {
            let started_at = now.max(record.started_at + 1);
            Decision::Run(Owned {
                claim: OwnedClaim::new(state, scope.clone(), started_at),
                nonce,
                first,
                how,
            })
        } else {
            Decision::Refuse(ApiError::InProgress(cfg.retry_after_secs))
        })
    };
    // A terminal record past the retention window but not yet swept: as if absent. An in-flight record
    // is never "expired" by retention (its request may still be running, or crashed with side effects
    // to resume): only the in-flight TTL below reclaims it, keeping its nonce.
    // A failed one keeps its nonce: its attempt's node and lease are resumed, not leaked (once swept,
    // the sweeper releases them instead).
    if record.expires_at <= now && record.state != RecordState::InFlight {
        let nonce = if record.state == RecordState::Failed {
            record.nonce.clone()
        } else {
            uuid::Uuid::new_v4().to_string()
        };
        return take_over(nonce, KeyOutcome::Claimed).await;
    }
    if record.fingerprint != fingerprint {
        match rules.on_mismatch(&record, endpoint) {
            OnMismatch::Refuse => return Ok(Decision::Refuse(ApiError::KeyMismatch)),
            OnMismatch::Replay => return Ok(Decision::Replay(record)),
            OnMismatch::Ignore => {}
        }
    }
    match record.state {
        RecordState::Completed => Ok(Decision::Replay(record)),
        RecordState::Failed => take_over(record.nonce.clone(), KeyOutcome::Claimed).await,
        RecordState::InFlight => {
            let past_ttl = now - record.started_at >= cfg.in_flight_ttl_ms();
            match rules.on_in_flight(&record, past_ttl) {
                OnInFlight::Reclaim { nonce } => take_over(nonce, KeyOutcome::Reclaimed).await,
                OnInFlight::Refuse => {
                    Ok(Decision::Refuse(ApiError::InProgress(cfg.retry_after_secs)))
                }
                OnInFlight::RunUnowned => Ok(Decision::RunUnowned),
            }
        }
    }
}
