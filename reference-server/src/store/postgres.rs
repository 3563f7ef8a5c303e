//! PostgreSQL: several leasebroker replicas may share one database, so every statement that decides
//! something (the claim, the node allocation) decides it in the database, atomically.

use std::time::Duration;

use sqlx::postgres::{PgPoolOptions, PgQueryResult, PgRow};
use sqlx::Postgres;

use super::sql::{Dialect, SqlStore};
use super::{IdempotencyRecord, StoreError};
use crate::metrics::StoreLatency;

impl SqlStore<Postgres> {
    /// Connects to `url` with up to `max_connections` connections and migrates the schema
    /// (sqlx's migrator takes an advisory lock, so replicas starting together are safe); its calls
    /// are timed into `latency`.
    pub(super) async fn open(
        url: &str,
        max_connections: u32,
        latency: StoreLatency,
    ) -> Result<Self, StoreError> {
        // One direct attempt first, bounded: a pool that cannot connect retries until its acquire
        // timeout and then reports only "pool timed out", hiding the cause (refused, no such
        // database, authentication) that an operator needs to see.
        let options: sqlx::postgres::PgConnectOptions = url.parse()?;
        match tokio::time::timeout(
            FIRST_CONNECT_TIMEOUT,
            <sqlx::PgConnection as sqlx::Connection>::connect_with(&options),
        )
        .await
        {
            Ok(Ok(conn)) => sqlx::Connection::close(conn).await?,
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => {
                return Err(sqlx::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "no answer from the server within {}",
                        humantime::format_duration(FIRST_CONNECT_TIMEOUT)
                    ),
                ))
                .into())
            }
        }
        // No ping before each acquire: it is a round trip per statement (half of a create's), and a
        // connection the server dropped fails its next statement as a store error, which the
        // idempotency layer already survives (the record stays in flight or is marked failed, and
        // the retry resumes); sqlx then discards that connection.
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30))
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self::new(pool, latency))
    }
}

/// How long the first connection may take before leasebroker gives up starting.
const FIRST_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Dialect for Postgres {
    /// `INSERT … ON CONFLICT … DO UPDATE … RETURNING (xmax = 0)`: one statement; a concurrent inserter
    /// of the same key waits for the row lock, then sees the existing row with `inserted = false`.
    /// The no-op `DO UPDATE` (rather than `DO NOTHING`) is what makes the existing row come back.
    const CLAIM: &'static str = "INSERT INTO idempotency_records \
           (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
         VALUES ($1, $2, $3, $4, 'in_flight', $5, $6, $7) \
         ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET idem_key = EXCLUDED.idem_key \
         RETURNING (xmax = 0) AS inserted, state, fingerprint, claim_nonce, started_at, expires_at, \
           status, headers, body, compressed";

    /// `FOR UPDATE SKIP LOCKED`: concurrent allocations on other replicas take other free nodes
    /// instead of queueing behind one.
    const ALLOCATE_NODE: &'static str = "UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
         WHERE node_id = (SELECT node_id FROM nodes WHERE allocation_id IS NULL ORDER BY node_id \
                          LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING node_id";

    /// PostgreSQL has no `DELETE … LIMIT`: the batch is chosen by `ctid`.
    const SWEEP: &'static str = "DELETE FROM idempotency_records WHERE ctid IN \
         (SELECT ctid FROM idempotency_records WHERE expires_at < $1 AND state <> 'in_flight' LIMIT $2)";

    const SWEEP_FAILED: &'static str = "DELETE FROM idempotency_records WHERE ctid IN \
         (SELECT ctid FROM idempotency_records WHERE expires_at < $1 AND state = 'failed' LIMIT $2) \
         RETURNING principal, endpoint, idem_key, claim_nonce";

    /// `xmax` is 0 on a row this transaction inserted, and set on one it updated (the conflict).
    fn claim_inserted(
        row: &PgRow,
        _record: &IdempotencyRecord,
        _nonce: &str,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::Row::try_get(row, "inserted")?)
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }
}
