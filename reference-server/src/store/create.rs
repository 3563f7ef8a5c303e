//! A first attempt of a create as two transactions: [`CreateStore::reserve`] (the idempotency
//! layer's claim, when the request writes through the layer's unit of work, then the node
//! allocation, the lease and the pending boot row) is committed before the hypervisor call;
//! [`CreateStore::finish`] (the boot row completed, the worker, then the layer's completion: the
//! response it will replay) after it. No transaction is held across the call.
//!
//! A crash between the two leaves what a crash after the hypervisor call always left: an in-flight
//! record with a node, a lease and a pending boot (and perhaps a running instance carrying the boot
//! id), which a retry reclaims after the in-flight TTL and resumes (the boot reconciled by tag).
//!
//! Each transaction is one round trip ([`Dialect::create_statements`]): on PostgreSQL one statement
//! (data-modifying CTEs, one commit); on SQLite, which has no data-modifying CTEs, a script of
//! statements run in one transaction, one trip through sqlx's worker thread instead of one per
//! statement.

use futures::future::BoxFuture;

use super::records::record_from_row;
use super::sql::{until_claimed, CreateStatements, Dialect, Statement};
use super::sql_store::SqlStore;
use super::worker::{worker_from_row, NewWorker, Worker, WORKER_BY_ID};
use super::{Claim, Scope, StoreError, StoredResponse};

/// The idempotency layer's claim, carried by a create's first transaction: insert an in-flight
/// record for `scope` with `nonce`, or find the existing one (the atomic claim, as
/// [`RecordStore::claim`](super::RecordStore::claim)). Times in ms since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    /// The record's scope.
    pub scope: Scope,
    /// The fingerprint to store.
    pub fingerprint: String,
    /// The nonce a new record gets (the salt of the request's side-effect sub-keys).
    pub nonce: String,
    /// The claim's time, which an existing record's in-flight TTL and retention are judged
    /// against. A record the claim inserts starts at the [`Reservation`]'s `now`, the time of the
    /// fleet's rows.
    pub now: i64,
    /// When a new record may be swept.
    pub expires_at: i64,
}

/// The idempotency layer's completion, carried by a create's last transaction: the record claimed
/// at `started_at` becomes completed with `response`, if that claim still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The record's scope.
    pub scope: Scope,
    /// The claim token.
    pub started_at: i64,
    /// The response to replay.
    pub response: StoredResponse,
    /// When the completed record may be swept (ms since the epoch).
    pub expires_at: i64,
}

/// What a first attempt reserves before the hypervisor call (ids derived from its seed; see
/// [`CreateIds`](crate::fleet::CreateIds)).
#[derive(Debug, Clone, Copy)]
pub struct Reservation<'a> {
    /// The layer's claim, when the request carries a key and writes through the layer's unit of
    /// work ([`UnitOfWork`](crate::idempotency::UnitOfWork) sets it; the fleet passes `None`).
    pub claim: Option<&'a ClaimRequest>,
    /// The node allocation id.
    pub allocation_id: &'a str,
    /// The lease id.
    pub lease_id: &'a str,
    /// The boot id (the hypervisor tag).
    pub boot_id: &'a str,
    /// The worker id the boot row is for.
    pub worker_id: &'a str,
    /// The owner of the lease.
    pub principal: &'a str,
    /// ms since the epoch.
    pub now: i64,
}

/// What [`CreateStore::reserve`] did.
#[derive(Debug, Clone)]
pub struct Reserved {
    /// The claim's result, when there was a claim. When it did not insert the record (someone else's
    /// record, in any state), nothing else was written.
    pub claim: Option<Claim>,
    /// The node allocated; `None` when the pool is exhausted or the claim found an existing record.
    pub node_id: Option<i64>,
}

impl Reserved {
    /// Whether the reservation's rows were written for this request: there was no claim, or the
    /// claim inserted the record. Otherwise nothing was written and the request must not go on.
    pub fn owned(&self) -> bool {
        self.claim.as_ref().is_none_or(|claim| claim.inserted)
    }
}

/// What [`CreateStore::finish`] did.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The stored worker: the new one, or the one that already had the id (a concurrent attempt of
    /// the same operation wrote it first).
    pub worker: Worker,
    /// Whether the completion was written (it is written only with a new worker, and only while the
    /// claim holds).
    pub completed: bool,
}

/// A create's two transactions.
pub trait CreateStore: Send + Sync + 'static {
    /// Transaction 1: the claim (if any), then, only if the claim inserted the record (or there is
    /// none), a free node for `allocation_id`, the lease and the pending boot row. Meant for a first
    /// attempt: its ids are new, so nothing is looked up first.
    ///
    /// # Errors
    /// The database's (the transaction rolled back, claim included).
    fn reserve<'a>(
        &'a self,
        reservation: Reservation<'a>,
    ) -> BoxFuture<'a, Result<Reserved, StoreError>>;

    /// Transaction 2: the boot row of `worker.boot_id` completed with `worker.instance_id`, the
    /// worker inserted (or the existing one with its id kept), and, only with a new worker,
    /// `completion`.
    ///
    /// # Errors
    /// [`StoreError::Deleted`] when a concurrent attempt of the same operation wrote the worker
    /// and it was deleted since; the database's otherwise.
    fn finish<'a>(
        &'a self,
        worker: &'a NewWorker,
        completion: Option<&'a Completion>,
    ) -> BoxFuture<'a, Result<Finished, StoreError>>;
}

