//! The operations behind the API. Every side effect is keyed by a sub-key of the request's
//! [`OpSeed`] and is "do or return the existing one", so a retry resumes where the last attempt stopped.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Hypervisor, HypervisorError};
use crate::clock::now_ms;
use crate::idempotency::OpSeed;
use crate::injection::{CrashPoint, Injections};
use crate::store::{CreateStore, FleetStore, NewWorker, Reservation, StoreError, Worker};

/// A validated worker request.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WorkerSpec {
    /// Image name.
    pub image: String,
    /// vCPUs (1–64).
    pub cpu: i64,
    /// Memory in GiB (1–1024).
    pub memory_gb: i64,
    /// Labels.
    pub labels: BTreeMap<String, String>,
}

/// Why a fleet operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// No free node; nothing was written.
    #[error("allocate a node: the pool is exhausted")]
    PoolExhausted,
    /// The worker does not exist (for this principal).
    #[error("find the worker")]
    NotFound,
    /// The hypervisor failed.
    #[error("boot the worker")]
    Hypervisor(#[from] HypervisorError),
    /// Storage failed.
    #[error("update the fleet's state")]
    Store(#[from] StoreError),
    /// The create wrote through the idempotency layer's unit of work and its claim found an existing
    /// record (this request does not own it): nothing was written, and the layer decides what the
    /// request gets.
    #[error("claim the idempotency record")]
    NotOwned,
}

/// The side-effect ids of one create attempt, derived from its seed: retries of the attempt find
/// them again (and resume), the sweeper re-derives them to release a failed attempt's leftovers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreateIds {
    /// The node allocation id (sub-key `alloc`).
    pub allocation_id: String,
    /// The lease id, `lse-…` (sub-key `lease`).
    pub lease_id: String,
    /// The two-phase boot id and hypervisor tag, `boot-…` (sub-key `boot`).
    pub boot_id: String,
    /// The worker's id, `wkr-…` (sub-key `worker`).
    pub worker_id: String,
}

impl CreateIds {
    /// The ids for `seed`.
    pub fn of(seed: &OpSeed) -> Self {
        Self {
            allocation_id: seed.sub_key("alloc"),
            lease_id: format!("lse-{}", seed.sub_key("lease")),
            boot_id: format!("boot-{}", seed.sub_key("boot")),
            worker_id: format!("wkr-{}", seed.sub_key("worker")),
        }
    }
}

impl NewWorker {
    /// The worker a create of `spec` by `principal` writes on `node_id` with `ids`, at `now`; its
    /// instance id is set once the boot returned one.
    pub(super) fn of(
        principal: &str,
        spec: WorkerSpec,
        id: String,
        node_id: i64,
        ids: CreateIds,
        now: i64,
    ) -> Self {
        Self {
            id,
            principal: principal.to_owned(),
            image: spec.image,
            cpu: spec.cpu,
            memory_gb: spec.memory_gb,
            labels: spec.labels,
            node_id,
            lease_id: ids.lease_id,
            boot_id: ids.boot_id,
            instance_id: String::new(),
            created_at: now,
        }
    }
}

/// The fleet: node pool, leases, workers, and the hypervisor client.
pub struct Fleet {
    store: Arc<dyn FleetStore>,
    hypervisor: Hypervisor,
    injections: Arc<Injections>,
    /// False only under the `failed-create-leaves-worker` flaw.
    failed_create_writes_nothing: bool,
}

impl Fleet {
    /// A fleet over `store` and `hypervisor`, crashing where `injections` say;
    /// `failed_create_writes_nothing` is
    /// false only under the `failed-create-leaves-worker` flaw
    /// ([`writes_nothing`](crate::flaw::failed_create_leaves_worker::writes_nothing)).
    pub fn new(
        store: Arc<dyn FleetStore>,
        hypervisor: Hypervisor,
        injections: Arc<Injections>,
        failed_create_writes_nothing: bool,
    ) -> Self {
        Self {
            store,
            hypervisor,
            injections,
            failed_create_writes_nothing,
        }
    }

