//! The two record statements that are no claim: a read of a key's record and a write over
//! whatever is there. Only the deliberately non-atomic `check-then-act` flaw
//! (`crate::flaw::check_then_act`) makes its claim of them; the layer and the sweeper never use
//! them, so they are not part of [`RecordStore`](super::RecordStore).

use std::sync::LazyLock;

use futures::future::BoxFuture;
use futures::TryFutureExt;

use super::records::{record_from_row, ClaimParams, RECORD_COLUMNS};
use super::sql::{Dialect, Statement};
use super::sql_store::SqlStore;
use super::{IdempotencyRecord, Scope, StoreError};

/// A record read and written without a claim. Every method is one statement; times are ms since
/// the Unix epoch.
pub trait UnguardedRecords: Send + Sync + 'static {
    /// Reads `scope`'s record, if any.
    fn find_record<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>>;

    /// Writes an in-flight record with `nonce`, claimed at `now`, over whatever is there. Two
    /// callers both "win": it is not a claim.
    fn overwrite_record<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        nonce: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// Reads a record by its scope. Binds `$1` principal, `$2` endpoint, `$3` key.
static FIND: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RECORD_COLUMNS} FROM idempotency_records WHERE {}",
        ClaimParams::ALONE.scope_condition()
    )
});

/// Writes an in-flight record over whatever is there. Binds the scope (`$1`–`$3`), `$4` fingerprint,
/// `$5` now, `$6` expires_at, `$7` nonce. Not a claim: two callers both "win" (the flaw it serves).
const OVERWRITE: &str = "INSERT INTO idempotency_records \
       (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
     VALUES ($1, $2, $3, $4, 'in_flight', $7, $5, $6) \
     ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET \
       fingerprint = EXCLUDED.fingerprint, state = 'in_flight', started_at = EXCLUDED.started_at, \
       claim_nonce = EXCLUDED.claim_nonce, \
       expires_at = EXCLUDED.expires_at, status = NULL, headers = NULL, body = NULL, compressed = 0";

impl<D: Dialect> UnguardedRecords for SqlStore<D> {
    fn find_record<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>> {
        self.timed("find_record", async move {
            let row = Statement::new(FIND.as_str())
                .scope(scope)
                .fetch_optional(self.db())
                .await?;
            row.as_ref().map(record_from_row::<D>).transpose()
        })
    }

    fn overwrite_record<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        nonce: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let overwrite = Statement::new(OVERWRITE)
            .scope(scope)
            .text(fingerprint)
            .int(now)
            .int(expires_at)
            .text(nonce);
        self.timed("overwrite_record", self.changes(overwrite).map_ok(drop))
    }
}
