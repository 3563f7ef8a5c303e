//! The embedded SQLite store (the default).
//!
//! One connection: SQLite serialises writers anyway, and a single connection rules out
//! `SQLITE_BUSY` upgrade failures under load. WAL journal and a busy timeout let other processes
//! (an operator's `sqlite3`) read the file while leasebroker runs. Transactions are scripts, and
//! scripts that wait for the connection are committed together (`batch.rs`). On a file, a second
//! connection only checkpoints the WAL (`checkpoints`): it writes no rows, and the copy into the
//! database file is no longer made inside the one connection's commits.

use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Sqlite;

use super::records::{insert_record, ClaimParams, RECORD_COLUMNS};
use super::sql::{CreateStatements, Dialect, Driver};
use super::sql_store::SqlStore;
use super::StoreError;
use crate::metrics::StoreMetrics;

impl SqlStore<Sqlite> {
    /// Opens (creating if missing) the database at `url` (`sqlite:` URL) or file `path`, and migrates it.
    /// Its calls are timed into `latency`. With a WAL (a file, not `:memory:`) it starts the WAL's
    /// [`checkpoints`] on a second connection, which stop when the store is dropped.
    pub(super) async fn open(
        url_or_path: &str,
        is_url: bool,
        latency: StoreMetrics,
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
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&pool)
            .await?;
        let checkpointer = if journal.eq_ignore_ascii_case("wal") {
            let connection =
                <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&options).await?;
            let (stop, stopped) = tokio::sync::oneshot::channel();
            tokio::spawn(checkpoints(connection, stopped, CHECKPOINT_EVERY));
            Some(stop)
        } else {
            None
        };
        Ok(Self::new(pool, latency).with_checkpointer(checkpointer))
    }
}

/// How often the store's WAL is checkpointed from a connection of its own ([`checkpoints`]).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(10);

/// The WAL's length, in pages, past which the store's connection checkpoints it itself after a
/// commit (SQLite's automatic checkpoint; its default is 1000). By then [`checkpoints`] has copied
/// all but the last [`CHECKPOINT_EVERY`] of it, so that checkpoint is short, and it lets the next
/// transaction start the WAL over.
pub const WAL_PAGES: u32 = 4096;

/// Checkpoints the WAL on `connection` (passively) every `every` until `stopped` fires or its
/// sender is dropped (the store is), then closes the connection.
///
/// A passive checkpoint copies the WAL's committed pages into the database file beside the store's
/// one connection, without waiting for it or blocking it. Inside a commit on that connection
/// (SQLite's automatic checkpoint, every 1000 pages by default) the copy and its `fsync` held up
/// every script waiting for the connection. The WAL is started over only by a transaction that
/// begins with all of it copied, which a connection almost always in a transaction seldom finds
/// after a checkpoint from elsewhere (under load here the WAL grew past 2 GB): the store's
/// connection still checkpoints what is left past [`WAL_PAGES`], and its next transaction starts
/// the WAL over.
async fn checkpoints(
    mut connection: sqlx::SqliteConnection,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
    every: Duration,
) {
    use sqlx::Connection;
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            _ = ticks.tick() => {}
        }
        if let Err(err) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&mut connection)
            .await
        {
            tracing::warn!(%err, "WAL checkpoint");
        }
    }
    let _ = connection.close().await;
}

/// How many prepared texts the connection keeps: the group commit's (at most
/// [`Texts::MAX`](super::batch)) and the store's own statements.
pub(super) const STATEMENT_CACHE: usize = 400;

/// The connection settings leasebroker opens `url_or_path` with (a `sqlite:` URL when `is_url`, else
/// a file path): created if missing, WAL journal, `synchronous = NORMAL` (in WAL mode a commit is
/// durable against a crash of the process, and the WAL is synced at checkpoints), 10 s busy timeout,
/// [`STATEMENT_CACHE`] prepared texts kept, and the WAL checkpointed automatically only past
/// [`WAL_PAGES`] (the store checkpoints it more often from a connection of its own).
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
        .busy_timeout(Duration::from_secs(10))
        .statement_cache_capacity(STATEMENT_CACHE)
        // The store checkpoints the WAL from a connection of its own (`checkpoints`); its one
        // connection only finishes the job past this length.
        .pragma("wal_autocheckpoint", WAL_PAGES.to_string()))
}

// A create's two transactions as scripts with the parameters of PostgreSQL's single statements
// (`CreateStatements`), each ending, just before its `COMMIT`, in a `SELECT` of the row
// PostgreSQL's statement returns (read inside the transaction, as PostgreSQL's is). A
// statement after the node allocation finds the node by its `allocation_id` ($1, unique).

