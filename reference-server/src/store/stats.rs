//! The admin statistics (`GET /v1/admin/stats`): counts across all principals, so a test or an
//! operator can see what happened behind the API (a leaked lease, a phantom instance, a pending boot).

use futures::future::BoxFuture;

use super::sql::{Dialect, Statement};
use super::sql_store::SqlStore;
use super::{RecordState, StoreError};

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

/// The counts for the admin API.
pub trait StatsStore: Send + Sync + 'static {
    /// Counts across all principals (two statements; not one snapshot).
    fn stats(&self) -> BoxFuture<'_, Result<Stats, StoreError>>;
}

/// The fleet's counts, one column per [`Stats`] field of the same name.
const FLEET_COUNTS: &str = "SELECT (SELECT COUNT(*) FROM workers) AS workers, \
       (SELECT COUNT(*) FROM nodes WHERE allocation_id IS NOT NULL) AS nodes_allocated, \
       (SELECT COUNT(*) FROM leases) AS leases, \
       (SELECT COUNT(*) FROM hypervisor_instances) AS boots, \
       (SELECT COUNT(*) FROM boots WHERE state = 'pending') AS pending_boots, \
       (SELECT COUNT(*) FROM reboots) AS reboots";

/// Idempotency records per `state` (column `records`).
const RECORDS_BY_STATE: &str =
    "SELECT state, COUNT(*) AS records FROM idempotency_records GROUP BY state";

impl<D: Dialect> StatsStore for SqlStore<D> {
    fn stats(&self) -> BoxFuture<'_, Result<Stats, StoreError>> {
        self.timed("stats", async move {
            let fleet = Statement::new(FLEET_COUNTS).fetch_one(self.db()).await?;
            let mut records = RecordCounts::default();
            for row in Statement::new(RECORDS_BY_STATE)
                .fetch_all(self.db())
                .await?
            {
                let count = D::int(&row, "records")?;
                match RecordState::parse(&D::text(&row, "state")?)? {
                    RecordState::InFlight => records.in_flight = count,
                    RecordState::Completed => records.completed = count,
                    RecordState::Failed => records.failed = count,
                }
            }
            Ok(Stats {
                workers: D::int(&fleet, "workers")?,
                nodes_allocated: D::int(&fleet, "nodes_allocated")?,
                leases: D::int(&fleet, "leases")?,
                boots: D::int(&fleet, "boots")?,
                pending_boots: D::int(&fleet, "pending_boots")?,
                reboots: D::int(&fleet, "reboots")?,
                idempotency_records: records,
            })
        })
    }
}
