//! Group commit: SQLite scripts that wait for the one connection are run together, one after another
//! in one transaction on the connection, with one commit for all of them.
//!
//! On SQLite every transaction is a script ([`Dialect::SCRIPTS`]) on leasebroker's one connection.
//! Between two scripts run one after another the connection sits idle on thread wake-ups: the first
//! script's rows back to its task, the connection back to the pool (where sqlx tests it with a trip
//! of its own) and on to the next waiter, the next script to the worker thread. Under load those
//! waits, not the statements, set the rate. In a batch the task that holds the connection sends the
//! scripts of one text together, as one text ([`MAX_COPIES`] at most, each copy's parameters
//! numbered after the one before): one trip per text, not per script, no hand-over between them,
//! and one commit. Those texts repeat from batch to batch (one per script text, count and place in
//! the batch), so the connection keeps them prepared; a text of the whole batch would be parsed and
//! planned anew for each batch.
//!
//! - **When.** A script finds the connection free and no script queued: it runs alone, as it
//!   would without this module. Otherwise it is queued for the [`GroupCommit`] task, which takes the
//!   connection when it is free and runs every script queued by then (at most [`MAX_SCRIPTS`]). It
//!   keeps the connection for the next batch while scripts wait, [`MAX_HELD_BATCHES`] in a row at
//!   most, then hands it back to the pool, where statements that are not scripts wait for it.
//! - **Equivalence.** A batch runs its scripts one after another in one transaction on one
//!   connection: the scripts of each text in the order they were queued, the texts in the order
//!   each first came. What each script reads and writes is what it would read and write run alone
//!   in that order (SQLite serialises its writers), an order as valid as the queue's: no caller has
//!   been answered, so none of the scripts happened before another. `changes()` is per statement,
//!   so a script's count is its own; each caller gets the rows of its own statements.
//! - **Durability.** No caller hears of its script before the batch has committed: a crash before
//!   the commit loses the batch, and no caller was answered.
//! - **Failure.** A script that fails stops the batch, which is rolled back; every script of it is
//!   then run alone, so only the failing one gets its error.
//! - **Callers that are gone.** A script whose caller is gone before its batch starts is not run. A
//!   batch whose callers are all gone is dropped part-way and rolled back, as a lone script is. A
//!   script whose caller leaves while others of its batch wait commits with them, as a lone script
//!   does whose caller leaves after its `COMMIT` was sent: a create's handler runs in a task of its
//!   own, so the callers that matter do not leave.
//! - **Constraints** are checked per statement (the schema has no deferred ones, which a batch
//!   would check only at its commit). A batch whose commit fails anyway is rolled back, and its
//!   scripts run alone, as after a failing script.
//! - **Shape.** Only scripts of the form `BEGIN IMMEDIATE; …; COMMIT`, with no other transaction
//!   control inside, join a batch; any other script runs alone.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::Pool;
use tokio::sync::{mpsc, oneshot};

use super::sql::{run_all, run_on, Dialect, Param, Statement, BEGIN, COMMIT};
use super::StoreError;
use crate::metrics::StoreMetrics;

/// The most scripts one batch runs: a bound on how long one commit keeps the others waiting.
pub(super) const MAX_SCRIPTS: usize = 64;

/// The most batches the group-commit task runs in a row on the connection before it hands it back
/// to the pool: a bound on how long a statement that is not a script waits for it under load.
pub(super) const MAX_HELD_BATCHES: usize = 8;

/// What a script's caller gets: every row its statements returned, in order.
type Rows<D> = Result<Vec<<D as sqlx::Database>::Row>, StoreError>;

/// One queued script and where its rows go.
struct Job<D: Dialect> {
    script: Statement<'static, D>,
    reply: oneshot::Sender<Rows<D>>,
}

/// The handle of the group-commit task over one pool: [`GroupCommit::run`] runs a script alone
/// or queues it. The task ends when the handle is dropped.
pub(super) struct GroupCommit<D: Dialect> {
    pool: Pool<D>,
    metrics: StoreMetrics,
    jobs: mpsc::UnboundedSender<Job<D>>,
    /// Scripts queued and not yet taken into a batch.
    queued: Arc<AtomicUsize>,
}

impl<D: Dialect> fmt::Debug for GroupCommit<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit")
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .finish()
    }
}

