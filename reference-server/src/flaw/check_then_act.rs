//! `check-then-act`: the claim of a new key is a read, a pause, then a write, so concurrent
//! same-key requests that all read "absent" all run, each with side-effect sub-keys of its own (the
//! race shows as several workers). A key with a record is decided as the contract decides it (a
//! retry of a failed or stuck record still resumes it). Not atomic, so a create's own transaction
//! cannot carry it: the create route claims as every other route does.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::clock::now_ms;
use crate::idempotency::{Bend, ClaimOf, ClaimStores, Claimed, Rules};
use crate::store::StoreError;

/// The pause between the read and the write: wide enough that simultaneous requests on a loaded
/// machine all read "absent".
const WINDOW: Duration = Duration::from_millis(250);

/// Claims by reading, pausing, then writing whatever is there.
pub struct CheckThenAct;

impl Bend for CheckThenAct {
    fn claim_is_atomic(&self, _inner: &dyn Rules) -> bool {
        false
    }

    /// Every request that read "absent" owns the record, as a server relying on the key table
    /// alone would; a record found is left to the state machine.
    fn claim<'a>(
        &'a self,
        _inner: &'a dyn Rules,
        on: ClaimStores<'a>,
        claim: ClaimOf<'a>,
    ) -> BoxFuture<'a, Result<Claimed, StoreError>> {
        Box::pin(async move {
            if let Some(record) = on.unguarded.find_record(claim.scope).await? {
                return Ok(Claimed::Found(record));
            }
            tokio::time::sleep(WINDOW).await;
            let started_at = now_ms();
            let nonce = uuid::Uuid::new_v4().to_string();
            let retention = claim.expires_at - claim.now;
            on.unguarded
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
                first: true,
            })
        })
    }
}
