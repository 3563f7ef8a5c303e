//! Asynchronous creates (`--creates async`): a create reserves its node and lease, admits its image
//! and answers `202` with a long-running operation; the boot runs after the answer, and the
//! operation settles `done` (the worker exists) or `failed` (nothing is left but what a retry
//! resumes). A failed operation releases its idempotency key, so a retry with it runs again (and
//! resumes the same node, lease and boot), as a 5xx does in the synchronous mode.
//!
//! Every step is keyed by the request's [`OpSeed`] as in [`Fleet::create`], so two attempts of
//! one create (a retry that reclaimed a slow first attempt's key) converge on one worker; each
//! attempt has an operation of its own, and one whose boot fails while the other's worker exists
//! settles `done`. An operation no process took up for longer than the in-flight TTL (its process
//! died, or writing its outcome failed) is taken up by a watchdog ([`Operations::watch`]; one
//! replica wins each) and its boot run again.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::service::{CreateIds, Fleet, FleetError, WorkerSpec};
use super::HypervisorError;
use crate::clock::now_ms;
use crate::error_chain::error_chain;
use crate::idempotency::{KeyRelease, OpSeed};
use crate::injection::CrashPoint;
use crate::store::{
    NewWorker, OperationRow, OperationState, OperationStore, RecordStore, StoreError,
};

/// How a create answers (`--creates`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CreateMode {
    /// `201` with the worker, once it is booted.
    #[default]
    Sync,
    /// `202` with an operation to poll (`GET /v1/operations/{id}`); the boot runs after the answer.
    Async,
}

/// What an operation's boot needs, kept in its row (`work`, JSON) so that a restarted process can
/// run it again.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Work {
    spec: WorkerSpec,
    node_id: i64,
    ids: CreateIds,
}

impl Work {
    /// The worker this work makes for `operation`, once booted as `instance_id`.
    fn worker(&self, operation: &OperationRow, instance_id: String) -> NewWorker {
        NewWorker {
            instance_id,
            ..NewWorker::of(
                &operation.principal,
                self.spec.clone(),
                operation.worker_id.clone(),
                self.node_id,
                self.ids.clone(),
                operation.created_at,
            )
        }
    }
}

/// Starts asynchronous creates and runs their boots: the fleet, the operations' rows, and the
/// idempotency records a failure releases.
pub struct Operations {
    fleet: Arc<Fleet>,
    store: Arc<dyn OperationStore>,
    records: Arc<dyn RecordStore>,
    /// The operations this process is running now (the watchdog leaves them be).
    running: Mutex<HashSet<String>>,
}

impl Operations {
    /// Operations over `fleet`, kept in `store`, releasing keys in `records`.
    pub fn new(
        fleet: Arc<Fleet>,
        store: Arc<dyn OperationStore>,
        records: Arc<dyn RecordStore>,
    ) -> Self {
        Self {
            fleet,
            store,
            records,
            running: Mutex::new(HashSet::new()),
        }
    }

    /// The first half of an asynchronous create, before its answer: the node (sub-key `alloc`) and
    /// the lease (`lease`), found again where an earlier attempt of the seed wrote them; the image
    /// admitted (a `slow…` image takes its time here, a `hang…` image forever); then a `running`
    /// operation, carrying `release` for the key. The crash point `after_lease` lies between the
    /// lease and the operation.
    ///
    /// # Errors
    /// [`FleetError::PoolExhausted`] when no node is free, [`FleetError::Store`] when storage fails.
    pub async fn start(
        &self,
        principal: &str,
        spec: WorkerSpec,
        seed: &OpSeed,
        release: Option<&KeyRelease>,
    ) -> Result<OperationRow, FleetError> {
        let ids = CreateIds::of(seed);
        let now = now_ms();
        let store = self.fleet.store();
        let node_id = store
            .allocate_node(&ids.allocation_id, now, !seed.is_fresh())
            .await?
            .ok_or(FleetError::PoolExhausted)?;
        store
            .ensure_lease(&ids.lease_id, node_id, principal, now)
            .await?;
        self.fleet.hypervisor().admit(&spec.image).await;
        self.fleet.injections().crash_if(CrashPoint::AfterLease);
        let now = now_ms();
        let worker_id = ids.worker_id.clone();
        let work = Work { spec, node_id, ids };
        let operation = OperationRow {
            id: format!("op-{}", uuid::Uuid::new_v4().simple()),
            principal: principal.to_owned(),
            worker_id,
            state: OperationState::Running,
            error: None,
            work: json(&work)?,
            record: release.map(json).transpose()?,
            created_at: now,
            updated_at: now,
        };
        self.store.insert_operation(&operation).await?;
        Ok(operation)
    }

