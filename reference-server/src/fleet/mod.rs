//! The fleet behind the API: the node pool, leases, and a simulated hypervisor.

mod hypervisor;
mod service;

pub use hypervisor::{Hypervisor, HypervisorError};
pub use service::{CreateIds, CreateRecord, Fleet, FleetError, WorkerSpec};