/// The free node a create takes. `INDEXED BY nodes_free` (migration 0003): without table statistics
/// SQLite's planner takes the unique index on `allocation_id` instead, reads every free node and
/// sorts them, per create.
const FIRST_FREE_NODE: &str = "(SELECT node_id FROM nodes INDEXED BY nodes_free \
      WHERE allocation_id IS NULL ORDER BY node_id LIMIT 1)";

/// The fleet's part of the first transaction, binding `$1`–`$6` as [`CreateStatements::reserve`]
/// says; `claim_holds` is the SQL condition under which a node is allocated. `WHERE` in each
/// `INSERT … SELECT` also keeps SQLite from reading the `ON CONFLICT` as a join's.
fn reserve_script(claim_holds: &str) -> String {
    format!(
        "UPDATE nodes SET allocation_id = $1, allocated_at = $2 WHERE node_id = {FIRST_FREE_NODE} \
           AND {claim_holds}; \
         INSERT INTO leases (lease_id, node_id, principal, created_at) \
           SELECT $3, node_id, $4, $2 FROM nodes WHERE allocation_id = $1 \
           ON CONFLICT (lease_id) DO NOTHING; \
         INSERT INTO boots (boot_id, worker_id, node_id, state, created_at) \
           SELECT $5, $6, node_id, 'pending', $2 FROM nodes WHERE allocation_id = $1 \
           ON CONFLICT (boot_id) DO NOTHING; "
    )
}

/// The fleet's part of the last transaction, binding `$1`–`$11` as [`CreateStatements::finish`] says.
const FINISH_SCRIPT: &str = "UPDATE boots SET state = 'done', instance_id = $1 WHERE boot_id = $2 \
       AND state <> 'deleted'; \
     INSERT INTO workers (id, principal, image, cpu, memory_gb, labels, node_id, lease_id, \
         boot_id, instance_id, state, reboot_count, created_at) \
       SELECT $3, $4, $5, $6, $7, $8, $9, $10, $2, $1, 'running', 0, $11 \
       WHERE NOT EXISTS (SELECT 1 FROM boots WHERE boot_id = $2 AND state = 'deleted') \
       ON CONFLICT (id) DO NOTHING; ";

/// Whether the worker `$3` is the one this script wrote: its boot, instance and creation time are
/// this attempt's (a concurrent attempt of the same operation that wrote it first wrote another
/// instance, or, writing the same one, the same worker).
const WORKER_IS_OURS: &str = "EXISTS (SELECT 1 FROM workers WHERE id = $3 AND boot_id = $2 \
       AND instance_id = $1 AND created_at = $11)";

/// [`Dialect::claim`]'s text.
static CLAIM: LazyLock<String> = LazyLock::new(|| {
    let p = ClaimParams::ALONE;
    format!(
        "BEGIN IMMEDIATE; {}; SELECT {RECORD_COLUMNS} FROM idempotency_records WHERE {}; COMMIT",
        insert_record(&p),
        p.scope_condition()
    )
});

/// [`Dialect::allocate_node`]'s text.
static ALLOCATE_NODE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE nodes SET allocation_id = $1, allocated_at = $2 WHERE node_id = {FIRST_FREE_NODE} \
         RETURNING node_id"
    )
});

/// [`Dialect::create_statements`]'s texts.
static CREATE_STATEMENTS: LazyLock<CreateStatements> = LazyLock::new(|| {
    let p = ClaimParams::AFTER_RESERVATION;
    CreateStatements {
        reserve: format!(
            "BEGIN IMMEDIATE; {}SELECT node_id FROM nodes WHERE allocation_id = $1; COMMIT",
            reserve_script("true")
        ),
        // The claim as `CLAIM`, then the fleet's part only if it inserted the record: the stored
        // nonce is this claim's (`claim_inserted`).
        claim_and_reserve: format!(
            "BEGIN IMMEDIATE; {insert}; {reserve}SELECT {RECORD_COLUMNS}, \
               (SELECT node_id FROM nodes WHERE allocation_id = $1) AS node_id \
             FROM idempotency_records WHERE {scope}; COMMIT",
            insert = insert_record(&p),
            reserve = reserve_script(&format!(
                "EXISTS (SELECT 1 FROM idempotency_records WHERE {} AND claim_nonce = {})",
                p.scope_condition(),
                p.nonce
            )),
            scope = p.scope_condition(),
        ),
        finish: format!(
            "BEGIN IMMEDIATE; {FINISH_SCRIPT}SELECT {WORKER_IS_OURS} AS inserted, 0 AS completed; \
             COMMIT"
        ),
        // The completion as `records.rs`'s `COMPLETE`, only with our worker; `changes()` is how
        // many records it completed (0 or 1): only an INSERT, UPDATE or DELETE sets it, not the
        // `SELECT` (SQLite's `sqlite3_changes`).
        finish_and_complete: format!(
            "BEGIN IMMEDIATE; {FINISH_SCRIPT}UPDATE idempotency_records SET state = 'completed', \
               status = $12, headers = $13, body = $14, compressed = $15, expires_at = $16 \
             WHERE principal = $17 AND endpoint = $18 AND idem_key = $19 AND state = 'in_flight' \
               AND started_at = $20 AND {WORKER_IS_OURS}; \
             SELECT {WORKER_IS_OURS} AS inserted, changes() AS completed; COMMIT"
        ),
    }
});