impl<'q, D: Dialect> Statement<'q, D> {
    /// Binds the reservation's fleet parameters (`$1`–`$6` of [`CreateStatements::reserve`]).
    fn reservation(self, r: &Reservation<'q>) -> Self {
        self.text(r.allocation_id)
            .int(r.now)
            .text(r.lease_id)
            .text(r.principal)
            .text(r.boot_id)
            .text(r.worker_id)
    }

    /// Binds a completion as `$12`–`$20` of [`CreateStatements::finish_and_complete`].
    fn completion(self, c: &'q Completion) -> Self {
        self.int(i64::from(c.response.status))
            .text(&c.response.headers_json)
            .bytes(&c.response.body)
            .int(i64::from(c.response.compressed))
            .int(c.expires_at)
            .scope(&c.scope)
            .int(c.started_at)
    }
}

/// The worker's labels as stored (JSON).
fn labels_json(worker: &NewWorker) -> Result<String, StoreError> {
    serde_json::to_string(&worker.labels)
        .map_err(|e| StoreError::Corrupt(format!("worker labels: {e}")))
}

impl<D: Dialect> SqlStore<D> {
    /// [`CreateStore::reserve`] in one round trip.
    async fn reserve_in_one(
        &self,
        sql: &'static CreateStatements,
        r: Reservation<'_>,
    ) -> Result<Reserved, StoreError> {
        let Some(claim) = r.claim else {
            let row = self
                .run_one(Statement::new(sql.reserve.as_str()).reservation(&r))
                .await?;
            let node_id = row.map(|row| D::int(&row, "node_id")).transpose()?;
            return Ok(Reserved {
                claim: None,
                node_id,
            });
        };
        let row = until_claimed(|| {
            let statement = Statement::new(sql.claim_and_reserve.as_str())
                .reservation(&r)
                .scope(&claim.scope)
                .text(&claim.fingerprint)
                .text(&claim.nonce)
                .int(claim.expires_at);
            self.run_one(statement)
        })
        .await?;
        let record = record_from_row::<D>(&row)?;
        let inserted = D::claim_inserted(&row, &claim.nonce)?;
        Ok(Reserved {
            claim: Some(Claim { inserted, record }),
            node_id: D::opt_int(&row, "node_id")?,
        })
    }

    /// [`CreateStore::finish`] in one round trip; returns whether the worker was inserted and
    /// whether the completion was written.
    async fn finish_in_one(
        &self,
        sql: &'static CreateStatements,
        w: &NewWorker,
        completion: Option<&Completion>,
    ) -> Result<(bool, bool), StoreError> {
        let labels = labels_json(w)?;
        let statement = Statement::new(match completion {
            Some(_) => sql.finish_and_complete.as_str(),
            None => sql.finish.as_str(),
        })
        .text(&w.instance_id)
        .text(&w.boot_id)
        .text(&w.id)
        .text(&w.principal)
        .text(&w.image)
        .int(w.cpu)
        .int(w.memory_gb)
        .text(&labels)
        .int(w.node_id)
        .text(&w.lease_id)
        .int(w.created_at);
        let statement = match completion {
            Some(c) => statement.completion(c),
            None => statement,
        };
        let row = self
            .run_one(statement)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        Ok((
            D::int(&row, "inserted")? == 1,
            D::int(&row, "completed")? == 1,
        ))
    }
}

impl<D: Dialect> CreateStore for SqlStore<D> {
    fn reserve<'a>(
        &'a self,
        reservation: Reservation<'a>,
    ) -> BoxFuture<'a, Result<Reserved, StoreError>> {
        let operation = match reservation.claim {
            Some(_) => "claim_and_reserve",
            None => "reserve",
        };
        self.timed(operation, async move {
            self.reserve_in_one(D::create_statements(), reservation)
                .await
        })
    }

    fn finish<'a>(
        &'a self,
        worker: &'a NewWorker,
        completion: Option<&'a Completion>,
    ) -> BoxFuture<'a, Result<Finished, StoreError>> {
        let operation = match completion {
            Some(_) => "finish_and_complete",
            None => "finish",
        };
        self.timed(operation, async move {
            let (inserted, completed) = self
                .finish_in_one(D::create_statements(), worker, completion)
                .await?;
            let worker = if inserted {
                worker.stored()
            } else {
                // A concurrent attempt of the same operation wrote the worker: that one is the
                // answer (unless it was deleted since: then there is none).
                let row = Statement::new(WORKER_BY_ID)
                    .text(&worker.id)
                    .fetch_optional(self.db())
                    .await?
                    .ok_or_else(|| StoreError::Deleted(worker.id.clone()))?;
                worker_from_row::<D>(&row)?
            };
            Ok(Finished { worker, completed })
        })
    }
}
