//! The sweeper: deletes idempotency records whose retention window ended, in batches, so one sweep
//! never holds a long lock.

use std::time::Duration;

use tokio::sync::watch;

use crate::clock::now_ms;
use crate::fleet::CreateIds;
use crate::idempotency::OpSeed;
use crate::store::{StoreError, Stores};

/// Records deleted per statement.
pub const SWEEP_BATCH: i64 = 500;

/// Runs until `shutdown` changes: every `interval`, deletes expired records in batches of [`SWEEP_BATCH`].
pub async fn run(stores: Stores, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
        match sweep_once(&stores).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "sweeper deleted expired idempotency records"),
            Err(err) => tracing::warn!(error = %err, "sweeper failed; retrying next interval"),
        }
    }
}

/// One full sweep: batches until a batch comes back short. Returns how many records were deleted.
/// Expired failed records go first, one batch at a time: each is deleted, then what its attempt
/// left behind (node, lease, pending boot; sub-keys re-derived from the record as the layer derives
/// them) is released, since no retry can resume it any more.
pub async fn sweep_once(stores: &Stores) -> Result<u64, StoreError> {
    let now = now_ms();
    let mut total = 0;
    loop {
        let failed = stores.records.sweep_failed(now, SWEEP_BATCH).await?;
        total += failed.len() as u64;
        for record in &failed {
            let seed = OpSeed::derive(
                &record.scope.principal,
                &record.scope.endpoint,
                &record.scope.key,
            )
            .salted(&record.nonce);
            let ids = CreateIds::of(&seed);
            let released = stores
                .fleet
                .release_leftovers(&ids.allocation_id, &ids.lease_id, &ids.boot_id)
                .await?;
            if released {
                tracing::info!(key = %record.scope.key, "sweeper released a failed attempt's node and lease");
            }
        }
        if failed.len() < SWEEP_BATCH as usize {
            break;
        }
    }
    loop {
        let n = stores.records.sweep(now, SWEEP_BATCH).await?;
        total += n;
        if n < SWEEP_BATCH as u64 {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}