    /// The second half, after the answer: the two-phase boot, then the worker; the operation
    /// settles `done`, or `failed` (the key released) when the boot fails or panics. A failure to
    /// write the outcome leaves the operation running, for the next start to run again.
    pub async fn finish(self: Arc<Self>, operation: OperationRow) {
        self.running_now(&operation.id, true);
        let this = self.clone();
        let run = operation.clone();
        let booted = tokio::spawn(async move { this.boot(&run).await }).await;
        // What the client reads in `error.message`; the cause goes to the log.
        let failure = match booted {
            Ok(Ok(())) => None,
            Ok(Err(e)) => {
                tracing::warn!(operation = %operation.id, error = %error_chain(&e), "the boot failed");
                Some(match e {
                    FleetError::Hypervisor(HypervisorError::Injected) => {
                        "the hypervisor could not boot the instance"
                    }
                    FleetError::Store(StoreError::Deleted(_)) => "the worker was deleted",
                    _ => "the boot failed (an internal error; the server's log has the cause)",
                })
            }
            Err(e) => {
                tracing::error!(operation = %operation.id, error = %e, "the boot ended abnormally");
                Some("the boot failed (an internal error; the server's log has the cause)")
            }
        };
        if let Err(e) = self.settle(&operation, failure).await {
            // Left running: the watchdog takes it up again once it is stale.
            tracing::error!(operation = %operation.id, error = %error_chain(&e), "settle the operation");
        }
        self.running_now(&operation.id, false);
    }

    /// Notes that this process runs operation `id` (`true`), or no longer does.
    fn running_now(&self, id: &str, running: bool) {
        let mut set = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running {
            set.insert(id.to_owned());
        } else {
            set.remove(id);
        }
    }

    /// The boot of `operation` and its worker.
    async fn boot(&self, operation: &OperationRow) -> Result<(), FleetError> {
        let work: Work = serde_json::from_str(&operation.work)
            .map_err(|e| StoreError::Corrupt(format!("operation work: {e}")))?;
        let booted = self
            .fleet
            .boot(
                &work.ids.boot_id,
                &operation.worker_id,
                work.node_id,
                &work.spec.image,
                true,
            )
            .await;
        match booted {
            Ok(instance_id) => {
                self.fleet
                    .store()
                    .insert_worker(&work.worker(operation, instance_id))
                    .await?;
                Ok(())
            }
            Err(e) => {
                // Another attempt of the create (a retry that took its key over) may have booted
                // the worker meanwhile: then this operation is done too.
                let store = self.fleet.store();
                if store
                    .get_worker(&operation.principal, &operation.worker_id)
                    .await?
                    .is_some()
                {
                    return Ok(());
                }
                self.fleet
                    .failed_boot(work.worker(operation, String::new()), e)
                    .await
                    .map(drop)
            }
        }
    }

    /// Settles `operation` as `failure` says (none: done); a failed one releases its key.
    async fn settle(
        &self,
        operation: &OperationRow,
        failure: Option<&str>,
    ) -> Result<(), StoreError> {
        let state = match failure {
            None => OperationState::Done,
            Some(_) => OperationState::Failed,
        };
        if failure.is_some() {
            if let Some(record) = &operation.record {
                let release: KeyRelease = serde_json::from_str(record)
                    .map_err(|e| StoreError::Corrupt(format!("operation record: {e}")))?;
                release.release(self.records.as_ref()).await?;
            }
        }
        self.store
            .settle_operation(&operation.id, state, failure, now_ms())
            .await?;
        Ok(())
    }

    /// The principal's operation `id`.
    ///
    /// # Errors
    /// [`FleetError::NotFound`] when the principal has none with this id.
    pub async fn get(&self, principal: &str, id: &str) -> Result<OperationRow, FleetError> {
        self.store
            .get_operation(principal, id)
            .await?
            .ok_or(FleetError::NotFound)
    }

    /// The watchdog: until `shutdown` changes, every quarter of `abandoned_after` (100 ms to
    /// 5 s), takes up each running operation that no process took up for `abandoned_after` (the
    /// in-flight TTL) and that this process is not running, and runs its boot again. A boot run
    /// twice converges (the hypervisor's tag, the worker's derived id), so taking up one that a
    /// slow replica still runs costs a second call, never a second worker.
    pub async fn watch(
        self: Arc<Self>,
        abandoned_after: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let every = (abandoned_after / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
        let after_ms = i64::try_from(abandoned_after.as_millis()).unwrap_or(i64::MAX / 4);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.changed() => return,
            }
            if let Err(e) = self.take_up_stale(after_ms).await {
                tracing::warn!(error = %error_chain(&e), "look for abandoned operations");
            }
        }
    }

    /// One look of the watchdog: takes up and runs every stale operation it wins.
    async fn take_up_stale(self: &Arc<Self>, after_ms: i64) -> Result<(), StoreError> {
        let now = now_ms();
        for operation in self.store.stale_operations(now - after_ms).await? {
            let ours = self
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&operation.id);
            if ours
                || !self
                    .store
                    .take_up_operation(&operation.id, operation.updated_at, now)
                    .await?
            {
                continue;
            }
            tracing::info!(operation = %operation.id, "taking up an abandoned operation");
            tokio::spawn(self.clone().finish(operation));
        }
        Ok(())
    }
}

/// `value` as the JSON text of a row's column.
fn json(value: &impl serde::Serialize) -> Result<String, FleetError> {
    serde_json::to_string(value)
        .map_err(|e| FleetError::Store(StoreError::Corrupt(format!("encode an operation: {e}"))))
}
