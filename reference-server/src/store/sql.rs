//! The seam the one implementation of the store traits (`SqlStore`, `sql_store.rs`) runs over.
//!
//! - [`Dialect`]: what differs between PostgreSQL and SQLite — the atomic claim and how it tells who
//!   inserted, the node allocation, the batched sweeps, a create's two transactions (one statement
//!   each, or a script each). Implemented in `postgres.rs` and `sqlite.rs`.
//! - [`Driver`]: what the shared statements ask of a sqlx driver (bind `&str`, `i64` and bytes; read
//!   them back; run a statement on the pool or inside a transaction). Its one blanket implementation
//!   holds the trait bounds that say both drivers can; Rust carries a trait's supertraits along with
//!   it but not bounds on other types (`i64: Encode<D>`), so without it every generic `impl` would
//!   restate them. The code over a `D: Dialect` needs no bounds of its own.
//! - [`Statement`]: a statement and its parameters, built with those binds.

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;

use futures::TryStreamExt;
use sqlx::Either;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Type};

use super::StoreError;

/// A sqlx query with the database's own argument buffer.
pub(super) type Query<'q, D> = sqlx::query::Query<'q, D, <D as Database>::Arguments<'q>>;

/// How a batchable script opens and closes its transaction.
pub(super) const BEGIN: &str = "BEGIN IMMEDIATE;";
pub(super) const COMMIT: &str = "COMMIT";

/// A create's two transactions, each one round trip to the database: on PostgreSQL one statement
/// each (see `postgres.rs`); on SQLite a script of statements run in a transaction (see
/// `sqlite.rs`), whose last row, from a `SELECT` before its `COMMIT`, is the row PostgreSQL's
/// returns. Both bind the parameters numbered as below.
#[derive(Debug)]
pub(super) struct CreateStatements {
    /// Binds `$1` allocation id, `$2` now, `$3` lease id, `$4` principal, `$5` boot id, `$6` worker
    /// id; returns `node_id` (no row when the pool is exhausted).
    pub(super) reserve: String,
    /// As `reserve`, after the claim: `$7`–`$9` scope, `$10` fingerprint, `$11` nonce, `$12`
    /// expires_at; returns the claim's columns and a nullable `node_id`.
    pub(super) claim_and_reserve: String,
    /// Binds `$1` instance id, `$2` boot id, `$3` worker id, `$4` principal, `$5` image, `$6` cpu,
    /// `$7` memory_gb, `$8` labels, `$9` node id, `$10` lease id, `$11` created_at; returns
    /// `inserted` (0/1) and `completed` (0).
    pub(super) finish: String,
    /// As `finish`, then the completion: `$12` status, `$13` headers, `$14` body, `$15` compressed,
    /// `$16` expires_at, `$17`–`$19` scope, `$20` started_at; `completed` is 0/1.
    pub(super) finish_and_complete: String,
}

/// Runs `script` (see [`SqlStore::run_script`]) on `connection`, which goes back to the pool with
/// no transaction open.
pub(super) async fn run_on<D: Dialect>(
    connection: sqlx::pool::PoolConnection<D>,
    script: Statement<'_, D>,
) -> Result<Vec<D::Row>, StoreError> {
    let (mut each, _connection) = run_all(connection, vec![script]).await?;
    Ok(each
        .pop()
        .expect("one text's rows")
        .into_iter()
        .flatten()
        .collect())
}

/// Runs `statements` one after another on `connection`, each a trip of its own; returns each
/// one's rows, one list per SQL statement of its text, and the connection, with no transaction open, for the caller to run more on or
/// to drop (back to the pool). Together they open and commit their transactions (a
/// [script](SqlStore::run_script) each, or a group commit's batch: the first begins, the last
/// commits). When a statement fails, or the call is dropped part-way, the connection is rolled
/// back before it goes back to the pool ([`RolledBackUnlessReleased`]), and nothing uncommitted
/// is kept.
pub(super) async fn run_all<D: Dialect>(
    connection: sqlx::pool::PoolConnection<D>,
    statements: Vec<Statement<'_, D>>,
) -> Result<(Vec<Vec<Vec<D::Row>>>, sqlx::pool::PoolConnection<D>), StoreError> {
    let mut conn = RolledBackUnlessReleased(Some(connection));
    let connection: &mut D::Connection = conn.0.as_mut().expect("held until released");
    let mut each = Vec::with_capacity(statements.len());
    for statement in statements {
        each.push(
            statement
                .fetch_each(D::in_transaction(&mut *connection))
                .await?,
        );
    }
    Ok((each, conn.release()))
}