impl<D: Dialect> GroupCommit<D> {
    /// Starts the task over `pool` (on the current Tokio runtime); each commit's script count goes
    /// to `metrics`.
    pub(super) fn start(pool: Pool<D>, metrics: StoreMetrics) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        tokio::spawn(commit_queued(
            pool.clone(),
            queue,
            queued.clone(),
            metrics.clone(),
        ));
        Self {
            pool,
            metrics,
            jobs,
            queued,
        }
    }

    /// Runs `script` alone when the connection is free and nothing is queued, else in the next
    /// batch; returns every row its statements returned, in order.
    pub(super) fn run<'a>(&'a self, script: Statement<'a, D>) -> BoxFuture<'a, Rows<D>> {
        Box::pin(async move {
            let batchable = body(script.sql()).is_some();
            if !batchable || self.queued.load(Ordering::Acquire) == 0 {
                if let Some(connection) = self.pool.try_acquire() {
                    return self.alone(connection, script).await;
                }
                if !batchable {
                    return self.alone(self.pool.acquire().await?, script).await;
                }
            }
            let (reply, rows) = oneshot::channel();
            self.queued.fetch_add(1, Ordering::AcqRel);
            let job = Job {
                script: script.into_owned(),
                reply,
            };
            if let Err(mpsc::error::SendError(job)) = self.jobs.send(job) {
                // The task has ended (a panic): the script runs alone, as without it.
                self.queued.fetch_sub(1, Ordering::AcqRel);
                return self.alone(self.pool.acquire().await?, job.script).await;
            }
            match rows.await {
                Ok(rows) => rows,
                // The task ended with the script queued: it was not run.
                Err(_) => Err(StoreError::Database(sqlx::Error::WorkerCrashed)),
            }
        })
    }
}

impl<D: Dialect> GroupCommit<D> {
    /// Runs `script` alone on `connection`.
    async fn alone(&self, connection: PoolConnection<D>, script: Statement<'_, D>) -> Rows<D> {
        alone(connection, script, &self.metrics).await
    }

    /// Scripts queued and not yet taken into a batch.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }
}

/// The statements between a batchable script's `BEGIN IMMEDIATE;` and its `COMMIT`, ending in `;`;
/// `None` when `sql` may not join a batch: not of that form, or with transaction control inside
/// (`END` included: it is SQLite's synonym of `COMMIT`, so a `CASE … END` runs alone), or with
/// anything the check does not read (a comment, an identifier in backticks or brackets, an
/// unclosed quote).
fn body(sql: &str) -> Option<&str> {
    let inner = sql
        .trim()
        .strip_prefix(BEGIN)?
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
        .strip_suffix(COMMIT)?
        .trim();
    let control = ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "END"];
    let words = unquoted_words(inner)?;
    (inner.ends_with(';')
        && !words
            .iter()
            .any(|word| control.iter().any(|c| word.eq_ignore_ascii_case(c))))
    .then_some(inner)
}

/// The words of `sql` outside its string literals (`'…'`) and quoted identifiers (`"…"`); `None`
/// when `sql` has a comment, a backtick or bracket outside them, or a quote it does not close.
fn unquoted_words(sql: &str) -> Option<Vec<&str>> {
    let mut quote = None;
    let mut outside = Vec::new();
    let mut start = 0;
    let mut previous = ' ';
    for (i, c) in sql.char_indices() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                start = i + 1;
            }
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                outside.push(&sql[start..i]);
                quote = Some(c);
            }
            None if c == '`' || c == '[' => return None,
            None if (previous == '-' && c == '-') || (previous == '/' && c == '*') => return None,
            None => {}
        }
        previous = if quote.is_some() { ' ' } else { c };
    }
    if quote.is_some() {
        return None;
    }
    outside.push(&sql[start..]);
    Some(
        outside
            .into_iter()
            .flat_map(|part| part.split(|c: char| !c.is_ascii_alphanumeric() && c != '_'))
            .filter(|word| !word.is_empty())
            .collect(),
    )
}

/// An error of the same kind as `err`, a failure to take the connection, for each script that
/// waited on it (sqlx's errors are not `Clone`).
fn like(err: &sqlx::Error) -> sqlx::Error {
    match err {
        sqlx::Error::PoolTimedOut => sqlx::Error::PoolTimedOut,
        sqlx::Error::PoolClosed => sqlx::Error::PoolClosed,
        other => sqlx::Error::Protocol(format!("take the connection: {other}")),
    }
}

/// A batch's scripts as the texts it sends, one trip each, that run one after another as one
/// transaction: the first begins it, the last commits it. Scripts of the same text and
/// parameter count go in one text, at most [`MAX_COPIES`] of them: the script's statements once
/// for each, the parameters of each numbered after the one before (`$1`–`$p`, `$p+1`–`$2p`, …).
/// Each such text comes again with later batches, so the connection's statement cache keeps it
/// prepared (a text of the whole batch would be parsed and planned anew for each batch).
struct Plan {
    /// Each trip's scripts, as indices into the batch; a trip's scripts share one text.
    trips: Vec<Vec<usize>>,
}

