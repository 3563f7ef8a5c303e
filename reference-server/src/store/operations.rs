//! Long-running operations (`--creates async`): a create answers `202` with an operation, and the
//! boot it started runs after the answer; the operation's row says how it stands, and holds what
//! the boot needs to run again after a restart.
//!
//! [`OperationStore`] is what the fleet asks of them. An operation is written `running` once, and
//! settled `done` or `failed` once: a settled operation never changes again. A running one that no
//! process took up for a while is stale: a watchdog takes it up (one replica wins) and runs it.

use futures::future::BoxFuture;
use futures::TryFutureExt;

use super::sql::{Dialect, Statement};
use super::sql_store::SqlStore;
use super::StoreError;

/// How an operation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationState {
    /// Its boot has not finished.
    Running,
    /// Its worker exists.
    Done,
    /// Its boot failed; its `error` says why.
    Failed,
}

impl OperationState {
    /// The stored (and shown) name: `running`, `done`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "running" => Ok(Self::Running),
            "done" => Ok(Self::Done),
            "failed" => Ok(Self::Failed),
            other => Err(StoreError::Corrupt(format!("operation state `{other}`"))),
        }
    }
}

/// One operation's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationRow {
    /// The operation's id, `op-…`.
    pub id: String,
    /// Who started it; only they see it.
    pub principal: String,
    /// The worker it creates.
    pub worker_id: String,
    /// How it stands.
    pub state: OperationState,
    /// Why it failed, once `failed`.
    pub error: Option<String>,
    /// What its boot needs to run (again, after a restart): the fleet's JSON, opaque here.
    pub work: String,
    /// The idempotency record whose key a failure releases: the layer's JSON, opaque here; `None`
    /// for a create sent without a key.
    pub record: Option<String>,
    /// When it started, ms since the epoch.
    pub created_at: i64,
    /// When a process last took it up (its start, or a take-over), ms since the epoch.
    pub updated_at: i64,
}

/// The operations' rows.
pub trait OperationStore: Send + Sync + 'static {
    /// Writes a new `running` operation.
    fn insert_operation<'a>(
        &'a self,
        operation: &'a OperationRow,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The principal's operation with this id.
    fn get_operation<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<OperationRow>, StoreError>>;

    /// Settles a running operation `done` or `failed` (with `error`) at `now`; false when it was
    /// not running (settled already, or unknown).
    fn settle_operation<'a>(
        &'a self,
        id: &'a str,
        state: OperationState,
        error: Option<&'a str>,
        now: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Every operation still running that no process took up since `before` (ms since the
    /// epoch), oldest first: abandoned by a process that died, or left running by one whose write
    /// of its outcome failed.
    fn stale_operations(&self, before: i64)
        -> BoxFuture<'_, Result<Vec<OperationRow>, StoreError>>;

    /// Takes up the running operation `id` as of `now`, if no process took it up since
    /// `seen_updated_at` (its `updated_at` as read): one caller wins, across replicas.
    fn take_up_operation<'a>(
        &'a self,
        id: &'a str,
        seen_updated_at: i64,
        now: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// Binds `$1` id, `$2` principal, `$3` worker id, `$4` work, `$5` record (empty without a key),
/// `$6` now.
const INSERT_OPERATION: &str =
    "INSERT INTO operations (id, principal, worker_id, state, work, record, created_at, updated_at) \
     VALUES ($1, $2, $3, 'running', $4, $5, $6, $6)";

/// Principal `$1`'s operation `$2`.
const PRINCIPALS_OPERATION: &str =
    "SELECT id, principal, worker_id, state, error, work, record, created_at, updated_at \
     FROM operations WHERE principal = $1 AND id = $2";

/// Binds `$1` state, `$2` error (empty when done), `$3` now, `$4` id.
const SETTLE_OPERATION: &str = "UPDATE operations SET state = $1, error = $2, updated_at = $3 \
     WHERE id = $4 AND state = 'running'";

/// Every running operation not taken up since `$1`, oldest first.
const STALE_OPERATIONS: &str =
    "SELECT id, principal, worker_id, state, error, work, record, created_at, updated_at \
     FROM operations WHERE state = 'running' AND updated_at < $1 ORDER BY created_at, id";

/// Takes up running operation `$2` at `$1` if its `updated_at` is still `$3`.
const TAKE_UP_OPERATION: &str = "UPDATE operations SET updated_at = $1 \
     WHERE id = $2 AND state = 'running' AND updated_at = $3";

/// Decodes a row of the columns [`PRINCIPALS_OPERATION`] returns.
fn operation_from_row<D: Dialect>(row: &D::Row) -> Result<OperationRow, StoreError> {
    Ok(OperationRow {
        id: D::text(row, "id")?,
        principal: D::text(row, "principal")?,
        worker_id: D::text(row, "worker_id")?,
        state: OperationState::parse(&D::text(row, "state")?)?,
        error: Some(D::text(row, "error")?).filter(|e| !e.is_empty()),
        work: D::text(row, "work")?,
        record: Some(D::text(row, "record")?).filter(|r| !r.is_empty()),
        created_at: D::int(row, "created_at")?,
        updated_at: D::int(row, "updated_at")?,
    })
}

impl<D: Dialect> OperationStore for SqlStore<D> {
    fn insert_operation<'a>(
        &'a self,
        operation: &'a OperationRow,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.timed("insert_operation", async move {
            let insert = Statement::new(INSERT_OPERATION)
                .text(&operation.id)
                .text(&operation.principal)
                .text(&operation.worker_id)
                .text(&operation.work)
                .text(operation.record.as_deref().unwrap_or_default())
                .int(operation.created_at);
            self.write(insert).await?;
            Ok(())
        })
    }

    fn get_operation<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<OperationRow>, StoreError>> {
        self.timed("get_operation", async move {
            Statement::new(PRINCIPALS_OPERATION)
                .text(principal)
                .text(id)
                .fetch_optional(self.db())
                .await?
                .map(|row| operation_from_row::<D>(&row))
                .transpose()
        })
    }

    fn settle_operation<'a>(
        &'a self,
        id: &'a str,
        state: OperationState,
        error: Option<&'a str>,
        now: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let settle = Statement::new(SETTLE_OPERATION)
            .text(state.as_str())
            .text(error.unwrap_or_default())
            .int(now)
            .text(id);
        self.timed("settle_operation", self.changes(settle).map_ok(|n| n > 0))
    }

    fn stale_operations(
        &self,
        before: i64,
    ) -> BoxFuture<'_, Result<Vec<OperationRow>, StoreError>> {
        self.timed("stale_operations", async move {
            Statement::new(STALE_OPERATIONS)
                .int(before)
                .fetch_all(self.db())
                .await?
                .iter()
                .map(operation_from_row::<D>)
                .collect()
        })
    }

    fn take_up_operation<'a>(
        &'a self,
        id: &'a str,
        seen_updated_at: i64,
        now: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let take = Statement::new(TAKE_UP_OPERATION)
            .int(now)
            .text(id)
            .int(seen_updated_at);
        self.timed("take_up_operation", self.changes(take).map_ok(|n| n == 1))
    }
}