/// A pooled connection that may hold an open transaction: dropped without
/// [`RolledBackUnlessReleased::release`], it is rolled back in a task of its own, which then
/// returns it to the pool. Closing it instead would also roll back, but would lose a `:memory:`
/// database, which lives only while its one connection is open. The database's refusal because
/// no transaction is active (the script failed before its `BEGIN`, or its `COMMIT` rolled back)
/// also leaves none open; any other failure, which may leave one open, closes the connection.
struct RolledBackUnlessReleased<D: Dialect>(Option<sqlx::pool::PoolConnection<D>>);

impl<D: Dialect> RolledBackUnlessReleased<D> {
    /// The connection, which holds no open transaction.
    fn release(mut self) -> sqlx::pool::PoolConnection<D> {
        self.0.take().expect("held until released")
    }
}

impl<D: Dialect> Drop for RolledBackUnlessReleased<D> {
    fn drop(&mut self) {
        let Some(mut connection) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            connection.close_on_drop();
            return;
        };
        runtime.spawn(async move {
            let rolled_back = Statement::<D>::new("ROLLBACK")
                .execute(D::in_transaction(&mut connection))
                .await;
            let no_transaction_left = match &rolled_back {
                Ok(_) => true,
                Err(sqlx::Error::Database(e)) => no_transaction(e.message()),
                Err(_) => false,
            };
            if !no_transaction_left {
                connection.close_on_drop();
            }
        });
    }
}

/// Whether a failed `ROLLBACK`'s `message` is the database saying no transaction was open
/// (SQLite: "cannot rollback - no transaction is active"; PostgreSQL only warns). Any other
/// failure may have left one open.
fn no_transaction(message: &str) -> bool {
    message.contains("no transaction is active")
}

/// How many times [`until_claimed`] runs a claim that returns no row before it gives up.
const CLAIM_ATTEMPTS: usize = 4;

/// Runs `attempt`, one run of a claim statement ([`Dialect::claim`], or a create's first
/// transaction carrying one), until it returns a row. A claim returns none when a concurrent claim
/// of the same key committed after the statement's snapshot (PostgreSQL's `ON CONFLICT DO NOTHING`
/// waited for it, and the statement's own read cannot see its row); it then wrote nothing, and a
/// new run, on a new snapshot, finds the record. A record removed between runs (by the sweeper) is
/// inserted by the next one.
///
/// # Errors
/// `attempt`'s error, or [`StoreError::Unsettled`] after [`CLAIM_ATTEMPTS`] runs without a row.
pub(super) async fn until_claimed<R, F, Fut>(mut attempt: F) -> Result<R, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<R>, StoreError>>,
{
    for _ in 0..CLAIM_ATTEMPTS {
        if let Some(row) = attempt().await? {
            return Ok(row);
        }
    }
    Err(StoreError::Unsettled(format!(
        "the claim found its key's record neither inserted nor readable, {CLAIM_ATTEMPTS} times"
    )))
}

/// What differs between the databases. Every text here is atomic on its own: one statement, or, where
/// [`Dialect::SCRIPTS`] says so, a script that opens and commits its own transaction.
pub(super) trait Dialect: Driver {
    /// Whether a text of several statements is a script that opens and commits its own transaction
    /// and whose result is its last row (SQLite, which has no data-modifying CTEs), rather than one
    /// statement (PostgreSQL). Applies to [`Dialect::claim`] and [`Dialect::create_statements`];
    /// run them with [`SqlStore::run_one`].
    const SCRIPTS: bool;