impl Dialect for Sqlite {
    /// No data-modifying CTEs: texts of several statements are scripts, each one trip through sqlx's
    /// worker thread (a trip per statement cost more than the statements).
    const SCRIPTS: bool = true;

    /// A script: the insert, `DO NOTHING` on a conflict (a claim that finds a record writes no
    /// page), then the record read inside the same transaction. SQLite has no `xmax`: the insert
    /// binds a fresh nonce and a conflict leaves the stored one, so the nonce read back says who
    /// inserted (`claim_inserted`).
    fn claim() -> &'static str {
        &CLAIM
    }

    /// No `SKIP LOCKED` (nor a need: one connection, and SQLite serialises writers).
    fn allocate_node() -> &'static str {
        &ALLOCATE_NODE
    }

    /// SQLite's `DELETE … LIMIT` needs a compile-time option: the batch is chosen by `rowid`.
    const SWEEP: &'static str = "DELETE FROM idempotency_records WHERE rowid IN \
         (SELECT rowid FROM idempotency_records WHERE expires_at < $1 AND state <> 'in_flight' LIMIT $2)";

    const SWEEP_FAILED: &'static str = "DELETE FROM idempotency_records WHERE rowid IN \
         (SELECT rowid FROM idempotency_records WHERE expires_at < $1 AND state = 'failed' AND state <> 'in_flight' LIMIT $2) \
         RETURNING principal, endpoint, idem_key, claim_nonce";

    fn create_statements() -> &'static CreateStatements {
        &CREATE_STATEMENTS
    }

    /// Ours when the stored nonce is the one this claim bound.
    fn claim_inserted(row: &SqliteRow, nonce: &str) -> Result<bool, StoreError> {
        Ok(Self::text(row, "claim_nonce")? == nonce)
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(test)]
mod tests {
    use super::super::sql::Statement;
    use super::*;
    use sqlx::Row;

    /// A file database with table `blobs`, its settings with `wal_autocheckpoint` at `pages`, a
    /// writer on it, and [`checkpoints`] every millisecond on a connection of their own (stopped
    /// by the sender returned).
    async fn checkpointed_file(
        pages: u32,
    ) -> (
        tempfile::TempDir,
        sqlx::SqliteConnection,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        use sqlx::Connection;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("wal.db").display().to_string();
        let options = sqlite_options(&path, false)
            .expect("options")
            .pragma("wal_autocheckpoint", pages.to_string());
        let mut writer = sqlx::SqliteConnection::connect_with(&options)
            .await
            .expect("the writer");
        sqlx::query("CREATE TABLE blobs (b BLOB)")
            .execute(&mut writer)
            .await
            .expect("table");
        let checkpointer = sqlx::SqliteConnection::connect_with(&options)
            .await
            .expect("the checkpoints' connection");
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(checkpoints(checkpointer, stopped, Duration::from_millis(1)));
        (dir, writer, stop, task)
    }

    /// A store on a new file `name` in a new temporary directory (kept while the guard lives),
    /// and the file's path.
    async fn file_store(name: &str) -> (tempfile::TempDir, String, SqlStore<Sqlite>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(name).display().to_string();
        let store = SqlStore::<Sqlite>::open(&path, false, Default::default())
            .await
            .expect("open SQLite");
        (dir, path, store)
    }

    /// The steps of SQLite's plan for `sql` (`EXPLAIN QUERY PLAN`, parameters unbound).
    async fn query_plan(store: &SqlStore<Sqlite>, sql: &str) -> Vec<String> {
        sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
            .fetch_all(store.db())
            .await
            .expect("explain")
            .iter()
            .map(|row| row.get::<String, _>("detail"))
            .collect()
    }

    /// A blob of three pages.
    const BLOB: [u8; 3 * 4096] = [7; 3 * 4096];