    /// Creates a worker: node (sub-key `alloc`) → lease (`lease`) → two-phase boot (`boot`) → worker
    /// (`worker`). A retry with the same seed finds each step done and continues after it.
    ///
    /// A [fresh](OpSeed::is_fresh) seed has nothing to find: its create is two transactions
    /// ([`CreateStore`]), node + lease + pending boot before the hypervisor call and boot + worker
    /// after it, written `through` the given store (the idempotency layer's
    /// [`UnitOfWork`](crate::idempotency::UnitOfWork), which carries the request's record in them),
    /// or the fleet's own.
    ///
    /// # Errors
    /// [`FleetError::NotOwned`] when the unit of work's claim found the key's record someone
    /// else's (nothing written); [`FleetError::PoolExhausted`]; [`FleetError::Hypervisor`] when the
    /// boot failed; [`FleetError::Store`].
    pub async fn create(
        &self,
        principal: &str,
        spec: WorkerSpec,
        seed: &OpSeed,
        through: Option<&dyn CreateStore>,
    ) -> Result<Worker, FleetError> {
        let ids = CreateIds::of(seed);
        let worker_id = ids.worker_id.clone();
        if !seed.is_fresh() {
            return self.resume(principal, spec, seed, worker_id).await;
        }
        let store: &dyn CreateStore = through.unwrap_or(self.store.as_ref());
        let now = now_ms();
        let reserved = store
            .reserve(Reservation {
                claim: None,
                allocation_id: &ids.allocation_id,
                lease_id: &ids.lease_id,
                boot_id: &ids.boot_id,
                worker_id: &worker_id,
                principal,
                now,
            })
            .await?;
        if !reserved.owned() {
            return Err(FleetError::NotOwned);
        }
        let node_id = reserved.node_id.ok_or(FleetError::PoolExhausted)?;
        self.injections.crash_if(CrashPoint::AfterLease);
        let booted = self
            .hypervisor
            .boot(&ids.boot_id, node_id, &spec.image)
            .await;
        let worker = NewWorker::of(principal, spec, worker_id, node_id, ids, now);
        match booted {
            Ok(instance_id) => {
                let worker = NewWorker {
                    instance_id,
                    ..worker
                };
                Ok(store.finish(&worker, None).await?.worker)
            }
            Err(e) => self.failed_boot(worker, e.into()).await,
        }
    }

    /// A create whose seed may have done part of the work: each step looks for what an earlier
    /// attempt did and continues after it, as single statements.
    async fn resume(
        &self,
        principal: &str,
        spec: WorkerSpec,
        seed: &OpSeed,
        worker_id: String,
    ) -> Result<Worker, FleetError> {
        if let Some(worker) = self.store.get_worker(principal, &worker_id).await? {
            return Ok(worker);
        }
        let ids = CreateIds::of(seed);
        let now = now_ms();
        let node_id = self
            .store
            .allocate_node(&ids.allocation_id, now, true)
            .await?
            .ok_or(FleetError::PoolExhausted)?;
        self.store
            .ensure_lease(&ids.lease_id, node_id, principal, now)
            .await?;
        self.injections.crash_if(CrashPoint::AfterLease);
        let booted = self
            .boot(&ids.boot_id, &worker_id, node_id, &spec.image, false)
            .await;
        let worker = NewWorker::of(principal, spec, worker_id, node_id, ids, now);
        match booted {
            Ok(instance_id) => Ok(self
                .store
                .insert_worker(&NewWorker {
                    instance_id,
                    ..worker
                })
                .await?),
            Err(e) => self.failed_boot(worker, e).await,
        }
    }

    /// The fleet's store.
    pub(super) fn store(&self) -> &dyn FleetStore {
        self.store.as_ref()
    }

    /// The hypervisor client.
    pub(super) fn hypervisor(&self) -> &Hypervisor {
        &self.hypervisor
    }

