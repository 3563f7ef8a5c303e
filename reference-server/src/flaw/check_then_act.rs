//! `check-then-act`: the claim is a read, a pause, then a write, so concurrent same-key requests
//! all run, each with side-effect sub-keys of its own (the race shows as several workers); a retry
//! of one failed or stuck record still resumes it. Not atomic, so a create's own transaction cannot
//! carry it: the create route claims as every other route does.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::clock::now_ms;
use crate::idempotency::{Bend, ClaimOf, Claimed, Rules};
use crate::store::{IdempotencyRecord, RecordState, RecordStore, StoreError};

/// The pause between the read and the write: wide enough that simultaneous requests on a loaded
/// machine all read "absent".
const WINDOW: Duration = Duration::from_millis(250);

/// Claims by reading, pausing, then writing whatever is there.
pub struct CheckThenAct;

impl Bend for CheckThenAct {
    fn claim_is_atomic(&self, _inner: &dyn Rules) -> bool {
        false
    }

    /// Every request that read "absent" (or a reclaimable record) owns the record, as a server
    /// relying on the key table alone would; any other record is found, for the state machine to
    /// decide over.
    fn claim<'a>(
        &'a self,
        _inner: &'a dyn Rules,
        store: &'a dyn RecordStore,
        claim: ClaimOf<'a>,
    ) -> BoxFuture<'a, Result<Claimed, StoreError>> {
        Box::pin(async move {
            let now = now_ms();
            let ttl = i64::try_from(claim.in_flight_ttl.as_millis()).unwrap_or(i64::MAX);
            let reclaimable = |r: &IdempotencyRecord| {
                r.expires_at <= now
                    || r.state == RecordState::Failed
                    || (r.state == RecordState::InFlight && now - r.started_at >= ttl)
            };
            let found = store.find_record(claim.scope).await?;
            if let Some(record) = found.as_ref().filter(|r| !reclaimable(r)) {
                return Ok(Claimed::Found(record.clone()));
            }
            // A racer that found nothing writes a nonce of its own; a retry of a failed or stuck
            // record keeps the record's nonce and resumes.
            let first = found.is_none();
            let nonce = found.map_or_else(|| uuid::Uuid::new_v4().to_string(), |r| r.nonce);
            tokio::time::sleep(WINDOW).await;
            let started_at = now_ms();
            let retention = claim.expires_at - claim.now;
            store
                .overwrite_record(
                    claim.scope,
                    claim.fingerprint,
                    &nonce,
                    started_at,
                    started_at + retention,
                )
                .await?;
            Ok(Claimed::Owned {
                started_at,
                nonce,
                first,
            })
        })
    }
}
