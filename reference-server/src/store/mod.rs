//! Storage: one trait per domain, one implementation over both databases.
//!
//! - [`RecordStore`] (`records.rs`): the idempotency records — the atomic claim, the optimistic
//!   reclaim, terminal outcomes, the sweeps.
//! - [`FleetStore`] (`fleet.rs`): nodes, leases, boots, workers, reboots and the simulated
//!   hypervisor's instances.
//! - [`CreateStore`] (`create.rs`): a first attempt of a create as two transactions, the unit of
//!   work the idempotency layer's claim and completion and the fleet's writes share.
//! - [`OperationStore`] (`operations.rs`): the long-running operations of `--creates async`.
//! - [`StatsStore`] (`stats.rs`): the admin counts.
//!
//! Each file holds its trait, its rows, its SQL as named constants and the implementation on
//! `SqlStore<D>` (`sql.rs`), generic over the database. Both databases run the same schema
//! (`reference-server/migrations/{sqlite,postgres}`, embedded with `sqlx::migrate!`, differing only in
//! `BYTEA`/`BLOB`) and the same statements, except where the databases differ: the atomic claim, the
//! node allocation and the batched sweep, which each database's `Dialect` (`postgres.rs`,
//! `sqlite.rs`) supplies. On SQLite, transactions that wait for the one connection are committed
//! together (`batch.rs`, the group commit). [`connect`] opens one and hands out its [`Stores`].

/// The idempotency record's columns, the ones `records.rs`'s `record_from_row` decodes (by name):
/// every statement that reads a record (`FIND`, each dialect's claim) selects these.
macro_rules! record_columns {
    () => {
        "state, fingerprint, claim_nonce, started_at, expires_at, status, headers, body, compressed"
    };
}

/// A claim's insert of a new in-flight record for the scope, binding the principal, endpoint, key,
/// fingerprint, nonce, now and expires_at at the given parameters; nothing when the scope has a
/// record. Each dialect's claim continues it (PostgreSQL with `RETURNING`, SQLite with `;`).
macro_rules! insert_record {
    ($principal:literal, $endpoint:literal, $key:literal, $fingerprint:literal, $nonce:literal,
     $now:literal, $expires_at:literal) => {
        concat!(
            "INSERT INTO idempotency_records (principal, endpoint, idem_key, fingerprint, state, \
               claim_nonce, started_at, expires_at) \
             VALUES (",
            $principal,
            ", ",
            $endpoint,
            ", ",
            $key,
            ", ",
            $fingerprint,
            ", 'in_flight', ",
            $nonce,
            ", ",
            $now,
            ", ",
            $expires_at,
            ") ON CONFLICT (principal, endpoint, idem_key) DO NOTHING"
        )
    };
}

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

pub use connect::{connect, DatabaseUrl, Stores};
pub use create::{ClaimRequest, Completion, CreateStore, Finished, Reservation, Reserved};
pub use error::StoreError;
pub use fleet::{BootRow, FleetStore, NewWorker, Worker};
pub use operations::{OperationRow, OperationState, OperationStore};
pub use records::{
    Claim, FailedRecord, IdempotencyRecord, RecordState, RecordStore, Scope, StoredResponse,
};
pub use sqlite::sqlite_options;
pub use stats::{RecordCounts, Stats, StatsStore};
