//! The storage trait and the rows it speaks in.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

/// A storage failure. Its details go to the log, never to a client (see `api::problem`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database rejected or could not run a statement.
    #[error("run a database statement")]
    Database(#[from] sqlx::Error),
    /// The schema migrations could not be applied.
    #[error("apply the schema migrations")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored value could not be decoded (e.g. an unknown record state).
    #[error("decode a stored value: {0}")]
    Corrupt(String),
}

/// The identity of an idempotency record: (principal, endpoint, key).
///
/// Source: the article's contract and IETF draft-ietf-httpapi-idempotency-key-header-07 §2
/// ("the key is scoped to the resource and the client").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The authenticated principal (`*` under the `global-keyspace` flaw).
    pub principal: String,
    /// Method and route template, e.g. `POST /v1/workers/{id}/reboot` (`*` under `endpoint-unscoped`).
    pub endpoint: String,
    /// The Idempotency-Key, unquoted.
    pub key: String,
}

/// A failed record removed by the sweeper: its scope and the claim nonce its sub-keys were salted with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRecord {
    /// The record's scope.
    pub scope: Scope,
    /// The record's claim nonce.
    pub nonce: String,
}

/// The state of an idempotency record: none → in flight → completed | failed; failed → in flight on retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// A request holds the claim and is running.
    InFlight,
    /// A terminal outcome is stored and is replayed.
    Completed,
    /// The last attempt ended in a 5xx or a panic; the next retry runs again.
    Failed,
}

impl RecordState {
    /// The value stored in the `state` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InFlight => "in_flight",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Parses the `state` column.
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "in_flight" => Ok(Self::InFlight),
            "completed" => Ok(Self::Completed),
            "failed" => Ok(Self::Failed),
            other => Err(StoreError::Corrupt(format!("record state `{other}`"))),
        }
    }
}

/// A stored response, as the idempotency layer encoded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// HTTP status code.
    pub status: u16,
    /// The replayed headers as a JSON array of `[name, value]` pairs.
    pub headers_json: String,
    /// The body, deflate-compressed when `compressed`.
    pub body: Vec<u8>,
    /// Whether `body` is deflate-compressed (large bodies are).
    pub compressed: bool,
}

/// One idempotency record as read back from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The record's state.
    pub state: RecordState,
    /// The hex SHA-256 fingerprint of the request that claimed the key.
    pub fingerprint: String,
    /// A random value written when the record was created (kept across retries, new after expiry):
    /// SQLite's "who inserted" signal, and the salt of the operation's side-effect sub-keys.
    pub nonce: String,
    /// When the current claim was taken, ms since the epoch; the optimistic-reclaim token.
    pub started_at: i64,
    /// When the record may be swept, ms since the epoch.
    pub expires_at: i64,
    /// The stored outcome, present when `Completed`.
    pub response: Option<StoredResponse>,
}

/// The result of the atomic claim statement.
#[derive(Debug, Clone)]
pub struct Claim {
    /// True when this call inserted the record (this request owns it, in flight).
    pub inserted: bool,
    /// The record as it is now (the new one, or the existing one when not inserted).
    pub record: IdempotencyRecord,
}

/// A worker to insert ("do or return the existing one", keyed by its derived id).
#[derive(Debug, Clone)]
pub struct NewWorker {
    /// Derived worker id (`wkr-…`).
    pub id: String,
    /// Owner.
    pub principal: String,
    /// Image name.
    pub image: String,
    /// vCPUs.
    pub cpu: i64,
    /// Memory in GiB.
    pub memory_gb: i64,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Allocated node.
    pub node_id: i64,
    /// Lease id (`lse-…`).
    pub lease_id: String,
    /// Boot id (`boot-…`), the hypervisor tag.
    pub boot_id: String,
    /// Hypervisor instance id.
    pub instance_id: String,
    /// Creation time, ms since the epoch.
    pub created_at: i64,
}

/// A stored worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    /// Worker id (`wkr-…`).
    pub id: String,
    /// Owner.
    pub principal: String,
    /// Image name.
    pub image: String,
    /// vCPUs.
    pub cpu: i64,
    /// Memory in GiB.
    pub memory_gb: i64,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Allocated node.
    pub node_id: i64,
    /// Lease id.
    pub lease_id: String,
    /// Hypervisor instance id.
    pub instance_id: String,
    /// `booting` or `running`.
    pub state: String,
    /// Reboots applied.
    pub reboot_count: i64,
    /// Creation time, ms since the epoch.
    pub created_at: i64,
}

/// Our side of a two-phase boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootRow {
    /// `pending` (committed before the hypervisor call) or `done`.
    pub state: String,
    /// The hypervisor's instance id once `done`.
    pub instance_id: Option<String>,
}

/// Idempotency records by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordCounts {
    /// Records in flight.
    pub in_flight: i64,
    /// Completed records.
    pub completed: i64,
    /// Failed records.
    pub failed: i64,
}

/// The admin statistics (`GET /v1/admin/stats`), across all principals.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Workers that exist.
    pub workers: i64,
    /// Nodes currently allocated.
    pub nodes_allocated: i64,
    /// Leases currently held.
    pub leases: i64,
    /// Instances the hypervisor ever booted.
    pub boots: i64,
    /// Boots still pending on our side (an orphan after recovery is a defect).
    pub pending_boots: i64,
    /// Reboots applied.
    pub reboots: i64,
    /// Idempotency records by state.
    pub idempotency_records: RecordCounts,
}