    /// The atomic claim: insert an in-flight record, or leave the existing one and return it; one
    /// that finds a record writes nothing.
    /// Binds `$1` principal, `$2` endpoint, `$3` key, `$4` fingerprint, `$5` a fresh claim nonce,
    /// `$6` now and `$7` expires_at (ms); returns the record's columns (see `records.rs`), or no
    /// row when it must be run again ([`until_claimed`]).
    fn claim() -> &'static str;

    /// Claims a free node for allocation id `$1` at `$2` (ms) and returns its `node_id`; no row when the
    /// pool is exhausted. A concurrent caller with the same allocation id fails the UNIQUE constraint.
    fn allocate_node() -> &'static str;

    /// Deletes up to `$2` completed or failed records with `expires_at < $1` (never an in-flight one:
    /// the in-flight TTL, not retention, decides when a retry may take it over and resume it).
    const SWEEP: &'static str;

    /// Deletes up to `$2` failed records with `expires_at < $1`, returning `principal, endpoint,
    /// idem_key, claim_nonce`. Its condition also says `state <> 'in_flight'`, the condition of the
    /// expiry index (migration 0004), which SQLite's planner matches term by term before it reads a
    /// partial index.
    const SWEEP_FAILED: &'static str;

    /// A create's two transactions, each one round trip: one statement with data-modifying CTEs
    /// (PostgreSQL), or a script of statements run in one transaction (SQLite).
    fn create_statements() -> &'static CreateStatements;

    /// Whether the [`Dialect::claim`] that returned `row` (the record's columns) inserted it, given
    /// the `nonce` it bound.
    fn claim_inserted(row: &Self::Row, nonce: &str) -> Result<bool, StoreError>;

    /// The rows a statement changed.
    fn rows_affected(result: &Self::QueryResult) -> u64;
}

/// What the shared statements ask of a sqlx driver. One blanket implementation, for every driver
/// that binds and reads the column types the schema uses (TEXT, BIGINT, BYTEA/BLOB).
pub(super) trait Driver: Database {
    /// Binds a TEXT parameter.
    fn bind_text<'q>(query: Query<'q, Self>, value: &'q str) -> Query<'q, Self>;
    /// Binds a BIGINT parameter.
    fn bind_int<'q>(query: Query<'q, Self>, value: i64) -> Query<'q, Self>;
    /// Binds a BYTEA/BLOB parameter.
    fn bind_bytes<'q>(query: Query<'q, Self>, value: &'q [u8]) -> Query<'q, Self>;

    /// Runs `query` and returns what it changed.
    fn execute<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Self::QueryResult, sqlx::Error>> + Send + 'e;
    /// Runs `query` and returns its row, if any.
    fn fetch_optional<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Option<Self::Row>, sqlx::Error>> + Send + 'e;
    /// Runs `query` and returns its rows.
    fn fetch_all<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Vec<Self::Row>, sqlx::Error>> + Send + 'e;

    /// Runs `query`, a text of one or more statements (SQLite runs each in turn); returns the rows of
    /// each statement run, one list per statement, in order.
    fn fetch_each<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Vec<Vec<Self::Row>>, sqlx::Error>> + Send + 'e;

    /// The pool as an executor: each statement gets a connection of its own.
    fn on_pool(pool: &Pool<Self>) -> impl Executor<'_, Database = Self>;
    /// A transaction's connection as an executor (pass `&mut tx`).
    fn in_transaction(connection: &mut Self::Connection) -> impl Executor<'_, Database = Self>;

    /// Reads a non-null BIGINT column.
    fn int(row: &Self::Row, column: &str) -> Result<i64, sqlx::Error>;
    /// Reads a nullable BIGINT column.
    fn opt_int(row: &Self::Row, column: &str) -> Result<Option<i64>, sqlx::Error>;
    /// Reads a non-null TEXT column.
    fn text(row: &Self::Row, column: &str) -> Result<String, sqlx::Error>;
    /// Reads a nullable TEXT column.
    fn opt_text(row: &Self::Row, column: &str) -> Result<Option<String>, sqlx::Error>;
    /// Reads a nullable BYTEA/BLOB column.
    fn opt_bytes(row: &Self::Row, column: &str) -> Result<Option<Vec<u8>>, sqlx::Error>;
}

