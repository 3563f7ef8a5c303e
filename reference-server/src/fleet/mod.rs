//! The fleet behind the API: the node pool, leases, and a simulated hypervisor; and the
//! long-running operations of asynchronous creates (`operation.rs`).

mod hypervisor;
mod operation;
mod service;

pub use hypervisor::{Hypervisor, HypervisorError};
pub use operation::{CreateMode, Operations};
pub use service::{CreateIds, Fleet, FleetError, WorkerSpec};
