//! The embedded SQLite store (the default).
//!
//! One connection: SQLite serialises writers anyway, and a single connection rules out
//! `SQLITE_BUSY` upgrade failures under load. WAL journal and a busy timeout let other processes
//! (an operator's `sqlite3`) read the file while leasebroker runs.

use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::shared::{record_from_row, store_methods, RECORD_COLUMNS};
use super::{Claim, Scope, Store, StoreError};

/// SQLite-backed [`Store`].
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` (`sqlite:` URL) or file `path`, and migrates it.
    pub async fn open(url_or_path: &str, is_url: bool) -> Result<Self, StoreError> {
        let options = if is_url {
            SqliteConnectOptions::from_str(url_or_path)?
        } else {
            SqliteConnectOptions::new().filename(url_or_path)
        };
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(Duration::from_secs(60))
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
    }
}

impl Store for SqliteStore {
    /// SQLite has no `xmax`: the claim writes a fresh nonce on insert and leaves the existing row's nonce
    /// on conflict, so the returned nonce says who inserted. One statement, atomic.
    fn claim<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            let nonce = uuid::Uuid::new_v4().to_string();
            let sql = format!(
                "INSERT INTO idempotency_records \
                   (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
                 VALUES ($1, $2, $3, $4, 'in_flight', $5, $6, $7) \
                 ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET idem_key = excluded.idem_key \
                 RETURNING {RECORD_COLUMNS}"
            );
            let row = sqlx::query(&sql)
                .bind(&scope.principal)
                .bind(&scope.endpoint)
                .bind(&scope.key)
                .bind(fingerprint)
                .bind(&nonce)
                .bind(now)
                .bind(expires_at)
                .fetch_one(&self.pool)
                .await?;
            let record = record_from_row!(&row);
            Ok(Claim {
                inserted: record.nonce == nonce,
                record,
            })
        })
    }

    store_methods!(
        allocate = "UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
                    WHERE node_id = (SELECT node_id FROM nodes WHERE allocation_id IS NULL ORDER BY node_id LIMIT 1) \
                    RETURNING node_id",
        sweep = "DELETE FROM idempotency_records WHERE rowid IN \
                 (SELECT rowid FROM idempotency_records WHERE expires_at < $1 AND state <> 'in_flight' LIMIT $2)",
        sweep_failed = "DELETE FROM idempotency_records WHERE rowid IN \
                 (SELECT rowid FROM idempotency_records WHERE expires_at < $1 AND state = 'failed' LIMIT $2) \
                 RETURNING principal, endpoint, idem_key, claim_nonce",
    );
}
