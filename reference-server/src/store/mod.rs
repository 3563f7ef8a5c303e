//! Storage: one trait per domain, one implementation over both databases.
//!
//! - [`RecordStore`] (`records.rs`): the idempotency records — the atomic claim, the optimistic
//!   reclaim, terminal outcomes, the sweeps.
//! - [`FleetStore`] (`fleet.rs`): nodes, leases, boots, workers, reboots and the simulated
//!   hypervisor's instances.
//! - [`CreateStore`] (`create.rs`): a first attempt of a create as two transactions, the unit of
//!   work the idempotency layer's claim and completion and the fleet's writes share.
//! - [`OperationStore`] (`operations.rs`): the long-running operations of `--creates async`.
//! - [`UnguardedRecords`] (`unguarded.rs`): a record read and overwritten without a claim, the
//!   statements only the `check-then-act` flaw claims with.
//! - [`StatsStore`] (`stats.rs`): the admin counts.
//! - [`Worker`] and [`NewWorker`] (`worker.rs`): a worker's row, which both a create's two
//!   transactions and the fleet's single statements write and read.
//!
//! Each file holds its trait, its rows, its SQL (named constants, or a function that assembles a
//! text from shared parts, built once) and the implementation on `SqlStore<D>` (`sql_store.rs`),
//! generic over the database through the seam of `sql.rs`. Both databases run the same schema
//! (`reference-server/migrations/{sqlite,postgres}`, embedded with `sqlx::migrate!`, differing only in
//! `BYTEA`/`BLOB`) and the same statements, except where the databases differ: the atomic claim, the
//! node allocation, the batched sweeps and a create's two transactions, which each database's
//! `Dialect` (`postgres.rs`, `sqlite.rs`) supplies (`Dialect::claim`, `allocate_node`, `SWEEP`,
//! `SWEEP_FAILED`, `create_statements`). On SQLite, transactions that wait for the one connection are committed
//! together (`batch.rs`, the group commit). [`connect`] opens one and hands out its [`Stores`].

mod batch;
mod connect;
mod create;
mod error;
mod fleet;
mod operations;
mod postgres;
mod records;
mod sql;
mod sql_store;
mod sqlite;
mod stats;
mod unguarded;
mod worker;

pub use connect::{connect, DatabaseUrl, Stores};
pub use create::{ClaimRequest, Completion, CreateStore, Finished, Reservation, Reserved};
pub use error::StoreError;
pub use fleet::{BootRow, FleetStore};
pub use operations::{OperationRow, OperationState, OperationStore};
pub use records::{
    Claim, FailedRecord, IdempotencyRecord, RecordState, RecordStore, Scope, StoredResponse,
};
pub use sqlite::sqlite_options;
pub use stats::{RecordCounts, Stats, StatsStore};
pub use unguarded::UnguardedRecords;
pub use worker::{NewWorker, Worker};
