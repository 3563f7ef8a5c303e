//! PostgreSQL: several leasebroker replicas may share one database, so every statement that decides
//! something (the claim, the node allocation) decides it in the database, atomically.

use std::sync::LazyLock;
use std::time::Duration;

use sqlx::postgres::{PgPoolOptions, PgQueryResult, PgRow};
use sqlx::Postgres;

use super::records::{insert_record, ClaimParams, RECORD_COLUMNS};
use super::sql::{CreateStatements, Dialect};
use super::sql_store::SqlStore;
use super::StoreError;
use crate::metrics::StoreMetrics;

impl SqlStore<Postgres> {
    /// Connects to `url` with up to `max_connections` connections and migrates the schema
    /// (sqlx's migrator takes an advisory lock, so replicas starting together are safe); its calls
    /// are timed into `latency`.
    pub(super) async fn open(
        url: &str,
        max_connections: u32,
        latency: StoreMetrics,
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
// by the variant with the idempotency layer's part and the one without. Each text is composed
// once, at its first use.

/// The fleet's part of the first transaction, binding `$1`–`$6` as [`CreateStatements::reserve`]
/// says; `claim_holds` is the SQL condition under which a node is allocated.
fn reserve_ctes(claim_holds: &str) -> String {
    format!(
        "node AS (UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
           WHERE node_id = (SELECT node_id FROM nodes WHERE allocation_id IS NULL AND {claim_holds} \
             ORDER BY node_id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING node_id), \
         lease AS (INSERT INTO leases (lease_id, node_id, principal, created_at) \
           SELECT $3, node_id, $4, $2 FROM node ON CONFLICT (lease_id) DO NOTHING), \
         boot AS (INSERT INTO boots (boot_id, worker_id, node_id, state, created_at) \
           SELECT $5, $6, node_id, 'pending', $2 FROM node ON CONFLICT (boot_id) DO NOTHING) "
    )
}

/// The atomic claim as two CTEs, binding as `p` says: `new_record` is the row the `INSERT … ON
/// CONFLICT DO NOTHING` wrote, if any; `claim` is that row with `inserted = true`, or else the
/// existing row (as the statement's snapshot sees it) with `inserted = false`: the record's
/// columns as `records.rs` decodes them.
fn claim_cte(p: &ClaimParams) -> String {
    format!(
        "new_record AS ({insert} RETURNING {RECORD_COLUMNS}), \
         claim AS (SELECT true AS inserted, * FROM new_record UNION ALL \
           SELECT false, {RECORD_COLUMNS} FROM idempotency_records \
           WHERE {scope} AND NOT EXISTS (SELECT 1 FROM new_record)) ",
        insert = insert_record(p),
        scope = p.scope_condition(),
    )
}

/// The fleet's part of the last transaction, binding `$1`–`$11` as [`CreateStatements::finish`] says.
const FINISH_CTES: &str = "boot AS (UPDATE boots SET state = 'done', instance_id = $1 \
       WHERE boot_id = $2 AND state <> 'deleted'), \
     worker AS (INSERT INTO workers (id, principal, image, cpu, memory_gb, labels, node_id, \
         lease_id, boot_id, instance_id, state, reboot_count, created_at) \
       SELECT $3, $4, $5, $6, $7, $8, $9, $10, $2, $1, 'running', 0, $11 \
       WHERE NOT EXISTS (SELECT 1 FROM boots WHERE boot_id = $2 AND state = 'deleted') \
       ON CONFLICT (id) DO NOTHING RETURNING id) ";

/// [`Dialect::claim`]'s text.
static CLAIM: LazyLock<String> =
    LazyLock::new(|| format!("WITH {}SELECT * FROM claim", claim_cte(&ClaimParams::ALONE)));

/// [`Dialect::create_statements`]'s texts.
static CREATE_STATEMENTS: LazyLock<CreateStatements> = LazyLock::new(|| CreateStatements {
    reserve: format!("WITH {}SELECT node_id FROM node", reserve_ctes("true")),
    // The claim as `CLAIM`, with the fleet's binds first; a node is allocated (and so a lease and
    // a pending boot written) only when the claim inserted the record. No row, as `CLAIM`, when a
    // concurrent claim committed after the snapshot (and then nothing was written).
    claim_and_reserve: format!(
        "WITH {}, {}SELECT claim.*, (SELECT node_id FROM node) AS node_id FROM claim",
        claim_cte(&ClaimParams::AFTER_RESERVATION),
        reserve_ctes("EXISTS (SELECT 1 FROM new_record)"),
    ),
    finish: format!(
        "WITH {FINISH_CTES}SELECT (SELECT COUNT(*) FROM worker) AS inserted, \
         CAST(0 AS BIGINT) AS completed"
    ),
    // The completion as `records.rs`'s `COMPLETE`, only with a new worker.
    finish_and_complete: format!(
        "WITH {FINISH_CTES}, done AS (UPDATE idempotency_records SET state = 'completed', \
           status = $12, headers = $13, body = $14, compressed = $15, expires_at = $16 \
         WHERE principal = $17 AND endpoint = $18 AND idem_key = $19 AND state = 'in_flight' \
           AND started_at = $20 AND EXISTS (SELECT 1 FROM worker) RETURNING 1) \
         SELECT (SELECT COUNT(*) FROM worker) AS inserted, (SELECT COUNT(*) FROM done) AS completed"
    ),
});

/// How long the first connection may take before leasebroker gives up starting.
const FIRST_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Dialect for Postgres {
    /// Each text is one statement (data-modifying CTEs).
    const SCRIPTS: bool = false;

    /// `INSERT … ON CONFLICT DO NOTHING`, then the existing row when nothing was inserted: one
    /// statement, and a claim that finds a record writes nothing (a replay or an in-flight conflict
    /// takes no row lock and needs no WAL flush). No row when a concurrent claim of the key committed
    /// after this statement's snapshot: the insert waited for it, and the read cannot see it; the
    /// caller runs it again ([`until_claimed`](super::sql::until_claimed)).
    fn claim() -> &'static str {
        &CLAIM
    }

    /// `FOR UPDATE SKIP LOCKED`: concurrent allocations on other replicas take other free nodes
    /// instead of queueing behind one.
    fn allocate_node() -> &'static str {
        "UPDATE nodes SET allocation_id = $1, allocated_at = $2 \
         WHERE node_id = (SELECT node_id FROM nodes WHERE allocation_id IS NULL ORDER BY node_id \
                          LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING node_id"
    }