impl<D> Driver for D
where
    D: Database,
    for<'c> &'c mut D::Connection: Executor<'c, Database = D>,
    for<'q> D::Arguments<'q>: IntoArguments<'q, D>,
    for<'q> &'q str: Encode<'q, D> + Type<D>,
    for<'q> &'q [u8]: Encode<'q, D> + Type<D>,
    for<'q> i64: Encode<'q, D> + Decode<'q, D> + Type<D>,
    for<'r> String: Decode<'r, D> + Type<D>,
    for<'r> Vec<u8>: Decode<'r, D> + Type<D>,
    for<'c> &'c str: ColumnIndex<D::Row>,
{
    fn bind_text<'q>(query: Query<'q, Self>, value: &'q str) -> Query<'q, Self> {
        query.bind(value)
    }
    fn bind_int<'q>(query: Query<'q, Self>, value: i64) -> Query<'q, Self> {
        query.bind(value)
    }
    fn bind_bytes<'q>(query: Query<'q, Self>, value: &'q [u8]) -> Query<'q, Self> {
        query.bind(value)
    }

    fn execute<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Self::QueryResult, sqlx::Error>> + Send + 'e {
        query.execute(on)
    }
    fn fetch_optional<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Option<Self::Row>, sqlx::Error>> + Send + 'e {
        query.fetch_optional(on)
    }
    fn fetch_all<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> impl Future<Output = Result<Vec<Self::Row>, sqlx::Error>> + Send + 'e {
        query.fetch_all(on)
    }

    async fn fetch_each<'e, 'c: 'e, 'q: 'e>(
        query: Query<'q, Self>,
        on: impl Executor<'c, Database = Self> + 'e,
    ) -> Result<Vec<Vec<Self::Row>>, sqlx::Error> {
        let mut steps = on.fetch_many(query);
        let (mut each, mut rows) = (Vec::new(), Vec::new());
        while let Some(step) = steps.try_next().await? {
            match step {
                // A statement's end, with what it changed.
                Either::Left(_) => each.push(std::mem::take(&mut rows)),
                Either::Right(row) => rows.push(row),
            }
        }
        if !rows.is_empty() {
            // Rows after the last statement's end (a driver that reports no end).
            each.push(rows);
        }
        Ok(each)
    }

    fn on_pool(pool: &Pool<Self>) -> impl Executor<'_, Database = Self> {
        pool
    }
    fn in_transaction(connection: &mut Self::Connection) -> impl Executor<'_, Database = Self> {
        connection
    }

    fn int(row: &Self::Row, column: &str) -> Result<i64, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }
    fn opt_int(row: &Self::Row, column: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }
    fn text(row: &Self::Row, column: &str) -> Result<String, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }
    fn opt_text(row: &Self::Row, column: &str) -> Result<Option<String>, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }
    fn opt_bytes(row: &Self::Row, column: &str) -> Result<Option<Vec<u8>>, sqlx::Error> {
        sqlx::Row::try_get(row, column)
    }
}

/// One bound parameter of a [`Statement`]: borrowed from the caller, or owned (a statement handed
/// to the [group commit](super::batch), which outlives its caller's borrows).
#[derive(Debug, Clone)]
pub(super) enum Param<'q> {
    /// TEXT.
    Text(Cow<'q, str>),
    /// BIGINT.
    Int(i64),
    /// BYTEA/BLOB.
    Bytes(Cow<'q, [u8]>),
}

impl Param<'_> {
    /// The parameter, borrowing its value.
    pub(super) fn borrowed(&self) -> Param<'_> {
        match self {
            Self::Text(text) => Param::Text(Cow::Borrowed(text)),
            Self::Int(n) => Param::Int(*n),
            Self::Bytes(bytes) => Param::Bytes(Cow::Borrowed(bytes)),
        }
    }

    /// The parameter, owning its value.
    fn into_owned(self) -> Param<'static> {
        match self {
            Self::Text(text) => Param::Text(Cow::Owned(text.into_owned())),
            Self::Int(n) => Param::Int(n),
            Self::Bytes(bytes) => Param::Bytes(Cow::Owned(bytes.into_owned())),
        }
    }
}

