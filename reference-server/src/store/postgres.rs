//! The PostgreSQL store: several leasebroker replicas may share one database.

use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::shared::{record_from_row, store_methods, RECORD_COLUMNS};
use super::{Claim, Scope, Store, StoreError};

/// PostgreSQL-backed [`Store`].
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to `url` with up to `max_connections` connections and migrates the schema
    /// (sqlx's migrator takes an advisory lock, so replicas starting together are safe).
    pub async fn open(url: &str, max_connections: u32) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(30))
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }
}

impl Store for PostgresStore {
    /// `INSERT … ON CONFLICT … DO UPDATE … RETURNING (xmax = 0)`: one statement; a concurrent inserter
    /// of the same key waits for the row lock, then sees the existing row with `inserted = false`.
    fn claim<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            let sql = format!(
                "INSERT INTO idempotency_records \
                   (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
                 VALUES ($1, $2, $3, $4, 'in_flight', $7, $5, $6) \
                 ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET idem_key = EXCLUDED.idem_key \
                 RETURNING (xmax = 0) AS inserted, {RECORD_COLUMNS}"
            );
            let row = sqlx::query(&sql)
                .bind(&scope.principal)
                .bind(&scope.endpoint)
                .bind(&scope.key)
                .bind(fingerprint)
                .bind(now)
                .bind(expires_at)
                .bind(uuid::Uuid::new_v4().to_string())
                .fetch_one(&self.pool)
                .await?;
            Ok(Claim {
                inserted: sqlx::Row::try_get(&row, "inserted")?,
                record: record_from_row!(&row),
            })
        })
    }

    store_methods!(
        allocate = "UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
                    WHERE node_id = (SELECT node_id FROM nodes WHERE allocation_id IS NULL ORDER BY node_id \
                                     LIMIT 1 FOR UPDATE SKIP LOCKED) \
                    RETURNING node_id",
        sweep = "DELETE FROM idempotency_records WHERE ctid IN \
                 (SELECT ctid FROM idempotency_records WHERE expires_at < $1 AND state <> 'in_flight' LIMIT $2)",
        sweep_failed = "DELETE FROM idempotency_records WHERE ctid IN \
                 (SELECT ctid FROM idempotency_records WHERE expires_at < $1 AND state = 'failed' LIMIT $2) \
                 RETURNING principal, endpoint, idem_key, claim_nonce",
    );
}