    /// PostgreSQL has no `DELETE … LIMIT`: the batch is chosen by `ctid`.
    const SWEEP: &'static str = "DELETE FROM idempotency_records WHERE ctid IN \
         (SELECT ctid FROM idempotency_records WHERE expires_at < $1 AND state <> 'in_flight' LIMIT $2)";

    const SWEEP_FAILED: &'static str = "DELETE FROM idempotency_records WHERE ctid IN \
         (SELECT ctid FROM idempotency_records WHERE expires_at < $1 AND state = 'failed' AND state <> 'in_flight' LIMIT $2) \
         RETURNING principal, endpoint, idem_key, claim_nonce";

    fn create_statements() -> &'static CreateStatements {
        &CREATE_STATEMENTS
    }

    /// The `inserted` column: true from the insert's `RETURNING`, false from the read of the row
    /// that was there.
    fn claim_inserted(row: &PgRow, _nonce: &str) -> Result<bool, StoreError> {
        Ok(sqlx::Row::try_get(row, "inserted")?)
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::{
        ClaimRequest, CreateStore, RecordStore, Reservation, Scope, StoredResponse,
    };
    use super::*;
    use crate::testing::TestDatabase;

    async fn store(db: &TestDatabase) -> SqlStore<Postgres> {
        SqlStore::<Postgres>::open(db.url(), 40, StoreMetrics::default())
            .await
            .expect("open PostgreSQL")
    }

    fn scope(key: &str) -> Scope {
        Scope {
            principal: "alice".into(),
            endpoint: "DELETE /v1/workers/{id}".into(),
            key: key.into(),
        }
    }

    /// The row version of `scope`'s record (`xmin`, the transaction that wrote it).
    async fn row_version(store: &SqlStore<Postgres>, scope: &Scope) -> String {
        sqlx::query_scalar(
            "SELECT xmin::text FROM idempotency_records \
             WHERE principal = $1 AND endpoint = $2 AND idem_key = $3",
        )
        .bind(&scope.principal)
        .bind(&scope.endpoint)
        .bind(&scope.key)
        .fetch_one(store.db())
        .await
        .expect("read the record's version")
    }

    /// A claim that finds a record, completed or in flight, writes nothing: the row keeps its
    /// version (no row lock, no WAL flush for a replay), and the record comes back as stored.
    #[tokio::test]
    async fn a_claim_that_finds_a_record_leaves_it_unwritten() {
        let Some(db) = TestDatabase::create("lb_claim").await else {
            return;
        };
        let store = store(&db).await;
        let key = scope("replayed");
        let first = store.claim(&key, "fp", 1_000, 9_000).await.expect("claim");
        assert!(first.inserted);
        let in_flight = row_version(&store, &key).await;
        let again = store.claim(&key, "fp", 1_001, 9_001).await.expect("claim");
        assert!(!again.inserted, "the second claim finds the record");
        assert_eq!(again.record, first.record);
        assert_eq!(row_version(&store, &key).await, in_flight, "in flight");
        let response = StoredResponse {
            status: 204,
            headers_json: "[]".into(),
            body: Vec::new(),
            compressed: false,
        };
        let completed = store
            .complete(&key, first.record.started_at, &response, 9_000)
            .await
            .expect("complete");
        assert!(completed);
        let done = row_version(&store, &key).await;
        let replay = store.claim(&key, "fp", 1_002, 9_002).await.expect("claim");
        assert!(!replay.inserted);
        assert_eq!(replay.record.response, Some(response));
        assert_eq!(row_version(&store, &key).await, done, "completed");
        db.drop_database().await;
    }

    /// The same of a create's first transaction carrying the claim: a second attempt finds the
    /// record, writes nothing, and allocates no node.
    #[tokio::test]
    async fn a_create_whose_claim_finds_a_record_leaves_it_unwritten() {
        let Some(db) = TestDatabase::create("lb_claim").await else {
            return;
        };
        let store = store(&db).await;
        let key = scope("create");
        let reserve = |nonce: &str, allocation: &str| {
            let claim = ClaimRequest {
                scope: key.clone(),
                fingerprint: "fp".into(),
                nonce: nonce.into(),
                now: 1_000,
                expires_at: 9_000,
            };
            let allocation = allocation.to_owned();
            let store = &store;
            async move {
                store
                    .reserve(Reservation {
                        claim: Some(&claim),
                        allocation_id: &allocation,
                        lease_id: &format!("lease-{allocation}"),
                        boot_id: &format!("boot-{allocation}"),
                        worker_id: &format!("wkr-{allocation}"),
                        principal: "alice",
                        now: 1_000,
                    })
                    .await
                    .expect("reserve")
            }
        };
        let first = reserve("nonce-1", "a1").await;
        assert!(first.claim.expect("a claim").inserted);
        let version = row_version(&store, &key).await;
        let second = reserve("nonce-2", "a2").await;
        let claim = second.claim.expect("a claim");
        assert!(!claim.inserted);
        assert_eq!(claim.record.nonce, "nonce-1");
        assert_eq!(
            second.node_id, None,
            "no node for an attempt that did not claim"
        );
        assert_eq!(row_version(&store, &key).await, version);
        db.drop_database().await;
    }

    /// 30 claims of one key released together, 10 rounds: exactly one inserts, and every other
    /// gets the record, including those that waited for the inserter's commit and whose first run
    /// could not see its row.
    #[tokio::test]
    async fn simultaneous_claims_of_one_key_all_get_the_record() {
        let Some(db) = TestDatabase::create("lb_claim").await else {
            return;
        };
        let store = Arc::new(store(&db).await);
        for round in 0..10 {
            let barrier = Arc::new(tokio::sync::Barrier::new(30));
            let tasks: Vec<_> = (0..30)
                .map(|_| {
                    let (store, barrier) = (store.clone(), barrier.clone());
                    tokio::spawn(async move {
                        let key = scope(&format!("round-{round}"));
                        barrier.wait().await;
                        store.claim(&key, "fp", 1_000, 9_000).await
                    })
                })
                .collect();
            let mut claims = Vec::new();
            for task in tasks {
                claims.push(task.await.expect("task").expect("every claim gets a row"));
            }
            assert_eq!(
                claims.iter().filter(|c| c.inserted).count(),
                1,
                "round {round}"
            );
            let nonce = &claims
                .iter()
                .find(|c| c.inserted)
                .expect("one")
                .record
                .nonce;
            assert!(
                claims.iter().all(|c| &c.record.nonce == nonce),
                "round {round}"
            );
        }
        db.drop_database().await;
    }
}
