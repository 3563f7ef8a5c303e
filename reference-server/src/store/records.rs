//! The idempotency records: one row per (principal, endpoint, key) in `idempotency_records`.
//!
//! [`RecordStore`] is what the idempotency layer and the sweeper ask of them; its SQL is below, the
//! same text on both databases except the atomic claim and the batched sweeps ([`Dialect`]).

use futures::future::BoxFuture;
use futures::TryFutureExt;

use super::sql::{until_claimed, Dialect, Statement};
use super::sql_store::SqlStore;
use super::StoreError;

/// The identity of an idempotency record: (principal, endpoint, key).
///
/// Source: the article's contract and IETF draft-ietf-httpapi-idempotency-key-header-07 §2
/// ("the key is scoped to the resource and the client").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The authenticated principal (`*` under the `global-keyspace` flaw).
    pub principal: String,
    /// Method and route template, e.g. `POST /v1/workers/{id}/reboot` (`*` under `endpoint-unscoped`).
    pub endpoint: String,
    /// The Idempotency-Key, unquoted.
    pub key: String,
}

/// A failed record removed by the sweeper: its scope and the claim nonce its sub-keys were salted with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRecord {
    /// The record's scope.
    pub scope: Scope,
    /// The record's claim nonce.
    pub nonce: String,
}

/// The state of an idempotency record: none → in flight → completed | failed; failed → in flight on retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// A request holds the claim and is running.
    InFlight,
    /// A terminal outcome is stored and is replayed.
    Completed,
    /// The last attempt ended in a 5xx or a panic; the next retry runs again.
    Failed,
}

impl RecordState {
    /// The value stored in the `state` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InFlight => "in_flight",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Parses the `state` column; an unknown value is [`StoreError::Corrupt`].
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "in_flight" => Ok(Self::InFlight),
            "completed" => Ok(Self::Completed),
            "failed" => Ok(Self::Failed),
            other => Err(StoreError::Corrupt(format!("record state `{other}`"))),
        }
    }
}

/// A stored response, as the idempotency layer encoded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// HTTP status code.
    pub status: u16,
    /// The replayed headers as a JSON array of `[name, value]` pairs.
    pub headers_json: String,
    /// The body, deflate-compressed when `compressed`.
    pub body: Vec<u8>,
    /// Whether `body` is deflate-compressed (large bodies are).
    pub compressed: bool,
}

/// One idempotency record as read back from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The record's state.
    pub state: RecordState,
    /// The hex SHA-256 fingerprint of the request that claimed the key.
    pub fingerprint: String,
    /// A random value written when the record was created (kept across retries, new after expiry):
    /// SQLite's "who inserted" signal, and the salt of the operation's side-effect sub-keys.
    pub nonce: String,
    /// When the current claim was taken, ms since the epoch; the optimistic-reclaim token.
    pub started_at: i64,
    /// When the record may be swept, ms since the epoch.
    pub expires_at: i64,
    /// The stored outcome, present when `Completed`.
    pub response: Option<StoredResponse>,
}

/// The result of the atomic claim statement.
#[derive(Debug, Clone)]
pub struct Claim {
    /// True when this call inserted the record (this request owns it, in flight).
    pub inserted: bool,
    /// The record as the claim read it: the new one, or the existing one when not inserted. On
    /// PostgreSQL that is the statement's snapshot, which a concurrent sweep or take-over may have
    /// changed since; a take-over decided on it names the old state and `started_at`, so it loses.
    pub record: IdempotencyRecord,
}

/// The idempotency records. Every method is one statement; times are ms since the Unix epoch.
pub trait RecordStore: Send + Sync + 'static {
    /// The atomic claim: insert an in-flight record for `scope`, or return the existing one.
    /// Exactly one of any number of concurrent callers gets `inserted = true`.
    fn claim<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;

    /// Optimistic reclaim: `UPDATE … WHERE state = expected AND started_at = expected`; true for the
    /// one winner. The record becomes in flight with `started_at = max(now, old + 1)` and `nonce`.
    #[allow(clippy::too_many_arguments)]
    fn take_over<'a>(
        &'a self,
        scope: &'a Scope,
        expected_state: RecordState,
        expected_started_at: i64,
        fingerprint: &'a str,
        nonce: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Stores a terminal outcome, if the claim identified by `started_at` is still ours.
    fn complete<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
        response: &'a StoredResponse,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Marks the claim failed (5xx or panic), if it is still ours.
    fn fail<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Marks the claim failed after its outcome was stored, if it is still ours: the answer named a
    /// long-running operation that failed afterwards, so a retry runs again, as after a 5xx.
    fn fail_answered<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes up to `batch` completed or failed records whose retention window ended before `now`
    /// (in-flight records are left to the in-flight TTL); returns how many.
    fn sweep(&self, now: i64, batch: i64) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Deletes up to `batch` failed records whose retention window ended before `now` and returns
    /// them, so the sweeper can release what their attempts left behind (nothing can resume them now).
    fn sweep_failed(
        &self,
        now: i64,
        batch: i64,
    ) -> BoxFuture<'_, Result<Vec<FailedRecord>, StoreError>>;
}