    /// The checkpoints copy the WAL into the database file while the writer, which has not
    /// reached its own checkpoint's length, does nothing more.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn checkpoints_copy_the_wal_into_the_database_beside_the_writer() {
        let (dir, mut writer, stop, task) = checkpointed_file(WAL_PAGES).await;
        for _ in 0..50 {
            sqlx::query("INSERT INTO blobs (b) VALUES ($1)")
                .bind(&BLOB[..])
                .execute(&mut writer)
                .await
                .expect("insert");
        }
        let database = dir.path().join("wal.db");
        let copied = tokio::time::timeout(Duration::from_secs(10), async {
            while std::fs::metadata(&database).map_or(0, |m| m.len()) < 150 * 4096 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(
            copied.is_ok(),
            "the database file holds {} bytes of 50 commits of three pages",
            std::fs::metadata(&database).map_or(0, |m| m.len())
        );
        let _ = stop.send(());
        task.await.expect("the checkpoints end when told");
    }

    /// A writer almost always in a transaction (each spans several checkpoints) never lets a
    /// checkpoint from elsewhere start the WAL over; its own past `wal_autocheckpoint` does, so the
    /// WAL stays near that length where it would grow with every commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_under_a_writer_always_in_a_transaction() {
        use sqlx::Connection;
        const PAGES: u32 = 64;
        const PAGE_IN_WAL: u64 = 4096 + 24;
        let (dir, mut writer, stop, task) = checkpointed_file(PAGES).await;
        let wal = dir.path().join("wal.db-wal");
        let mut longest = 0;
        for _ in 0..200 {
            let mut tx = writer.begin().await.expect("begin");
            sqlx::query("INSERT INTO blobs (b) VALUES ($1)")
                .bind(&BLOB[..])
                .execute(&mut *tx)
                .await
                .expect("insert");
            tokio::time::sleep(Duration::from_millis(3)).await;
            tx.commit().await.expect("commit");
            longest = longest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        let _ = stop.send(());
        task.await.expect("the checkpoints end when told");
        let pages = longest / PAGE_IN_WAL;
        assert!(
            pages < 4 * u64::from(PAGES),
            "the WAL reached {pages} pages: 200 commits of three pages, started over past {PAGES}"
        );
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM blobs")
            .fetch_one(&mut writer)
            .await
            .expect("count");
        assert_eq!(count, 200, "every commit kept");
    }

    /// Both sweeps read the records by the expiry index, which holds only terminal records
    /// (migration 0004): SQLite's planner takes a partial index only for a query that states its
    /// condition, so without `state <> 'in_flight'` in its text a sweep would read every record.
    #[tokio::test]
    async fn the_sweeps_read_the_terminal_expiry_index() {
        let (_dir, _, store) = file_store("sweep.db").await;
        for sweep in [Sqlite::SWEEP, Sqlite::SWEEP_FAILED] {
            let plan = query_plan(&store, sweep).await;
            assert!(
                plan.iter().any(|step| step.contains(
                    "SEARCH idempotency_records USING INDEX idempotency_records_expires_at"
                )),
                "{sweep}: {plan:?}"
            );
        }
    }

    /// A script whose statement fails part-way leaves nothing of it and no transaction open: the
    /// one connection's next script begins its own and commits.
    #[tokio::test]
    async fn a_script_that_fails_part_way_is_rolled_back_on_its_connection() {
        let (_dir, _, store) = file_store("script.db").await;
        const INSERT: &str = "INSERT INTO leases (lease_id, node_id, principal, created_at) ";
        let script = format!(
            "BEGIN IMMEDIATE; {INSERT} VALUES ($1, 1, 'p', 0); {INSERT} VALUES ($2, 1, 'p', 0); \
             COMMIT; SELECT COUNT(*) AS n FROM leases"
        );
        let same_lease_twice = store
            .run_script(Statement::new(&script).text("a").text("a"))
            .await;
        assert!(
            same_lease_twice.is_err(),
            "the second insert of lease `a` fails"
        );
        let rows = store
            .run_script(Statement::new(&script).text("b").text("c"))
            .await
            .expect("the next script begins, inserts and commits");
        let n: i64 = rows.last().expect("the count").get("n");
        assert_eq!(n, 2, "lease `a` was rolled back");
    }

    /// A script dropped part-way (its caller gone: a client that hung up) is rolled back on its
    /// connection, which then goes back to the pool: nothing of it is kept, and a `:memory:`
    /// database, which lives only while its connection is open, keeps its tables.
    #[tokio::test]
    async fn a_script_dropped_part_way_is_rolled_back_and_its_connection_kept() {
        let store = SqlStore::<Sqlite>::open("sqlite::memory:", true, Default::default())
            .await
            .expect("open SQLite in memory");
        const SLOW: &str = "SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL \
             SELECT x + 1 FROM c WHERE x < 3000000) SELECT x FROM c)";
        let script = format!(
            "BEGIN IMMEDIATE; INSERT INTO leases (lease_id, node_id, principal, created_at) \
             VALUES ('dropped', 1, 'p', 0); {SLOW}; COMMIT"
        );
        let dropped = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            store.run_script(Statement::new(&script)),
        )
        .await;
        assert!(
            dropped.is_err(),
            "the script outlives 50 ms, so it is dropped part-way"
        );
        let rows = store
            .run_script(Statement::new(
                "BEGIN IMMEDIATE; SELECT COUNT(*) AS n FROM leases; COMMIT",
            ))
            .await
            .expect("the next script finds the tables and begins its own transaction");
        let n: i64 = rows.last().expect("the count").get("n");
        assert_eq!(n, 0, "the dropped script's lease was rolled back");
    }

