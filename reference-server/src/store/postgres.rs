//! PostgreSQL: several leasebroker replicas may share one database, so every statement that decides
//! something (the claim, the node allocation) decides it in the database, atomically.

use std::time::Duration;

use sqlx::postgres::{PgPoolOptions, PgQueryResult, PgRow};
use sqlx::Postgres;

use super::create::CreateStatements;
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

// A create's two transactions as single statements (data-modifying CTEs: one round trip, one
// commit). Every sub-statement sees the same snapshot, so each later one reads what an earlier one
// wrote through its `RETURNING` (`node`, `worker`), not through the table. The fragments are shared
// by the variant with the idempotency layer's part and the one without.

/// The fleet's part of the first transaction, binding `$1`–`$6` as [`CreateStatements::reserve`]
/// says; `$claim_holds` is the SQL condition under which a node is allocated.
macro_rules! reserve_ctes {
    ($claim_holds:literal) => {
        concat!(
            "node AS (UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
               WHERE node_id = (SELECT node_id FROM nodes WHERE allocation_id IS NULL AND ",
            $claim_holds,
            " ORDER BY node_id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING node_id), \
             lease AS (INSERT INTO leases (lease_id, node_id, principal, created_at) \
               SELECT $3, node_id, $4, $2 FROM node ON CONFLICT (lease_id) DO NOTHING), \
             boot AS (INSERT INTO boots (boot_id, worker_id, node_id, state, created_at) \
               SELECT $5, $6, node_id, 'pending', $2 FROM node ON CONFLICT (boot_id) DO NOTHING) "
        )
    };
}

/// The fleet's part of the last transaction, binding `$1`–`$11` as [`CreateStatements::finish`] says.
macro_rules! finish_ctes {
    () => {
        "boot AS (UPDATE boots SET state = 'done', instance_id = $1 WHERE boot_id = $2), \
         worker AS (INSERT INTO workers (id, principal, image, cpu, memory_gb, labels, node_id, \
             lease_id, boot_id, instance_id, state, reboot_count, created_at) \
           VALUES ($3, $4, $5, $6, $7, $8, $9, $10, $2, $1, 'running', 0, $11) \
           ON CONFLICT (id) DO NOTHING RETURNING id) "
    };
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

    const CREATE_STATEMENTS: CreateStatements = CreateStatements {
        script: false,
        reserve: concat!("WITH ", reserve_ctes!("true"), "SELECT node_id FROM node"),
        // The claim as `CLAIM`, with the fleet's binds first; a node is allocated (and so a lease and
        // a pending boot written) only when the claim inserted the record.
        claim_and_reserve: concat!(
            "WITH claim AS (INSERT INTO idempotency_records \
               (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
             VALUES ($7, $8, $9, $10, 'in_flight', $11, $2, $12) \
             ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET idem_key = EXCLUDED.idem_key \
             RETURNING (xmax = 0) AS inserted, state, fingerprint, claim_nonce, started_at, \
               expires_at, status, headers, body, compressed), ",
            reserve_ctes!("(SELECT inserted FROM claim)"),
            "SELECT claim.*, (SELECT node_id FROM node) AS node_id FROM claim"
        ),
        finish: concat!(
            "WITH ",
            finish_ctes!(),
            "SELECT (SELECT COUNT(*) FROM worker) AS inserted, CAST(0 AS BIGINT) AS completed"
        ),
        // The completion as `records.rs`'s `COMPLETE`, only with a new worker.
        finish_and_complete: concat!(
            "WITH ",
            finish_ctes!(),
            ", done AS (UPDATE idempotency_records SET state = 'completed', status = $12, \
               headers = $13, body = $14, compressed = $15, expires_at = $16 \
             WHERE principal = $17 AND endpoint = $18 AND idem_key = $19 AND state = 'in_flight' \
               AND started_at = $20 AND EXISTS (SELECT 1 FROM worker) RETURNING 1) \
             SELECT (SELECT COUNT(*) FROM worker) AS inserted, (SELECT COUNT(*) FROM done) AS completed"
        ),
    };

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