/// The most scripts of one text a trip carries: a bound on the distinct texts the connection
/// keeps prepared (one per count, per script text, per place in its batch).
pub(super) const MAX_COPIES: usize = 8;

impl Plan {
    /// Groups `scripts` by text and parameter count, in the order each text first comes; a script
    /// whose parameters cannot be renumbered ([`copies`]) travels alone.
    fn of<D: Dialect>(scripts: &[Statement<'static, D>]) -> Self {
        // Each trip, and whether more scripts of its text may join it (checked once, by its
        // first script: the others share its text and parameter count).
        let mut trips: Vec<(Vec<usize>, bool)> = Vec::new();
        for (i, script) in scripts.iter().enumerate() {
            let joins = |(trip, groupable): &&mut (Vec<usize>, bool)| {
                let other = &scripts[trip[0]];
                *groupable
                    && trip.len() < MAX_COPIES
                    && other.sql() == script.sql()
                    && other.params().len() == script.params().len()
            };
            match trips.iter_mut().find(joins) {
                Some((trip, _)) => trip.push(i),
                None => {
                    let groupable = body(script.sql())
                        .and_then(|statements| copies(statements, 1, script.params().len()))
                        .is_some();
                    trips.push((vec![i], groupable));
                }
            }
        }
        Self {
            trips: trips.into_iter().map(|(trip, _)| trip).collect(),
        }
    }
}

/// The texts a batch sends, kept from batch to batch: building one costs a scan of the script.
#[derive(Default)]
struct Texts(std::collections::HashMap<(String, usize, usize, bool, bool), Arc<str>>);

impl Texts {
    /// Bounds the texts kept (they repeat: one per script text, count and place); the SQLite
    /// connection's statement cache holds as many besides its other statements
    /// ([`STATEMENT_CACHE`](super::sqlite::STATEMENT_CACHE)).
    pub(super) const MAX: usize = 256;

    /// Makes room for a batch's `trips` texts.
    fn room(&mut self, trips: usize) {
        if self.0.len() + trips > Self::MAX {
            self.0.clear();
        }
    }

    /// The text of `count` copies of `script` (its statements, parameters renumbered per copy),
    /// after `BEGIN IMMEDIATE;` when `begins`, before `COMMIT` when `commits`. Kept per script
    /// text and parameter count (which the copies' numbers depend on), count and place.
    fn get<D: Dialect>(
        &mut self,
        script: &Statement<'_, D>,
        count: usize,
        begins: bool,
        commits: bool,
    ) -> Arc<str> {
        let key = (
            script.sql().to_owned(),
            script.params().len(),
            count,
            begins,
            commits,
        );
        self.0
            .entry(key)
            .or_insert_with(|| {
                let statements = body(script.sql()).expect("only batchable scripts are queued");
                let copies = copies(statements, count, script.params().len())
                    .unwrap_or_else(|| statements.to_owned());
                let begin = if begins { BEGIN } else { "" };
                let commit = if commits { COMMIT } else { "" };
                format!("{begin} {copies} {commit}").into()
            })
            .clone()
    }
}

/// Whether SQLite reads `c` as part of an identifier (after its first character): ASCII letters
/// and digits, `_`, `$`, and every character beyond ASCII.
fn identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

/// `statements` (a script's body, parameters `$1`–`$params`) `count` times, each copy's
/// parameters numbered after the copy before; `None` when the text has a parameter of another form
/// (`?`, `:name`, `@name`, `$name`) or a number above `params`, which renumbering would bind to
/// another copy's value.
fn copies(statements: &str, count: usize, params: usize) -> Option<String> {
    let mut out = String::with_capacity((statements.len() + 1) * count);
    for copy in 0..count {
        let offset = copy * params;
        let mut quote = None;
        let mut previous = ' ';
        let mut chars = statements.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            let after_identifier_char = identifier_char(previous);
            previous = c;
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '?' || c == ':' || c == '@' => return None,
                // Inside an identifier (`price$1`), a `$` is part of its name.
                None if c == '$' && !after_identifier_char => {
                    let mut n = 0usize;
                    let mut digits = 0;
                    while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
                        n = n.checked_mul(10)?.checked_add(d.to_digit(10)? as usize)?;
                        digits += 1;
                        chars.next();
                    }
                    if digits == 0 || n == 0 || n > params {
                        return None;
                    }
                    out.push('$');
                    out.push_str(&(n + offset).to_string());
                    previous = '0';
                    continue;
                }
                None => {}
            }
            out.push(c);
        }
        out.push(' ');
    }
    Some(out)
}

