//! Asynchronous creates (`--creates async`): a create reserves its node and lease, admits its image
//! and answers `202` with a long-running operation; the boot runs after the answer, and the
//! operation settles `done` (the worker exists) or `failed` (nothing is left but what a retry
//! resumes). A failed operation releases its idempotency key, so a retry with it runs again (and
//! resumes the same node, lease and boot), as a 5xx does in the synchronous mode.
//!
//! Every step is keyed by the request's [`OpSeed`] as in [`Fleet::create`], so two attempts of
//! one create (a retry that reclaimed a slow first attempt's key) converge on one worker; each
//! attempt has an operation of its own. A process that restarts runs the boots of the operations
//! still running ([`Operations::resume_all`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::service::{CreateIds, Fleet, FleetError, WorkerSpec};
use crate::clock::now_ms;
use crate::faults::CrashPoint;
use crate::idempotency::{KeyRelease, OpSeed};
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
    image: String,
    cpu: i64,
    memory_gb: i64,
    labels: BTreeMap<String, String>,
    node_id: i64,
    allocation_id: String,
    lease_id: String,
    boot_id: String,
}

impl Work {
    /// The worker this work makes for `operation`, once booted as `instance_id`.
    fn worker(&self, operation: &OperationRow, instance_id: String) -> NewWorker {
        NewWorker {
            id: operation.worker_id.clone(),
            principal: operation.principal.clone(),
            image: self.image.clone(),
            cpu: self.cpu,
            memory_gb: self.memory_gb,
            labels: self.labels.clone(),
            node_id: self.node_id,
            lease_id: self.lease_id.clone(),
            boot_id: self.boot_id.clone(),
            instance_id,
            created_at: operation.created_at,
        }
    }
}

/// Starts asynchronous creates and runs their boots: the fleet, the operations' rows, and the
/// idempotency records a failure releases.
pub struct Operations {
    fleet: Arc<Fleet>,
    store: Arc<dyn OperationStore>,
    records: Arc<dyn RecordStore>,
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
        self.fleet.faults().crash_if(CrashPoint::AfterLease);
        let work = Work {
            image: spec.image,
            cpu: spec.cpu,
            memory_gb: spec.memory_gb,
            labels: spec.labels,
            node_id,
            allocation_id: ids.allocation_id,
            lease_id: ids.lease_id,
            boot_id: ids.boot_id,
        };
        let operation = OperationRow {
            id: format!("op-{}", uuid::Uuid::new_v4().simple()),
            principal: principal.to_owned(),
            worker_id: format!("wkr-{}", seed.sub_key("worker")),
            state: OperationState::Running,
            error: None,
            work: json(&work)?,
            record: release.map(json).transpose()?,
            created_at: now_ms(),
        };
        self.store.insert_operation(&operation).await?;
        Ok(operation)
    }

    /// The second half, after the answer: the two-phase boot, then the worker; the operation
    /// settles `done`, or `failed` (the key released) when the boot fails or panics. A failure to
    /// write the outcome leaves the operation running, for the next start to run again.
    pub async fn finish(self: Arc<Self>, operation: OperationRow) {
        let this = self.clone();
        let run = operation.clone();
        let booted = tokio::spawn(async move { this.boot(&run).await }).await;
        let failure = match booted {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(error_chain(&e)),
            Err(e) => Some(format!("the boot ended abnormally: {e}")),
        };
        if let Err(e) = self.settle(&operation, failure.as_deref()).await {
            tracing::error!(operation = %operation.id, error = %error_chain(&e), "settle the operation");
        }
    }

    /// The boot of `operation` and its worker.
    async fn boot(&self, operation: &OperationRow) -> Result<(), FleetError> {
        let work: Work = serde_json::from_str(&operation.work)
            .map_err(|e| StoreError::Corrupt(format!("operation work: {e}")))?;
        let booted = self
            .fleet
            .boot(
                &work.boot_id,
                &operation.worker_id,
                work.node_id,
                &work.image,
                false,
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
            Err(e) => self
                .fleet
                .failed_boot(work.worker(operation, String::new()), e)
                .await
                .map(drop),
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

    /// Runs the boots of every operation still running (a restarted process's, whose boots died
    /// with it), each in its own task.
    ///
    /// # Errors
    /// The store's, when the operations cannot be read.
    pub async fn resume_all(self: &Arc<Self>) -> Result<usize, StoreError> {
        let running = self.store.running_operations().await?;
        let n = running.len();
        for operation in running {
            tokio::spawn(self.clone().finish(operation));
        }
        Ok(n)
    }
}

/// `value` as the JSON text of a row's column.
fn json(value: &impl serde::Serialize) -> Result<String, FleetError> {
    serde_json::to_string(value)
        .map_err(|e| FleetError::Store(StoreError::Corrupt(format!("encode an operation: {e}"))))
}

/// An error and its causes, `a: b: c`, for an operation's `error` and the log.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