    /// A script that fails before its `BEGIN` leaves no transaction for the rollback to end: the
    /// database's "no transaction is active" is told from other failures, so the connection is
    /// kept, and a `:memory:` database with it (closing it would lose every table).
    #[tokio::test]
    async fn a_script_that_fails_before_its_transaction_keeps_its_connection() {
        let store = SqlStore::<Sqlite>::open("sqlite::memory:", true, Default::default())
            .await
            .expect("open SQLite in memory");
        let failed = store
            .run_script(Statement::new(
                "SELECT no_such_column FROM leases; BEGIN IMMEDIATE; SELECT 1; COMMIT",
            ))
            .await;
        assert!(failed.is_err(), "the first statement fails");
        // The rollback runs in a task of its own; the next script waits for the connection.
        let rows = store
            .run_script(Statement::new(
                "BEGIN IMMEDIATE; SELECT COUNT(*) AS n FROM leases; COMMIT",
            ))
            .await
            .expect("the tables are still there");
        let n: i64 = rows.last().expect("the count").get("n");
        assert_eq!(n, 0);
    }

    /// A claim that finds a record, alone or in a create's first transaction, commits no change:
    /// another connection's `PRAGMA data_version` (which moves when any other connection commits a
    /// change to the file) stays where it was, and the record comes back as stored.
    #[tokio::test]
    async fn a_claim_that_finds_a_record_commits_no_change() {
        use super::super::{ClaimRequest, CreateStore, RecordStore, Reservation, Scope};
        use sqlx::Connection;
        let (_dir, path, store) = file_store("claim.db").await;
        let mut watcher =
            sqlx::SqliteConnection::connect_with(&sqlite_options(&path, false).expect("options"))
                .await
                .expect("a second connection");
        let scope = Scope {
            principal: "alice".into(),
            endpoint: "POST /v1/workers".into(),
            key: "k".into(),
        };
        let first = store
            .claim(&scope, "fp", 1_000, 9_000)
            .await
            .expect("claim");
        assert!(first.inserted);
        const VERSION: &str = "PRAGMA data_version";
        let before: i64 = sqlx::query_scalar(VERSION)
            .fetch_one(&mut watcher)
            .await
            .expect("data_version");
        let again = store
            .claim(&scope, "fp", 1_001, 9_001)
            .await
            .expect("claim");
        assert!(!again.inserted);
        assert_eq!(again.record, first.record);
        let claim = ClaimRequest {
            scope: scope.clone(),
            fingerprint: "fp".into(),
            nonce: "another".into(),
            now: 1_002,
            expires_at: 9_002,
        };
        let reserved = store
            .reserve(Reservation {
                claim: Some(&claim),
                allocation_id: "a",
                lease_id: "l",
                boot_id: "b",
                worker_id: "w",
                principal: "alice",
                now: 1_002,
            })
            .await
            .expect("reserve");
        let found = reserved.claim.expect("a claim");
        assert!(!found.inserted);
        assert_eq!(found.record, first.record);
        let after: i64 = sqlx::query_scalar(VERSION)
            .fetch_one(&mut watcher)
            .await
            .expect("data_version");
        assert_eq!(after, before, "no change committed");
        let _ = watcher.close().await;
    }

    /// A create finds its free node through `nodes_free`, one index step, not by reading every
    /// free node and sorting them (the plan SQLite chose without the `INDEXED BY`).
    #[tokio::test]
    async fn a_free_node_is_found_through_the_free_nodes_index() {
        let (_dir, _, store) = file_store("plan.db").await;
        let plan = query_plan(&store, Sqlite::allocate_node()).await;
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INDEX nodes_free"))
                && !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }
}