/// The group-commit task: takes the queued scripts, waits for the connection, and runs them. While
/// scripts keep arriving it keeps the connection from one batch to the next, at most
/// [`MAX_HELD_BATCHES`] in a row: handing it back to the pool costs a trip (sqlx tests a
/// connection on its return) and a task's wake-up, and the statements that are not scripts wait
/// for it there.
async fn commit_queued<D: Dialect>(
    pool: Pool<D>,
    mut queue: mpsc::UnboundedReceiver<Job<D>>,
    queued: Arc<AtomicUsize>,
    metrics: StoreMetrics,
) {
    let mut texts = Texts::default();
    // The connection kept from the batches before, and how many batches in a row it ran.
    let mut held: Option<(PoolConnection<D>, usize)> = None;
    loop {
        let first = match queue.try_recv() {
            Ok(job) => job,
            Err(_) => {
                // Nothing waits: the connection goes back to the pool.
                held = None;
                match queue.recv().await {
                    Some(job) => job,
                    None => return,
                }
            }
        };
        let connection = match held.take() {
            Some((connection, batches)) if batches < MAX_HELD_BATCHES => Ok((connection, batches)),
            ran_its_share => {
                // Back to the pool first, so that what waits there gets its turn.
                drop(ran_its_share);
                pool.acquire().await.map(|connection| (connection, 0))
            }
        };
        let mut jobs = vec![first];
        while jobs.len() < MAX_SCRIPTS {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        queued.fetch_sub(jobs.len(), Ordering::AcqRel);
        jobs.retain(|job| !job.reply.is_closed());
        let (connection, batches) = match connection {
            Ok(connection) => connection,
            Err(err) => {
                for job in jobs {
                    let _ = job.reply.send(Err(StoreError::Database(like(&err))));
                }
                continue;
            }
        };
        held = if jobs.is_empty() {
            Some((connection, batches))
        } else {
            run_batch(&pool, connection, jobs, &mut texts, &metrics)
                .await
                .map(|connection| (connection, batches + 1))
        };
    }
}

/// Runs `jobs` as one transaction on `connection`, and sends each its rows; returns the connection
/// when the batch committed. When every caller leaves first the batch is dropped part-way (rolled
/// back), as a lone script is.
async fn run_batch<D: Dialect>(
    pool: &Pool<D>,
    connection: PoolConnection<D>,
    jobs: Vec<Job<D>>,
    texts: &mut Texts,
    metrics: &StoreMetrics,
) -> Option<PoolConnection<D>> {
    let (scripts, mut replies): (Vec<_>, Vec<_>) =
        jobs.into_iter().map(|job| (job.script, job.reply)).unzip();
    let plan = Plan::of(&scripts);
    let last = plan.trips.len() - 1;
    texts.room(plan.trips.len());
    let trip_texts: Vec<Arc<str>> = (plan.trips.iter().enumerate())
        .map(|(t, trip)| texts.get(&scripts[trip[0]], trip.len(), t == 0, t == last))
        .collect();
    let statements = plan
        .trips
        .iter()
        .zip(&trip_texts)
        .map(|(trip, text)| {
            let params = trip
                .iter()
                .flat_map(|&i| scripts[i].params().iter().map(Param::borrowed))
                .collect();
            Statement::with(Cow::Borrowed(&**text), params)
        })
        .collect();
    let all_gone = futures::future::join_all(replies.iter_mut().map(|r| r.closed()));
    let rows = tokio::select! {
        rows = run_all(connection, statements) => rows,
        _ = all_gone => return None,
    };
    match rows {
        Ok((each, connection)) => {
            metrics.committed_together(replies.len());
            let mut answers: Vec<Option<Rows<D>>> = (0..replies.len()).map(|_| None).collect();
            for (t, (trip, mut statements)) in plan.trips.iter().zip(each).enumerate() {
                // Less the rows (none) of the `BEGIN IMMEDIATE` before the first copy and of the
                // `COMMIT` after the last.
                let (begin, commit) = (usize::from(t == 0), usize::from(t == last));
                statements.truncate(statements.len() - commit);
                let per_copy = (statements.len() - begin) / trip.len();
                debug_assert_eq!(per_copy * trip.len(), statements.len() - begin, "copies");
                let mut statements = statements.into_iter().skip(begin);
                for &i in trip {
                    let rows = statements.by_ref().take(per_copy).flatten().collect();
                    answers[i] = Some(Ok(rows));
                }
            }
            for (reply, rows) in replies.into_iter().zip(answers) {
                let _ = reply.send(rows.expect("every script is in one trip"));
            }
            Some(connection)
        }
        Err(err) if replies.len() == 1 => {
            let _ = replies.pop().expect("one reply").send(Err(err));
            None
        }
        Err(_) => {
            // A script failed: the batch was rolled back. Each script alone, so only the failing
            // one gets its error.
            for (script, reply) in scripts.into_iter().zip(replies) {
                answer::<D>(reply, async {
                    alone(pool.acquire().await?, script, metrics).await
                })
                .await;
            }
            None
        }
    }
}

/// Runs `script` alone on `connection`, a commit of one script.
async fn alone<D: Dialect>(
    connection: PoolConnection<D>,
    script: Statement<'_, D>,
    metrics: &StoreMetrics,
) -> Rows<D> {
    let rows = run_on(connection, script).await;
    if rows.is_ok() {
        metrics.committed_together(1);
    }
    rows
}

/// Sends the rows of `work` to `reply`, or drops `work` (its script rolled back) when the caller
/// leaves first.
async fn answer<D: Dialect>(
    mut reply: oneshot::Sender<Rows<D>>,
    work: impl Future<Output = Rows<D>>,
) {
    tokio::select! {
        rows = work => { let _ = reply.send(rows); }
        () = reply.closed() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use sqlx::sqlite::SqlitePoolOptions;
    use sqlx::{Row, Sqlite};
    use std::time::Duration;

    /// Inserts key `$1` and reads it back, with how many keys the table held then.
    const INSERT: &str = "BEGIN IMMEDIATE; INSERT INTO t (k) VALUES ($1); \
         SELECT k, (SELECT COUNT(*) FROM t) AS n FROM t WHERE k = $1; COMMIT";

    /// A one-connection SQLite pool on a file in `dir`, with table `t`, and its group commit.
    async fn group_commit(dir: &tempfile::TempDir) -> (Pool<Sqlite>, GroupCommit<Sqlite>, Metrics) {
        let options =
            super::super::sqlite_options(&dir.path().join("batch.db").display().to_string(), false)
                .expect("options");
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .expect("open SQLite");
        sqlx::query("CREATE TABLE t (k TEXT PRIMARY KEY)")
            .execute(&pool)
            .await
            .expect("table");
        let metrics = Metrics::new(StoreMetrics::default());
        let group = GroupCommit::start(pool.clone(), metrics.store_metrics().clone());
        (pool, group, metrics)
    }

    /// `keys`' inserts, started while the test holds the one connection; resolves once every one
    /// of them is queued.
    async fn queued_inserts(
        group: &Arc<GroupCommit<Sqlite>>,
        keys: &[&str],
    ) -> Vec<tokio::task::JoinHandle<Rows<Sqlite>>> {
        let scripts = keys.iter().map(|key| (INSERT, vec![*key])).collect();
        queued_scripts(group, scripts).await
    }

    /// Each script (its text and TEXT parameters), started in turn while the test holds the one
    /// connection; resolves once every one of them is queued.
    async fn queued_scripts(
        group: &Arc<GroupCommit<Sqlite>>,
        scripts: Vec<(&'static str, Vec<&str>)>,
    ) -> Vec<tokio::task::JoinHandle<Rows<Sqlite>>> {
        let count = scripts.len();
        let tasks = scripts
            .into_iter()
            .map(|(sql, params)| {
                let group = group.clone();
                let params: Vec<String> = params.into_iter().map(str::to_owned).collect();
                tokio::spawn(async move {
                    let script = params
                        .iter()
                        .fold(Statement::new(sql), |script, param| script.text(param));
                    group.run(script).await
                })
            })
            .collect();
        tokio::time::timeout(Duration::from_secs(10), async {
            while group.queued() < count {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .expect("every script queued behind the held connection");
        tasks
    }

    /// The count and sum of `leasebroker_store_scripts_per_commit`: commits, and the scripts they
    /// committed.
    fn commits(metrics: &Metrics) -> (f64, f64) {
        let text = metrics.render();
        let read = |name: &str| -> f64 {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("{name} in {text}"))
        };
        (
            read("leasebroker_store_scripts_per_commit_count"),
            read("leasebroker_store_scripts_per_commit_sum"),
        )
    }

    async fn keys_in(pool: &Pool<Sqlite>) -> Vec<String> {
        sqlx::query_scalar("SELECT k FROM t ORDER BY k")
            .fetch_all(pool)
            .await
            .expect("read the keys")
    }

    /// Twenty scripts that wait for the connection are committed in one commit, in the order they
    /// were queued, and each caller gets its own script's rows.
    #[tokio::test]
    async fn scripts_that_wait_for_the_connection_commit_together_each_with_its_rows() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (pool, group, metrics) = group_commit(&dir).await;
        let group = Arc::new(group);
        let keys: Vec<String> = (0..20).map(|i| format!("k{i:02}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let held = pool.acquire().await.expect("hold the connection");
        let tasks = queued_inserts(&group, &keys).await;
        drop(held);
        let mut order = Vec::new();
        for (task, key) in tasks.into_iter().zip(&keys) {
            let rows = task.await.expect("task").expect("the insert commits");
            assert_eq!(rows.len(), 1, "{key}: its own row only");
            assert_eq!(rows[0].get::<String, _>("k"), *key);
            order.push(rows[0].get::<i64, _>("n"));
        }
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (1..=20).collect::<Vec<i64>>(),
            "each saw those before it"
        );
        assert_eq!(
            commits(&metrics),
            (1.0, 20.0),
            "one commit of twenty scripts"
        );
        assert_eq!(keys_in(&pool).await, keys);
    }

    /// A script that fails in a batch gets its error; the others commit and get their rows.
    #[tokio::test]
    async fn a_failing_script_fails_alone_and_the_rest_of_its_batch_commits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (pool, group, metrics) = group_commit(&dir).await;
        let group = Arc::new(group);
        sqlx::query("INSERT INTO t (k) VALUES ('b')")
            .execute(&pool)
            .await
            .expect("the key the batch's second script inserts again");
        let held = pool.acquire().await.expect("hold the connection");
        let tasks = queued_inserts(&group, &["a", "b", "c", "d"]).await;
        drop(held);
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.expect("task").map(|rows| rows.len()));
        }
        assert!(
            matches!(results[1], Err(StoreError::Database(_))),
            "{results:?}"
        );
        for i in [0, 2, 3] {
            assert!(matches!(results[i], Ok(1)), "{results:?}");
        }
        assert_eq!(keys_in(&pool).await, ["a", "b", "c", "d"]);
        assert_eq!(
            commits(&metrics),
            (3.0, 3.0),
            "each committed alone after the rollback"
        );
    }

    /// A batch whose `COMMIT` fails (a deferred foreign key that one script broke, checked only at
    /// the commit, which leaves the transaction open) is rolled back, and each script runs alone:
    /// the one that broke the key gets the error, the others commit, and no transaction is left
    /// open on the connection.
    #[tokio::test]
    async fn a_batch_whose_commit_fails_is_rolled_back_and_each_script_runs_alone() {
        const CHILD: &str = "BEGIN IMMEDIATE; INSERT INTO child (id, parent) VALUES ($1, $2); \
             SELECT id FROM child WHERE id = $1; COMMIT";
        let dir = tempfile::tempdir().expect("temp dir");
        let (pool, group, metrics) = group_commit(&dir).await;
        let group = Arc::new(group);
        for ddl in [
            "CREATE TABLE parent (id TEXT PRIMARY KEY)",
            "CREATE TABLE child (id TEXT PRIMARY KEY, \
             parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)",
            "INSERT INTO parent (id) VALUES ('p')",
        ] {
            sqlx::query(ddl).execute(&pool).await.expect(ddl);
        }
        let held = pool.acquire().await.expect("hold the connection");
        let scripts = vec![
            (CHILD, vec!["a", "p"]),
            (CHILD, vec!["orphan", "missing"]),
            (CHILD, vec!["c", "p"]),
        ];
        let tasks = queued_scripts(&group, scripts).await;
        drop(held);
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.expect("task").map(|rows| rows.len()));
        }
        assert!(matches!(results[0], Ok(1)), "{results:?}");
        assert!(
            matches!(&results[1], Err(StoreError::Database(e)) if e.to_string().contains("FOREIGN KEY")),
            "{results:?}"
        );
        assert!(matches!(results[2], Ok(1)), "{results:?}");
        let children: Vec<String> = sqlx::query_scalar("SELECT id FROM child ORDER BY id")
            .fetch_all(&pool)
            .await
            .expect("read the children");
        assert_eq!(children, ["a", "c"]);
        assert_eq!(commits(&metrics), (2.0, 2.0), "each committed alone");
        let next = group
            .run(Statement::new(INSERT).text("after"))
            .await
            .expect("the connection has no transaction left open");
        assert_eq!(next.len(), 1);
    }

    /// A script whose caller is gone before its batch starts is not run.
    #[tokio::test]
    async fn a_script_whose_caller_is_gone_is_not_run() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (pool, group, _) = group_commit(&dir).await;
        let group = Arc::new(group);
        let held = pool.acquire().await.expect("hold the connection");
        let mut tasks = queued_inserts(&group, &["a", "gone", "c"]).await;
        let gone = tasks.remove(1);
        gone.abort();
        assert!(matches!(gone.await, Err(err) if err.is_cancelled()));
        drop(held);
        for task in tasks {
            task.await.expect("task").expect("the insert commits");
        }
        assert_eq!(keys_in(&pool).await, ["a", "c"]);
    }

    /// A batch whose callers all leave while it runs is rolled back: none of its scripts is kept,
    /// and the connection serves the next script.
    #[tokio::test]
    async fn a_batch_whose_callers_all_leave_while_it_runs_is_rolled_back() {
        const SLOW: &str = "BEGIN IMMEDIATE; INSERT INTO t (k) VALUES ($1); \
             SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL \
             SELECT x + 1 FROM c WHERE x < 5000000) SELECT x FROM c); COMMIT";
        let dir = tempfile::tempdir().expect("temp dir");
        let (pool, group, metrics) = group_commit(&dir).await;
        let group = Arc::new(group);
        let held = pool.acquire().await.expect("hold the connection");
        let tasks: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|key| {
                let group = group.clone();
                tokio::spawn(async move { group.run(Statement::new(SLOW).text(key)).await })
            })
            .collect();
        while group.queued() < 2 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        drop(held);
        // The task takes both into one batch, whose first script counts to five million.
        while group.queued() > 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        for task in tasks {
            task.abort();
            assert!(matches!(task.await, Err(err) if err.is_cancelled()));
        }
        group
            .run(Statement::new(INSERT).text("after"))
            .await
            .expect("the next script runs once the batch is rolled back");
        assert_eq!(keys_in(&pool).await, ["after"], "nothing of the batch kept");
        assert_eq!(
            commits(&metrics),
            (1.0, 1.0),
            "only the next script committed"
        );
    }

    #[test]
    fn a_script_joins_a_batch_only_as_one_transaction() {
        assert_eq!(
            body("BEGIN IMMEDIATE; INSERT INTO t VALUES ($1); SELECT 1; COMMIT"),
            Some("INSERT INTO t VALUES ($1); SELECT 1;")
        );
        assert_eq!(
            body("BEGIN IMMEDIATE; SELECT 1; COMMIT;\n"),
            Some("SELECT 1;")
        );
        for alone in [
            "SELECT 1",
            "BEGIN; SELECT 1; COMMIT",
            "BEGIN IMMEDIATE; SELECT 1; COMMIT; SELECT 2",
            "BEGIN IMMEDIATE; SELECT 1; COMMIT; BEGIN IMMEDIATE; SELECT 2; COMMIT",
            "BEGIN IMMEDIATE; SAVEPOINT a; SELECT 1; COMMIT",
            "BEGIN IMMEDIATE; SELECT 1 COMMIT",
        ] {
            assert_eq!(body(alone), None, "{alone}");
        }
        assert_eq!(
            body("BEGIN IMMEDIATE; SELECT 'COMMIT' AS \"end\"; COMMIT"),
            Some("SELECT 'COMMIT' AS \"end\";"),
            "words inside quotes are not transaction control"
        );
        for unread in [
            "BEGIN IMMEDIATE; SELECT 1; -- don't\nCOMMIT; BEGIN IMMEDIATE; SELECT 2; COMMIT",
            "BEGIN IMMEDIATE; SELECT 1; /* COMMIT */ SELECT 2; COMMIT",
            "BEGIN IMMEDIATE; SELECT `a`; COMMIT",
            "BEGIN IMMEDIATE; SELECT [a]; COMMIT",
            "BEGIN IMMEDIATE; SELECT 'a; COMMIT",
            "BEGIN IMMEDIATE; SELECT CASE WHEN 1 THEN 2 END; COMMIT",
        ] {
            assert_eq!(body(unread), None, "{unread}");
        }
    }

    /// Inserts keys `$1` and `$2` and reads both back, with how many keys the table held then.
    const PAIR: &str =
        "BEGIN IMMEDIATE; INSERT INTO t (k) VALUES ($1); INSERT INTO t (k) VALUES ($2); \
         SELECT k, (SELECT COUNT(*) FROM t) AS n FROM t WHERE k IN ($1, $2) ORDER BY k; COMMIT";

    /// As [`INSERT`], with a parameter the batch cannot renumber (`?`): it travels alone.
    const ANONYMOUS: &str = "BEGIN IMMEDIATE; INSERT INTO t (k) VALUES (?); \
         SELECT k, (SELECT COUNT(*) FROM t) AS n FROM t ORDER BY rowid DESC LIMIT 1; COMMIT";

    /// A batch of three texts, interleaved, sent as one text per kind: every caller gets the rows
    /// of its own statements (its keys), the texts' statements ran as if one after another (each
    /// saw a different number of keys), and the batch committed once.
    #[tokio::test]
    async fn scripts_of_different_texts_in_one_batch_each_get_their_own_rows() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (pool, group, metrics) = group_commit(&dir).await;
        let group = Arc::new(group);
        let scripts = vec![
            (INSERT, vec!["a"]),
            (PAIR, vec!["b1", "b2"]),
            (ANONYMOUS, vec!["c"]),
            (INSERT, vec!["d"]),
            (PAIR, vec!["e1", "e2"]),
            (INSERT, vec!["f"]),
            (ANONYMOUS, vec!["g"]),
        ];
        let wanted: Vec<Vec<&str>> = scripts.iter().map(|(_, keys)| keys.clone()).collect();
        let held = pool.acquire().await.expect("hold the connection");
        let tasks = queued_scripts(&group, scripts).await;
        drop(held);
        let mut seen = Vec::new();
        for (task, keys) in tasks.into_iter().zip(wanted) {
            let rows = task.await.expect("task").expect("the script commits");
            let got: Vec<String> = rows.iter().map(|row| row.get("k")).collect();
            assert_eq!(got, keys, "its own rows only");
            seen.push(rows[0].get::<i64, _>("n"));
        }
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            seen.len(),
            "each saw a different table: {seen:?}"
        );
        assert_eq!(*sorted.last().expect("counts"), 9, "the last saw every key");
        assert_eq!(commits(&metrics), (1.0, 7.0), "one commit of seven scripts");
        assert_eq!(keys_in(&pool).await.len(), 9);
    }

    #[test]
    fn a_batch_sends_one_text_per_script_text_and_parameter_count() {
        let of = |sql: &str, params: usize| {
            (0..params).fold(Statement::<Sqlite>::new(sql.to_owned()), |s, _| s.int(1))
        };
        let (a, b, c) = (|| of(INSERT, 1), || of(PAIR, 2), || of(ANONYMOUS, 1));
        let scripts = [a(), b(), a(), c(), c(), of(INSERT, 2), b()];
        assert_eq!(
            Plan::of(&scripts).trips,
            vec![vec![0, 2], vec![1, 6], vec![3], vec![4], vec![5]],
            "same text and count together; a `?` and a different count apart"
        );
        let many: Vec<_> = (0..MAX_COPIES + 2).map(|_| a()).collect();
        let lengths: Vec<usize> = Plan::of(&many).trips.iter().map(Vec::len).collect();
        assert_eq!(lengths, [MAX_COPIES, 2], "at most MAX_COPIES per text");
    }

    /// A text of copies is kept per parameter count too: the same script text bound with more
    /// parameters numbers its copies further apart.
    #[test]
    fn texts_of_one_script_differ_by_parameter_count() {
        let mut texts = Texts::default();
        let one = Statement::<Sqlite>::new(INSERT).int(1);
        let two = Statement::<Sqlite>::new(INSERT).int(1).int(2);
        let with_one = texts.get(&one, 2, true, true).to_owned();
        let with_two = texts.get(&two, 2, true, true).to_owned();
        assert!(
            with_one.contains("($2)") && !with_one.contains("$3"),
            "{with_one}"
        );
        assert!(with_two.contains("($3)"), "{with_two}");
    }

    #[test]
    fn copies_number_each_copy_after_the_one_before() {
        assert_eq!(
            copies("INSERT INTO t VALUES ($1, $2, '$1'); SELECT $2;", 3, 2).as_deref(),
            Some(
                "INSERT INTO t VALUES ($1, $2, '$1'); SELECT $2; \
                 INSERT INTO t VALUES ($3, $4, '$1'); SELECT $4; \
                 INSERT INTO t VALUES ($5, $6, '$1'); SELECT $6; "
            ),
            "strings are left as they are"
        );
        assert_eq!(
            copies("SELECT \"$1\", $10;", 2, 10).as_deref(),
            Some("SELECT \"$1\", $10; SELECT \"$1\", $20; ")
        );
        assert_eq!(
            copies("SELECT price$1, $1, é$1;", 2, 1).as_deref(),
            Some("SELECT price$1, $1, é$1; SELECT price$1, $2, é$1; "),
            "a `$` inside an identifier is part of its name"
        );
        for other in [
            "SELECT ?;",
            "SELECT ?1;",
            "SELECT :a;",
            "SELECT @a;",
            "SELECT $a;",
            "SELECT $0;",
            "SELECT $3;",
        ] {
            assert_eq!(copies(other, 2, 2), None, "{other}");
        }
    }
}
