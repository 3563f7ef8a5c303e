//! [`SqlStore`], the one implementation of the store traits (each in the file of its domain:
//! `records.rs`, `fleet.rs`, `create.rs`, `stats.rs`), over the seam of `sql.rs`; on SQLite its
//! scripts go through the group commit of `batch.rs`.

use std::future::Future;
use std::time::Instant;

use futures::future::BoxFuture;
use sqlx::{Executor, Pool};

use super::batch::GroupCommit;
use super::sql::{run_on, Dialect, Statement};
use super::StoreError;
use crate::metrics::StoreMetrics;

/// The store over one database's connection pool; implements every store trait, the same SQL for
/// both databases except where its [`Dialect`] says otherwise.
#[derive(Debug)]
pub(super) struct SqlStore<D: Dialect> {
    pool: Pool<D>,
    /// Where every store call's duration goes (`leasebroker_store_operation_seconds`), and on
    /// SQLite each commit's script count.
    metrics: StoreMetrics,
    /// Where the dialect's texts are [scripts](Dialect::SCRIPTS): the task that commits scripts
    /// waiting for the connection together.
    group_commit: Option<GroupCommit<D>>,
    /// Stops the WAL's checkpoints (SQLite on a file) when the store is dropped.
    checkpointer: Option<tokio::sync::oneshot::Sender<()>>,
}

impl<D: Dialect> SqlStore<D> {
    /// A store over `pool` (already migrated) that times its calls into `metrics`. Where the
    /// dialect's texts are scripts, starts their [group commit](super::batch) on the current Tokio
    /// runtime.
    pub(super) fn new(pool: Pool<D>, metrics: StoreMetrics) -> Self {
        let group_commit = D::SCRIPTS.then(|| GroupCommit::start(pool.clone(), metrics.clone()));
        Self {
            pool,
            metrics,
            group_commit,
            checkpointer: None,
        }
    }

    /// The store, stopping the WAL checkpoints `checkpointer` starts when it is dropped.
    pub(super) fn with_checkpointer(
        mut self,
        checkpointer: Option<tokio::sync::oneshot::Sender<()>>,
    ) -> Self {
        self.checkpointer = checkpointer;
        self
    }

    /// Runs `work`, one call of store method `operation`, and records how long it took.
    pub(super) fn timed<'a, T: Send + 'a>(
        &'a self,
        operation: &'static str,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'a,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        Box::pin(async move {
            let started = Instant::now();
            let result = work.await;
            self.metrics.observe(operation, started.elapsed());
            result
        })
    }

    /// The pool as an executor: each statement takes a connection for itself, as `&Pool` does.
    pub(super) fn db(&self) -> impl Executor<'_, Database = D> {
        D::on_pool(&self.pool)
    }

    /// Runs one statement on the pool; resolves to how many rows it changed.
    pub(super) fn changes<'a>(
        &'a self,
        statement: Statement<'a, D>,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move { Ok(statement.execute(self.db()).await?) })
    }

    /// Begins a transaction; run statements in it with [`Driver::in_transaction`].
    pub(super) async fn begin(&self) -> Result<sqlx::Transaction<'static, D>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Runs `statement` in one round trip: one statement, or, where the dialect's texts are
    /// [scripts](Dialect::SCRIPTS), a script ([`SqlStore::run_script`]). Returns its last row, if
    /// any.
    pub(super) async fn run_one(
        &self,
        statement: Statement<'_, D>,
    ) -> Result<Option<D::Row>, StoreError> {
        if D::SCRIPTS {
            Ok(self.run_script(statement).await?.pop())
        } else {
            Ok(statement.fetch_optional(self.db()).await?)
        }
    }

    /// Runs `statement`, one statement that writes, as its own transaction; returns its rows
    /// (a `RETURNING` clause's). Where the dialect's texts are [scripts](Dialect::SCRIPTS), it
    /// is run as the script `BEGIN IMMEDIATE; …; COMMIT`, so that it can be committed with the
    /// scripts that wait for the connection beside it (`batch.rs`).
    pub(super) async fn write(
        &self,
        statement: Statement<'_, D>,
    ) -> Result<Vec<D::Row>, StoreError> {
        if !D::SCRIPTS {
            return Ok(statement.fetch_all(self.db()).await?);
        }
        self.run_script(statement.into_script()).await
    }

    /// Runs `script`, statements that open and commit their own transaction (`BEGIN IMMEDIATE;
    /// …; COMMIT;`), in one trip to the database on one connection, or, where the dialect has a
    /// [group commit](super::batch) and the connection is busy, in the next batch; returns every
    /// row its statements returned, in order. The connection goes back to the pool only with no
    /// transaction open: when a statement fails the script stops there, and when the call is
    /// dropped part-way the rest may not run, so in both cases the connection is rolled back
    /// before the pool can hand it on ([`RolledBackUnlessReleased`]).
    pub(super) async fn run_script(
        &self,
        script: Statement<'_, D>,
    ) -> Result<Vec<D::Row>, StoreError> {
        match &self.group_commit {
            Some(group_commit) => group_commit.run(script).await,
            None => run_on(self.pool.acquire().await?, script).await,
        }
    }
}