/// A statement and its parameters, in `$1, $2, …` order (both databases read `$N`), bound to a
/// sqlx query when it runs.
pub(super) struct Statement<'q, D: Database> {
    sql: Cow<'q, str>,
    params: Vec<Param<'q>>,
    database: PhantomData<D>,
}

impl<'q, D: Dialect> Statement<'q, D> {
    /// The statement `sql`, no parameters bound yet.
    pub(super) fn new(sql: impl Into<Cow<'q, str>>) -> Self {
        Self::with(sql.into(), Vec::new())
    }

    /// The statement `sql` with `params` bound.
    pub(super) fn with(sql: Cow<'q, str>, params: Vec<Param<'q>>) -> Self {
        Self {
            sql,
            params,
            database: PhantomData,
        }
    }

    /// The SQL text.
    pub(super) fn sql(&self) -> &str {
        &self.sql
    }

    /// The parameters, in order.
    pub(super) fn params(&self) -> &[Param<'q>] {
        &self.params
    }

    /// The statement as a script that is its own transaction (`BEGIN IMMEDIATE; …; COMMIT`),
    /// with the same parameters.
    pub(super) fn into_script(self) -> Self {
        let script = format!("{BEGIN} {}; {COMMIT}", self.sql);
        Self::with(Cow::Owned(script), self.params)
    }

    /// The statement, owning its text and parameters.
    pub(super) fn into_owned(self) -> Statement<'static, D> {
        Statement::with(
            Cow::Owned(self.sql.into_owned()),
            self.params.into_iter().map(Param::into_owned).collect(),
        )
    }

    fn bind(mut self, param: Param<'q>) -> Self {
        self.params.push(param);
        self
    }

    /// Binds the next parameter as TEXT.
    pub(super) fn text(self, value: &'q str) -> Self {
        self.bind(Param::Text(Cow::Borrowed(value)))
    }

    /// Binds the next parameter as BIGINT.
    pub(super) fn int(self, value: i64) -> Self {
        self.bind(Param::Int(value))
    }

    /// Binds the next parameter as BYTEA/BLOB.
    pub(super) fn bytes(self, value: &'q [u8]) -> Self {
        self.bind(Param::Bytes(Cow::Borrowed(value)))
    }

    /// The sqlx query: the text with every parameter bound, borrowed from the statement.
    fn query(&self) -> Query<'_, D> {
        self.params
            .iter()
            .fold(sqlx::query(&self.sql), |query, param| match param {
                Param::Text(text) => D::bind_text(query, text),
                Param::Int(n) => D::bind_int(query, *n),
                Param::Bytes(bytes) => D::bind_bytes(query, bytes),
            })
    }

    /// Runs the statement; returns how many rows it changed.
    pub(super) async fn execute<'c>(
        self,
        on: impl Executor<'c, Database = D> + 'c,
    ) -> Result<u64, sqlx::Error> {
        Ok(D::rows_affected(&D::execute(self.query(), on).await?))
    }

    /// Runs the statement; returns its row, if any.
    pub(super) async fn fetch_optional<'c>(
        self,
        on: impl Executor<'c, Database = D> + 'c,
    ) -> Result<Option<D::Row>, sqlx::Error> {
        D::fetch_optional(self.query(), on).await
    }

    /// Runs the statement; returns its one row (an error when there is none).
    pub(super) async fn fetch_one<'c>(
        self,
        on: impl Executor<'c, Database = D> + 'c,
    ) -> Result<D::Row, sqlx::Error> {
        D::fetch_optional(self.query(), on)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    /// Runs the text, one or more statements; returns each statement's rows, one list per
    /// statement run.
    pub(super) async fn fetch_each<'c>(
        self,
        on: impl Executor<'c, Database = D> + 'c,
    ) -> Result<Vec<Vec<D::Row>>, sqlx::Error> {
        D::fetch_each(self.query(), on).await
    }

    /// Runs the statement; returns its rows.
    pub(super) async fn fetch_all<'c>(
        self,
        on: impl Executor<'c, Database = D> + 'c,
    ) -> Result<Vec<D::Row>, sqlx::Error> {
        D::fetch_all(self.query(), on).await
    }
}