/// The idempotency record's columns, the ones [`record_from_row`] decodes (by name): every
/// statement that reads a record (each dialect's claim, the unguarded read of `unguarded.rs`)
/// selects these.
pub(super) const RECORD_COLUMNS: &str =
    "state, fingerprint, claim_nonce, started_at, expires_at, status, headers, body, compressed";

/// Where a claim's statement binds each of its values (`$1`, …): a claim alone binds them in
/// order ([`ClaimParams::ALONE`]); a create's first transaction binds the fleet's first
/// ([`ClaimParams::AFTER_RESERVATION`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct ClaimParams {
    pub(super) principal: &'static str,
    pub(super) endpoint: &'static str,
    pub(super) key: &'static str,
    pub(super) fingerprint: &'static str,
    pub(super) nonce: &'static str,
    pub(super) now: &'static str,
    pub(super) expires_at: &'static str,
}

impl ClaimParams {
    /// [`Dialect::claim`]'s: `$1`–`$3` the scope, `$4` fingerprint, `$5` nonce, `$6` now, `$7`
    /// expires_at.
    pub(super) const ALONE: Self = Self {
        principal: "$1",
        endpoint: "$2",
        key: "$3",
        fingerprint: "$4",
        nonce: "$5",
        now: "$6",
        expires_at: "$7",
    };

    /// [`CreateStatements::claim_and_reserve`](super::sql::CreateStatements)'s: after the
    /// reservation's `$1`–`$6` (its `$2` is now), `$7`–`$9` the scope, `$10` fingerprint, `$11`
    /// nonce, `$12` expires_at.
    pub(super) const AFTER_RESERVATION: Self = Self {
        principal: "$7",
        endpoint: "$8",
        key: "$9",
        fingerprint: "$10",
        nonce: "$11",
        now: "$2",
        expires_at: "$12",
    };

    /// The condition that selects the scope's record.
    pub(super) fn scope_condition(&self) -> String {
        format!(
            "principal = {} AND endpoint = {} AND idem_key = {}",
            self.principal, self.endpoint, self.key
        )
    }
}

/// A claim's insert of a new in-flight record for the scope, binding as `p` says; nothing when the
/// scope has a record. Each dialect's claim continues it (PostgreSQL with `RETURNING`, SQLite
/// with `;`).
pub(super) fn insert_record(p: &ClaimParams) -> String {
    format!(
        "INSERT INTO idempotency_records (principal, endpoint, idem_key, fingerprint, state, \
           claim_nonce, started_at, expires_at) \
         VALUES ({}, {}, {}, {}, 'in_flight', {}, {}, {}) \
         ON CONFLICT (principal, endpoint, idem_key) DO NOTHING",
        p.principal, p.endpoint, p.key, p.fingerprint, p.nonce, p.now, p.expires_at
    )
}

/// The optimistic reclaim: only the caller that read (`$7` state, `$8` started_at) wins. Binds `$1`
/// fingerprint, `$2` the new started_at, `$3` expires_at, the scope (`$4`–`$6`), `$9` nonce.
const TAKE_OVER: &str = "UPDATE idempotency_records SET state = 'in_flight', fingerprint = $1, \
       started_at = $2, expires_at = $3, status = NULL, headers = NULL, body = NULL, compressed = 0, \
       claim_nonce = $9 \
     WHERE principal = $4 AND endpoint = $5 AND idem_key = $6 AND state = $7 AND started_at = $8";

/// Stores a terminal outcome if the claim `$9` (started_at) still holds. Binds `$1` status, `$2`
/// headers, `$3` body, `$4` compressed (0/1), `$5` expires_at, the scope (`$6`–`$8`).
pub(super) const COMPLETE: &str =
    "UPDATE idempotency_records SET state = 'completed', status = $1, headers = $2, \
       body = $3, compressed = $4, expires_at = $5 \
     WHERE principal = $6 AND endpoint = $7 AND idem_key = $8 AND state = 'in_flight' \
       AND started_at = $9";

/// Marks the claim `$4` (started_at) failed if it still holds. Binds the scope (`$1`–`$3`).
const FAIL: &str = "UPDATE idempotency_records SET state = 'failed' \
     WHERE principal = $1 AND endpoint = $2 AND idem_key = $3 AND state = 'in_flight' \
       AND started_at = $4";

