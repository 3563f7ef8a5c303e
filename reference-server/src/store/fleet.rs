//! The fleet's rows: nodes, leases, our side of the two-phase boot (`boots`), workers, reboots, and
//! the simulated hypervisor's own instances (`hypervisor_instances`, an external system's state).
//!
//! [`FleetStore`] is what the fleet, the hypervisor and the sweeper ask of them. Every write is "do or
//! return the existing one", keyed by a sub-key of the request's record. The SQL is below, the same
//! text on both databases except the node allocation ([`Dialect::allocate_node`]).

use futures::future::BoxFuture;
use futures::TryFutureExt;

use super::sql::{Dialect, Statement};
use super::sql_store::SqlStore;
use super::worker::{worker_from_row, NewWorker, Worker, WORKER_BY_ID};
use super::{CreateStore, StoreError};

/// Our side of a two-phase boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootRow {
    /// `pending` (committed before the hypervisor call) or `done`.
    pub state: String,
    /// The hypervisor's instance id once `done`.
    pub instance_id: Option<String>,
}

/// The fleet and the hypervisor's state. Every method is one statement or one short transaction;
/// none is held across a call to the hypervisor. Times are ms since the Unix epoch. A first attempt
/// of a create writes through its supertrait, [`CreateStore`] (two transactions); a retry resumes
/// with the single statements here.
pub trait FleetStore: CreateStore + Send + Sync + 'static {
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
    /// `None` when the pool is exhausted. Unless `resuming`, the caller knows `allocation_id` is new
    /// and the look-up for a node it holds is skipped (a concurrent holder still loses the UNIQUE
    /// constraint and gets the holder's node).
    fn allocate_node<'a>(
        &'a self,
        allocation_id: &'a str,
        now: i64,
        resuming: bool,
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

    /// Completes a boot row with the hypervisor's instance id. Where the row is the tombstone of
    /// a deleted worker (or gone), the instance is terminated instead and the answer is
    /// [`StoreError::Deleted`]: the boot of an attempt that outlived its worker leaves nothing
    /// running.
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
}

/// How many workers hold lease `$1` (column `held`).
const LEASE_HOLDERS: &str = "SELECT COUNT(*) AS held FROM workers WHERE lease_id = $1";

// What `release_leftovers` undoes, each statement binding one id as `$1`: the lease
// (`DELETE_LEASE`), the node's allocation, our boot row, and the hypervisor's running instance
// tagged with the boot id.
const RELEASE_ALLOCATION: &str =
    "UPDATE nodes SET allocation_id = NULL, allocated_at = NULL WHERE allocation_id = $1";
const RELEASE_BOOT: &str = "DELETE FROM boots WHERE boot_id = $1";
const RELEASE_TAGGED_INSTANCE: &str =
    "UPDATE hypervisor_instances SET state = 'terminated' WHERE tag = $1 AND state = 'running'";

/// Inserts nodes `1..=$1` that are missing, in one statement for any pool size. `WHERE true` keeps
/// SQLite's parser from reading `ON CONFLICT` as a join constraint of the SELECT.
const SEED_NODES: &str = "WITH RECURSIVE n(x) AS \
       (SELECT CAST(1 AS BIGINT) UNION ALL SELECT x + 1 FROM n WHERE x < $1) \
     INSERT INTO nodes (node_id) SELECT x FROM n WHERE true ON CONFLICT (node_id) DO NOTHING";

/// The node allocated as `$1`, if any.
const NODE_OF_ALLOCATION: &str = "SELECT node_id FROM nodes WHERE allocation_id = $1";

/// Binds `$1` lease id, `$2` node id, `$3` principal, `$4` now.
pub(super) const ENSURE_LEASE: &str =
    "INSERT INTO leases (lease_id, node_id, principal, created_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (lease_id) DO NOTHING";

/// Our boot row `$1`.
const FIND_BOOT: &str = "SELECT state, instance_id FROM boots WHERE boot_id = $1";

/// Binds `$1` boot id, `$2` worker id, `$3` node id, `$4` now.
pub(super) const INSERT_PENDING_BOOT: &str =
    "INSERT INTO boots (boot_id, worker_id, node_id, state, created_at) \
     VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT (boot_id) DO NOTHING";

/// Binds `$1` instance id, `$2` boot id.
pub(super) const COMPLETE_BOOT: &str =
    "UPDATE boots SET state = 'done', instance_id = $1 WHERE boot_id = $2 AND state <> 'deleted'";