    /// The process's injections.
    pub(super) fn injections(&self) -> &Injections {
        &self.injections
    }

    /// A boot failed: nothing more is written, except under the `failed-create-leaves-worker` flaw,
    /// which writes the worker anyway.
    pub(super) async fn failed_boot(
        &self,
        worker: NewWorker,
        e: FleetError,
    ) -> Result<Worker, FleetError> {
        if !self.failed_create_writes_nothing {
            self.store
                .insert_worker(&NewWorker {
                    instance_id: "none".into(),
                    ..worker
                })
                .await?;
        }
        Err(e)
    }

    /// The two-phase boot of a retry: a `pending` row is committed before the call, the call carries
    /// `boot_id` as its tag, then the row is completed. A retry that finds the row pending reconciles
    /// by listing the hypervisor's instances by tag before booting again. No transaction is held
    /// across the call. Where the image was `admitted` already (an asynchronous create's answer
    /// waited for it), only the second half of the boot runs.
    pub(super) async fn boot(
        &self,
        boot_id: &str,
        worker_id: &str,
        node_id: i64,
        image: &str,
        admitted: bool,
    ) -> Result<String, FleetError> {
        match self.store.find_boot(boot_id).await? {
            // The worker this boot is for was deleted (its boot row is the tombstone): an attempt
            // still running when another finished and its worker was deleted boots nothing more.
            Some(row) if row.state == "deleted" => {
                return Err(StoreError::Deleted(worker_id.to_owned()).into());
            }
            Some(row) if row.state == "done" => {
                if let Some(instance_id) = row.instance_id {
                    return Ok(instance_id);
                }
            }
            Some(_pending) => {
                if let Some(instance_id) = self
                    .hypervisor
                    .list_by_tag(boot_id)
                    .await?
                    .into_iter()
                    .next()
                {
                    self.store.complete_boot(boot_id, &instance_id).await?;
                    return Ok(instance_id);
                }
            }
            None => {
                self.store
                    .insert_pending_boot(boot_id, worker_id, node_id, now_ms())
                    .await?;
            }
        }
        let instance_id = if admitted {
            self.hypervisor.launch(boot_id, node_id, image).await?
        } else {
            self.hypervisor.boot(boot_id, node_id, image).await?
        };
        self.store.complete_boot(boot_id, &instance_id).await?;
        Ok(instance_id)
    }

    /// Deletes a worker, freeing its node and lease.
    ///
    /// # Errors
    /// [`FleetError::NotFound`] when the principal has no worker `id`; [`FleetError::Store`].
    pub async fn delete(&self, principal: &str, id: &str) -> Result<(), FleetError> {
        if self.store.delete_worker(principal, id).await? {
            Ok(())
        } else {
            Err(FleetError::NotFound)
        }
    }

    /// Reboots a worker once per seed (sub-key `reboot`).
    ///
    /// # Errors
    /// [`FleetError::NotFound`] when the principal has no worker `id`; [`FleetError::Store`].
    pub async fn reboot(
        &self,
        principal: &str,
        id: &str,
        seed: &OpSeed,
    ) -> Result<Worker, FleetError> {
        self.store
            .reboot_worker(
                principal,
                id,
                &format!("rbt-{}", seed.sub_key("reboot")),
                now_ms(),
            )
            .await?
            .ok_or(FleetError::NotFound)
    }

    /// The principal's worker `id`.
    ///
    /// # Errors
    /// [`FleetError::NotFound`]; [`FleetError::Store`].
    pub async fn get(&self, principal: &str, id: &str) -> Result<Worker, FleetError> {
        self.store
            .get_worker(principal, id)
            .await?
            .ok_or(FleetError::NotFound)
    }

    /// The principal's workers.
    ///
    /// # Errors
    /// [`FleetError::Store`].
    pub async fn list(&self, principal: &str) -> Result<Vec<Worker>, FleetError> {
        Ok(self.store.list_workers(principal).await?)
    }
}