/// A storage backend. Every method is one statement or one short transaction; none is held across
/// a call to the hypervisor. Times are ms since the Unix epoch.
pub trait Store: Send + Sync + 'static {
    /// The atomic claim: insert an in-flight record for `scope`, or return the existing one.
    /// Exactly one of any number of concurrent callers gets `inserted = true`.
    fn claim<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;

    /// Reads a record (used only by the deliberately non-atomic `check-then-act` flaw).
    fn find_record<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> BoxFuture<'a, Result<Option<IdempotencyRecord>, StoreError>>;

    /// Writes an in-flight record with `nonce` whatever is there (the `check-then-act` flaw's second half).
    fn overwrite_record<'a>(
        &'a self,
        scope: &'a Scope,
        fingerprint: &'a str,
        nonce: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Optimistic reclaim: `UPDATE … WHERE state = expected AND started_at = expected`; true for the
    /// one winner. The record becomes in flight with `started_at = max(now, old + 1)` and `nonce`.
    #[allow(clippy::too_many_arguments)]
    fn take_over<'a>(
        &'a self,
        scope: &'a Scope,
        expected_state: RecordState,
        expected_started_at: i64,
        fingerprint: &'a str,
        nonce: &'a str,
        now: i64,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Stores a terminal outcome, if the claim identified by `started_at` is still ours.
    fn complete<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
        response: &'a StoredResponse,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Marks the claim failed (5xx or panic), if it is still ours.
    fn fail<'a>(
        &'a self,
        scope: &'a Scope,
        started_at: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes up to `batch` completed or failed records whose retention window ended before `now`
    /// (in-flight records are left to the in-flight TTL); returns how many.
    fn sweep(&self, now: i64, batch: i64) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Deletes up to `batch` failed records whose retention window ended before `now` and returns
    /// them, so the sweeper can release what their attempts left behind (nothing can resume them now).
    fn sweep_failed(
        &self,
        now: i64,
        batch: i64,
    ) -> BoxFuture<'_, Result<Vec<FailedRecord>, StoreError>>;

    /// Releases what an attempt that will never be resumed left behind: the lease `lease_id`, the node
    /// allocated as `allocation_id`, the boot row `boot_id` and a running instance tagged with it.
    /// Nothing is released while a worker holds the lease. Returns whether anything was released.
    fn release_leftovers<'a>(
        &'a self,
        allocation_id: &'a str,
        lease_id: &'a str,
        boot_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Makes sure nodes `1..=pool_size` exist (never removes nodes).
    fn seed_nodes(&self, pool_size: i64) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Do or return the existing: the node held by `allocation_id`, else a free node claimed for it;
    /// `None` when the pool is exhausted.
    fn allocate_node<'a>(
        &'a self,
        allocation_id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<Option<i64>, StoreError>>;

    /// Do or return the existing lease.
    fn ensure_lease<'a>(
        &'a self,
        lease_id: &'a str,
        node_id: i64,
        principal: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Our boot row, if any.
    fn find_boot<'a>(
        &'a self,
        boot_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<BootRow>, StoreError>>;

    /// Commits a pending boot row (no-op when it exists).
    fn insert_pending_boot<'a>(
        &'a self,
        boot_id: &'a str,
        worker_id: &'a str,
        node_id: i64,
        now: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Completes a boot row with the hypervisor's instance id.
    fn complete_boot<'a>(
        &'a self,
        boot_id: &'a str,
        instance_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The hypervisor's side: records a booted instance carrying `tag`, or, when a running instance
    /// already carries it, keeps that one. Returns the running instance's id. The tag is a client token
    /// ("do or return the existing one"): two attempts of one operation that both reach the boot call
    /// (a retry reclaimed a record whose first attempt was still booting) get one instance, not two.
    fn hypervisor_record_instance<'a>(
        &'a self,
        instance_id: &'a str,
        tag: &'a str,
        node_id: i64,
        now: i64,
    ) -> BoxFuture<'a, Result<String, StoreError>>;

    /// The hypervisor's side: instances carrying `tag`, oldest first.
    fn hypervisor_list_by_tag<'a>(
        &'a self,
        tag: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// Inserts a worker, or leaves the existing one with the same id; returns the stored worker.
    fn insert_worker<'a>(
        &'a self,
        worker: &'a NewWorker,
    ) -> BoxFuture<'a, Result<Worker, StoreError>>;

    /// The principal's worker with this id.
    fn get_worker<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Worker>, StoreError>>;

    /// The principal's workers, oldest first.
    fn list_workers<'a>(
        &'a self,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Worker>, StoreError>>;

    /// Deletes the worker and frees its lease and node in one transaction; false when unknown.
    fn delete_worker<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Applies reboot `reboot_id` once (do or return the existing); returns the worker, `None` when unknown.
    fn reboot_worker<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
        reboot_id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<Option<Worker>, StoreError>>;

    /// Counts for the admin API.
    fn stats(&self) -> BoxFuture<'_, Result<Stats, StoreError>>;
}