/// Binds `$1` instance id, `$2` tag, `$3` node id, `$4` now. At most one running instance per tag
/// (a partial unique index, migration 0002), so a second boot with the tag inserts nothing and
/// returns no row; the first returns its `instance_id`.
const RECORD_INSTANCE: &str =
    "INSERT INTO hypervisor_instances (instance_id, tag, node_id, state, created_at) \
     VALUES ($1, $2, $3, 'running', $4) \
     ON CONFLICT (tag) WHERE state = 'running' DO NOTHING \
     RETURNING instance_id";

/// The running instance tagged `$1`.
const RUNNING_INSTANCE: &str =
    "SELECT instance_id FROM hypervisor_instances WHERE tag = $1 AND state = 'running'";

/// Every instance tagged `$1`, oldest first.
const INSTANCES_BY_TAG: &str =
    "SELECT instance_id FROM hypervisor_instances WHERE tag = $1 ORDER BY created_at, instance_id";

/// Binds `$1` id, `$2` principal, `$3` image, `$4` cpu, `$5` memory_gb, `$6` labels (JSON), `$7` node
/// id, `$8` lease id, `$9` boot id, `$10` instance id, `$11` created_at. Returns the new row, or no
/// row when the worker already existed or was deleted (its boot row `deleted`, the tombstone).
pub(super) const INSERT_WORKER: &str =
    "INSERT INTO workers (id, principal, image, cpu, memory_gb, labels, node_id, \
       lease_id, boot_id, instance_id, state, reboot_count, created_at) \
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'running', 0, $11 \
     WHERE NOT EXISTS (SELECT 1 FROM boots WHERE boot_id = $9 AND state = 'deleted') \
     ON CONFLICT (id) DO NOTHING \
     RETURNING id, principal, image, cpu, memory_gb, labels, node_id, lease_id, \
       instance_id, state, reboot_count, created_at";

/// Principal `$1`'s worker `$2`.
const PRINCIPALS_WORKER: &str = "SELECT id, principal, image, cpu, memory_gb, labels, node_id, \
       lease_id, instance_id, state, reboot_count, created_at \
     FROM workers WHERE principal = $1 AND id = $2";

/// Principal `$1`'s workers, oldest first.
const PRINCIPALS_WORKERS: &str = "SELECT id, principal, image, cpu, memory_gb, labels, node_id, \
       lease_id, instance_id, state, reboot_count, created_at \
     FROM workers WHERE principal = $1 ORDER BY created_at, id";

/// Deletes principal `$1`'s worker `$2`, returning what it held.
const DELETE_WORKER: &str =
    "DELETE FROM workers WHERE principal = $1 AND id = $2 RETURNING node_id, lease_id, instance_id";

// What a deleted worker held, each statement binding one id as `$1`: its lease, its node, our boot
// rows for the worker, the hypervisor's instance.
const DELETE_LEASE: &str = "DELETE FROM leases WHERE lease_id = $1";
const RELEASE_NODE: &str =
    "UPDATE nodes SET allocation_id = NULL, allocated_at = NULL WHERE node_id = $1";
const TOMBSTONE_WORKERS_BOOTS: &str = "UPDATE boots SET state = 'deleted' WHERE worker_id = $1";
const TERMINATE_INSTANCE: &str =
    "UPDATE hypervisor_instances SET state = 'terminated' WHERE instance_id = $1";

/// Locks principal `$1`'s worker `$2` (a write), so concurrent reboots of it queue.
const LOCK_WORKER: &str = "UPDATE workers SET state = state WHERE principal = $1 AND id = $2";

/// Binds `$1` reboot id, `$2` worker id, `$3` now; inserts nothing when the reboot was applied.
const INSERT_REBOOT: &str =
    "INSERT INTO reboots (reboot_id, worker_id, created_at) VALUES ($1, $2, $3) \
     ON CONFLICT (reboot_id) DO NOTHING";

/// Counts one reboot of worker `$1`.
const COUNT_REBOOT: &str = "UPDATE workers SET reboot_count = reboot_count + 1 WHERE id = $1";

