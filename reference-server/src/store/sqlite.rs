//! The embedded SQLite store (the default).
//!
//! One connection: SQLite serialises writers anyway, and a single connection rules out
//! `SQLITE_BUSY` upgrade failures under load. WAL journal and a busy timeout let other processes
//! (an operator's `sqlite3`) read the file while leasebroker runs.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Sqlite;

use super::create::CreateStatements;
use super::sql::{Dialect, SqlStore};
use super::{IdempotencyRecord, StoreError};
use crate::metrics::StoreLatency;

impl SqlStore<Sqlite> {
    /// Opens (creating if missing) the database at `url` (`sqlite:` URL) or file `path`, and migrates it.
    /// Its calls are timed into `latency`.
    pub(super) async fn open(
        url_or_path: &str,
        is_url: bool,
        latency: StoreLatency,
    ) -> Result<Self, StoreError> {
        let options = sqlite_options(url_or_path, is_url)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            // An in-process file connection has nothing to ping; a ping per statement is a trip
            // through sqlx's worker thread.
            .test_before_acquire(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(Duration::from_secs(60))
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Self::new(pool, latency))
    }
}

/// The connection settings leasebroker opens `url_or_path` with (a `sqlite:` URL when `is_url`, else
/// a file path): created if missing, WAL journal, `synchronous = NORMAL` (in WAL mode a commit is
/// durable against a crash of the process, and the WAL is synced at checkpoints), 10 s busy timeout.
/// Public so the benchmark measures SQLite's own commit rate on the same settings.
///
/// # Errors
/// A `sqlite:` URL that does not parse.
pub fn sqlite_options(url_or_path: &str, is_url: bool) -> Result<SqliteConnectOptions, StoreError> {
    let options = if is_url {
        SqliteConnectOptions::from_str(url_or_path)?
    } else {
        SqliteConnectOptions::new().filename(url_or_path)
    };
    Ok(options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(10)))
}

impl Dialect for Sqlite {
    /// SQLite has no `xmax`: the claim writes a fresh nonce on insert and leaves the existing row's
    /// nonce on conflict, so the returned nonce says who inserted. One statement, atomic.
    const CLAIM: &'static str = "INSERT INTO idempotency_records \
           (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
         VALUES ($1, $2, $3, $4, 'in_flight', $5, $6, $7) \
         ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET idem_key = excluded.idem_key \
         RETURNING state, fingerprint, claim_nonce, started_at, expires_at, status, headers, body, \
           compressed";

    /// No `SKIP LOCKED` (nor a need: one connection, and SQLite serialises writers). `INDEXED BY
    /// nodes_free` (migration 0003): without table statistics SQLite's planner takes the unique
    /// index on `allocation_id` instead, reads every free node and sorts them, per create.
    const ALLOCATE_NODE: &'static str = "UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
         WHERE node_id = (SELECT node_id FROM nodes INDEXED BY nodes_free \
                          WHERE allocation_id IS NULL ORDER BY node_id LIMIT 1) \
         RETURNING node_id";

    /// SQLite's `DELETE … LIMIT` needs a compile-time option: the batch is chosen by `rowid`.
    const SWEEP: &'static str = "DELETE FROM idempotency_records WHERE rowid IN \
         (SELECT rowid FROM idempotency_records WHERE expires_at < $1 AND state <> 'in_flight' LIMIT $2)";

    const SWEEP_FAILED: &'static str = "DELETE FROM idempotency_records WHERE rowid IN \
         (SELECT rowid FROM idempotency_records WHERE expires_at < $1 AND state = 'failed' LIMIT $2) \
         RETURNING principal, endpoint, idem_key, claim_nonce";

    /// No data-modifying CTEs; and a statement costs no network round trip here.
    const CREATE_STATEMENTS: Option<CreateStatements> = None;

    /// Ours when the stored nonce is the one this claim bound.
    fn claim_inserted(
        _row: &SqliteRow,
        record: &IdempotencyRecord,
        nonce: &str,
    ) -> Result<bool, StoreError> {
        Ok(record.nonce == nonce)
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Row;

    /// A create finds its free node through `nodes_free`, one index step, not by reading every
    /// free node and sorting them (the plan SQLite chose without the `INDEXED BY`).
    #[tokio::test]
    async fn a_free_node_is_found_through_the_free_nodes_index() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("plan.db");
        let store =
            SqlStore::<Sqlite>::open(&path.display().to_string(), false, Default::default())
                .await
                .expect("open SQLite");
        let plan: Vec<String> =
            sqlx::query(&format!("EXPLAIN QUERY PLAN {}", Sqlite::ALLOCATE_NODE))
                .fetch_all(store.db())
                .await
                .expect("explain the allocation")
                .iter()
                .map(|row| row.get::<String, _>("detail"))
                .collect();
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INDEX nodes_free"))
                && !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }
}