/// Marks the claim `$4` (started_at) failed, in flight or completed, if it still holds. Binds the
/// scope (`$1`–`$3`).
const FAIL_ANSWERED: &str = "UPDATE idempotency_records SET state = 'failed', status = NULL, \
       headers = NULL, body = NULL, compressed = 0 \
     WHERE principal = $1 AND endpoint = $2 AND idem_key = $3 \
       AND state IN ('in_flight', 'completed') AND started_at = $4";

impl<'q, D: Dialect> Statement<'q, D> {
    /// Binds the next three parameters: principal, endpoint, key.
    pub(super) fn scope(self, scope: &'q Scope) -> Self {
        self.text(&scope.principal)
            .text(&scope.endpoint)
            .text(&scope.key)
    }
}

/// Decodes a record from a row of its columns (as [`Dialect::claim`] returns them).
pub(super) fn record_from_row<D: Dialect>(row: &D::Row) -> Result<IdempotencyRecord, StoreError> {
    let status = D::opt_int(row, "status")?;
    let headers = D::opt_text(row, "headers")?;
    let body = D::opt_bytes(row, "body")?;
    let compressed = D::int(row, "compressed")?;
    let response = match (status, headers) {
        (Some(status), Some(headers_json)) => Some(StoredResponse {
            status: u16::try_from(status)
                .map_err(|_| StoreError::Corrupt(format!("status {status}")))?,
            headers_json,
            body: body.unwrap_or_default(),
            compressed: compressed != 0,
        }),
        _ => None,
    };
    Ok(IdempotencyRecord {
        state: RecordState::parse(&D::text(row, "state")?)?,
        fingerprint: D::text(row, "fingerprint")?,
        nonce: D::text(row, "claim_nonce")?,
        started_at: D::int(row, "started_at")?,
        expires_at: D::int(row, "expires_at")?,
        response,
    })
}

impl<D: Dialect> RecordStore for SqlStore<D> {
    fn claim<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.timed("claim", async move {
            let nonce = uuid::Uuid::new_v4().to_string();
            let row = until_claimed(|| {
                self.run_one(
                    Statement::new(D::claim())
                        .scope(scope)
                        .text(fingerprint)
                        .text(&nonce)
                        .int(now)
                        .int(expires_at),
                )
            })
            .await?;
            let record = record_from_row::<D>(&row)?;
            Ok(Claim {
                inserted: D::claim_inserted(&row, &nonce)?,
                record,
            })
        })
    }

    fn take_over<'a>(
        &'a self,
        scope: &'a Scope,
        expected_state: RecordState,
        expected_started_at: i64,
        fingerprint: &'a str,
        nonce: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let take_over = Statement::new(TAKE_OVER)
            .text(fingerprint)
            .int(now.max(expected_started_at + 1))
            .int(expires_at)
            .scope(scope)
            .text(expected_state.as_str())
            .int(expected_started_at)
            .text(nonce);
        self.timed("take_over", self.changes(take_over).map_ok(|won| won == 1))
    }

    fn complete<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
        response: &'a StoredResponse,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let complete = Statement::new(COMPLETE)
            .int(i64::from(response.status))
            .text(&response.headers_json)
            .bytes(&response.body)
            .int(i64::from(response.compressed))
            .int(expires_at)
            .scope(scope)
            .int(started_at);
        self.timed("complete", self.changes(complete).map_ok(|ours| ours == 1))
    }

    fn fail<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let fail = Statement::new(FAIL).scope(scope).int(started_at);
        self.timed("fail", self.changes(fail).map_ok(|ours| ours == 1))
    }

    fn fail_answered<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let fail = Statement::new(FAIL_ANSWERED).scope(scope).int(started_at);
        self.timed("fail_answered", self.changes(fail).map_ok(|ours| ours == 1))
    }

    fn sweep(&self, now: i64, batch: i64) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.timed(
            "sweep",
            self.changes(Statement::new(D::SWEEP).int(now).int(batch)),
        )
    }

    fn sweep_failed(
        &self,
        now: i64,
        batch: i64,
    ) -> BoxFuture<'_, Result<Vec<FailedRecord>, StoreError>> {
        self.timed("sweep_failed", async move {
            let rows = Statement::new(D::SWEEP_FAILED)
                .int(now)
                .int(batch)
                .fetch_all(self.db())
                .await?;
            let mut failed = Vec::with_capacity(rows.len());
            for row in &rows {
                failed.push(FailedRecord {
                    scope: Scope {
                        principal: D::text(row, "principal")?,
                        endpoint: D::text(row, "endpoint")?,
                        key: D::text(row, "idem_key")?,
                    },
                    nonce: D::text(row, "claim_nonce")?,
                });
            }
            Ok(failed)
        })
    }
}