impl<D: Dialect> FleetStore for SqlStore<D> {
    fn release_leftovers<'a>(
        &'a self,
        allocation_id: &'a str,
        lease_id: &'a str,
        boot_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.timed("release_leftovers", async move {
            let mut tx = self.begin().await?;
            let held = Statement::new(LEASE_HOLDERS)
                .text(lease_id)
                .fetch_one(D::in_transaction(&mut tx))
                .await?;
            if D::int(&held, "held")? > 0 {
                return Ok(false);
            }
            let mut released = 0;
            for (sql, id) in [
                (DELETE_LEASE, lease_id),
                (RELEASE_ALLOCATION, allocation_id),
                (RELEASE_BOOT, boot_id),
                (RELEASE_TAGGED_INSTANCE, boot_id),
            ] {
                released += Statement::new(sql)
                    .text(id)
                    .execute(D::in_transaction(&mut tx))
                    .await?;
            }
            tx.commit().await?;
            Ok(released > 0)
        })
    }

    fn seed_nodes(&self, pool_size: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        let seed = Statement::new(SEED_NODES).int(pool_size);
        self.timed("seed_nodes", self.changes(seed).map_ok(drop))
    }

    fn allocate_node<'a>(
        &'a self,
        allocation_id: &'a str,
        now: i64,
        resuming: bool,
    ) -> BoxFuture<'a, Result<Option<i64>, StoreError>> {
        self.timed("allocate_node", async move {
            let existing = || async {
                let row = Statement::new(NODE_OF_ALLOCATION)
                    .text(allocation_id)
                    .fetch_optional(self.db())
                    .await?;
                row.map(|row| D::int(&row, "node_id")).transpose()
            };
            if resuming {
                if let Some(node_id) = existing().await? {
                    return Ok(Some(node_id));
                }
            }
            let allocated = Statement::new(D::allocate_node())
                .text(allocation_id)
                .int(now)
                .fetch_optional(self.db())
                .await;
            match allocated {
                Ok(row) => Ok(row.map(|row| D::int(&row, "node_id")).transpose()?),
                // A concurrent caller with the same allocation id won the UNIQUE constraint: return its node.
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(existing().await?),
                Err(e) => Err(e.into()),
            }
        })
    }

    fn ensure_lease<'a>(
        &'a self,
        lease_id: &'a str,
        node_id: i64,
        principal: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let lease = Statement::new(ENSURE_LEASE)
            .text(lease_id)
            .int(node_id)
            .text(principal)
            .int(now);
        self.timed("ensure_lease", self.changes(lease).map_ok(drop))
    }

    fn find_boot<'a>(
        &'a self,
        boot_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<BootRow>, StoreError>> {
        self.timed("find_boot", async move {
            let row = Statement::new(FIND_BOOT)
                .text(boot_id)
                .fetch_optional(self.db())
                .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            Ok(Some(BootRow {
                state: D::text(&row, "state")?,
                instance_id: D::opt_text(&row, "instance_id")?,
            }))
        })
    }

    fn insert_pending_boot<'a>(
        &'a self,
        boot_id: &'a str,
        worker_id: &'a str,
        node_id: i64,
        now: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let pending = Statement::new(INSERT_PENDING_BOOT)
            .text(boot_id)
            .text(worker_id)
            .int(node_id)
            .int(now);
        self.timed("insert_pending_boot", self.changes(pending).map_ok(drop))
    }

    fn complete_boot<'a>(
        &'a self,
        boot_id: &'a str,
        instance_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.timed("complete_boot", async move {
            let done = Statement::new(COMPLETE_BOOT)
                .text(instance_id)
                .text(boot_id);
            if self.changes(done).await? == 1 {
                return Ok(());
            }
            let terminate = Statement::new(TERMINATE_INSTANCE).text(instance_id);
            self.changes(terminate).await?;
            Err(StoreError::Deleted(boot_id.to_owned()))
        })
    }

    fn hypervisor_record_instance<'a>(
        &'a self,
        instance_id: &'a str,
        tag: &'a str,
        node_id: i64,
        now: i64,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        self.timed("hypervisor_record_instance", async move {
            let recorded = Statement::new(RECORD_INSTANCE)
                .text(instance_id)
                .text(tag)
                .int(node_id)
                .int(now);
            let recorded = self.write(recorded).await?.pop();
            // No row back: an instance with this tag was already running; that one is the answer.
            let running = match recorded {
                Some(row) => row,
                None => {
                    Statement::new(RUNNING_INSTANCE)
                        .text(tag)
                        .fetch_one(self.db())
                        .await?
                }
            };
            Ok(D::text(&running, "instance_id")?)
        })
    }

    fn hypervisor_list_by_tag<'a>(
        &'a self,
        tag: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        self.timed("hypervisor_list_by_tag", async move {
            let rows = Statement::new(INSTANCES_BY_TAG)
                .text(tag)
                .fetch_all(self.db())
                .await?;
            Ok(rows
                .iter()
                .map(|row| D::text(row, "instance_id"))
                .collect::<Result<_, _>>()?)
        })
    }

    fn insert_worker<'a>(
        &'a self,
        worker: &'a NewWorker,
    ) -> BoxFuture<'a, Result<Worker, StoreError>> {
        self.timed("insert_worker", async move {
            let labels = serde_json::to_string(&worker.labels)
                .map_err(|e| StoreError::Corrupt(format!("worker labels: {e}")))?;
            let inserted = Statement::new(INSERT_WORKER)
                .text(&worker.id)
                .text(&worker.principal)
                .text(&worker.image)
                .int(worker.cpu)
                .int(worker.memory_gb)
                .text(&labels)
                .int(worker.node_id)
                .text(&worker.lease_id)
                .text(&worker.boot_id)
                .text(&worker.instance_id)
                .int(worker.created_at)
                .fetch_optional(self.db())
                .await?;
            // No row back: the worker existed (a concurrent attempt of the same operation wrote it),
            // or was deleted since.
            let row = match inserted {
                Some(row) => row,
                None => Statement::new(WORKER_BY_ID)
                    .text(&worker.id)
                    .fetch_optional(self.db())
                    .await?
                    .ok_or_else(|| StoreError::Deleted(worker.id.clone()))?,
            };
            worker_from_row::<D>(&row)
        })
    }

    fn get_worker<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Worker>, StoreError>> {
        self.timed("get_worker", async move {
            let row = Statement::new(PRINCIPALS_WORKER)
                .text(principal)
                .text(id)
                .fetch_optional(self.db())
                .await?;
            row.as_ref().map(worker_from_row::<D>).transpose()
        })
    }

    fn list_workers<'a>(
        &'a self,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Worker>, StoreError>> {
        self.timed("list_workers", async move {
            let rows = Statement::new(PRINCIPALS_WORKERS)
                .text(principal)
                .fetch_all(self.db())
                .await?;
            rows.iter().map(worker_from_row::<D>).collect()
        })
    }

    fn delete_worker<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.timed("delete_worker", async move {
            let mut tx = self.begin().await?;
            // The DELETE comes first so exactly one of two concurrent deletes sees the row.
            let gone = Statement::new(DELETE_WORKER)
                .text(principal)
                .text(id)
                .fetch_optional(D::in_transaction(&mut tx))
                .await?;
            let Some(gone) = gone else {
                return Ok(false);
            };
            let node_id = D::int(&gone, "node_id")?;
            let lease_id = D::text(&gone, "lease_id")?;
            let instance_id = D::text(&gone, "instance_id")?;
            Statement::new(DELETE_LEASE)
                .text(&lease_id)
                .execute(D::in_transaction(&mut tx))
                .await?;
            Statement::new(RELEASE_NODE)
                .int(node_id)
                .execute(D::in_transaction(&mut tx))
                .await?;
            // Our boot rows become the worker's tombstone: another attempt of the create that made
            // it (a retry that took its key over while the first still ran) finds them `deleted`
            // and writes the worker no more, rather than bringing it back on a freed node.
            Statement::new(TOMBSTONE_WORKERS_BOOTS)
                .text(id)
                .execute(D::in_transaction(&mut tx))
                .await?;
            Statement::new(TERMINATE_INSTANCE)
                .text(&instance_id)
                .execute(D::in_transaction(&mut tx))
                .await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    fn reboot_worker<'a>(
        &'a self,
        principal: &'a str,
        id: &'a str,
        reboot_id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<Option<Worker>, StoreError>> {
        self.timed("reboot_worker", async move {
            let mut tx = self.begin().await?;
            // Lock the worker row first (a write), then apply the reboot once per reboot id.
            let touched = Statement::new(LOCK_WORKER)
                .text(principal)
                .text(id)
                .execute(D::in_transaction(&mut tx))
                .await?;
            if touched == 0 {
                return Ok(None);
            }
            let inserted = Statement::new(INSERT_REBOOT)
                .text(reboot_id)
                .text(id)
                .int(now)
                .execute(D::in_transaction(&mut tx))
                .await?;
            if inserted == 1 {
                Statement::new(COUNT_REBOOT)
                    .text(id)
                    .execute(D::in_transaction(&mut tx))
                    .await?;
            }
            let row = Statement::new(WORKER_BY_ID)
                .text(id)
                .fetch_one(D::in_transaction(&mut tx))
                .await?;
            let worker = worker_from_row::<D>(&row)?;
            tx.commit().await?;
            Ok(Some(worker))
        })
    }
}
