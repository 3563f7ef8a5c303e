//! Storage: one [`Store`] trait, one implementation per database.
//!
//! Both implementations run the same schema (`reference-server/migrations/{sqlite,postgres}`, embedded
//! with `sqlx::migrate!`) and, where the SQL is the same, the same statements ([`shared`]); they differ
//! only where the databases do: the atomic claim, the node allocation and the batched sweep.

mod connect;
mod postgres;
mod shared;
mod sqlite;
mod types;

pub use connect::{connect, DatabaseUrl};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
pub use types::{
    BootRow, Claim, FailedRecord, IdempotencyRecord, NewWorker, RecordCounts, RecordState, Scope,
    Stats, Store, StoreError, StoredResponse, Worker,
};
