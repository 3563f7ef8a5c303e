//! A worker's row: the worker to insert ([`NewWorker`]), the worker as stored ([`Worker`]), and
//! how one is read back by id and decoded. Both ways a worker is written share it: a first
//! attempt's last transaction (`create.rs`) and a retry's single statements (`fleet.rs`).

use std::collections::BTreeMap;

use super::sql::Dialect;
use super::StoreError;

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

impl NewWorker {
    /// The worker as stored once inserted (`running`, no reboots yet).
    pub fn stored(&self) -> Worker {
        Worker {
            id: self.id.clone(),
            principal: self.principal.clone(),
            image: self.image.clone(),
            cpu: self.cpu,
            memory_gb: self.memory_gb,
            labels: self.labels.clone(),
            node_id: self.node_id,
            lease_id: self.lease_id.clone(),
            instance_id: self.instance_id.clone(),
            state: "running".to_owned(),
            reboot_count: 0,
            created_at: self.created_at,
        }
    }
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

/// The worker `$1`, whoever owns it.
pub(super) const WORKER_BY_ID: &str =
    "SELECT id, principal, image, cpu, memory_gb, labels, node_id, lease_id, \
       instance_id, state, reboot_count, created_at \
     FROM workers WHERE id = $1";

/// Decodes a worker from a row of the columns [`WORKER_BY_ID`] returns.
pub(super) fn worker_from_row<D: Dialect>(row: &D::Row) -> Result<Worker, StoreError> {
    let labels = D::text(row, "labels")?;
    Ok(Worker {
        id: D::text(row, "id")?,
        principal: D::text(row, "principal")?,
        image: D::text(row, "image")?,
        cpu: D::int(row, "cpu")?,
        memory_gb: D::int(row, "memory_gb")?,
        labels: serde_json::from_str(&labels)
            .map_err(|e| StoreError::Corrupt(format!("worker labels: {e}")))?,
        node_id: D::int(row, "node_id")?,
        lease_id: D::text(row, "lease_id")?,
        instance_id: D::text(row, "instance_id")?,
        state: D::text(row, "state")?,
        reboot_count: D::int(row, "reboot_count")?,
        created_at: D::int(row, "created_at")?,
    })
}
