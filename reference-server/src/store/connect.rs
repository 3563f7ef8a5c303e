//! Choosing and opening a store from `--database-url`.

use std::sync::Arc;

use sqlx::{Postgres, Sqlite};

use super::sql::Dialect;
use super::sql_store::SqlStore;
use super::{
    CreateStore, FleetStore, OperationStore, RecordStore, StatsStore, StoreError, UnguardedRecords,
};
use crate::metrics::StoreMetrics;

/// A parsed `--database-url`: a `postgres://` URL, a `sqlite:` URL, or a plain file path (SQLite).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `postgres://…` or `postgresql://…`.
    Postgres(String),
    /// `sqlite:…` (e.g. `sqlite://leasebroker.db?mode=rwc`, `sqlite::memory:`).
    SqliteUrl(String),
    /// A file path, opened as SQLite (created if missing).
    SqlitePath(String),
}

impl DatabaseUrl {
    /// Classifies `s` by its scheme; anything without a known scheme is a SQLite file path.
    pub fn parse(s: &str) -> Self {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Self::Postgres(s.to_owned())
        } else if s.starts_with("sqlite:") {
            Self::SqliteUrl(s.to_owned())
        } else {
            Self::SqlitePath(s.to_owned())
        }
    }
}

/// One open database, seen through each domain's trait (all share one connection pool).
#[derive(Clone)]
pub struct Stores {
    /// The idempotency records.
    pub records: Arc<dyn RecordStore>,
    /// The records read and overwritten without a claim (the `check-then-act` flaw's claim).
    pub unguarded: Arc<dyn UnguardedRecords>,
    /// The fleet and the hypervisor's state.
    pub fleet: Arc<dyn FleetStore>,
    /// A first create attempt's two transactions (part of `fleet`), which the idempotency layer's
    /// unit of work wraps on the create route.
    pub creates: Arc<dyn CreateStore>,
    /// The long-running operations (`--creates async`).
    pub operations: Arc<dyn OperationStore>,
    /// The admin counts.
    pub stats: Arc<dyn StatsStore>,
}

impl Stores {
    fn over<D: Dialect>(store: SqlStore<D>) -> Self {
        let store = Arc::new(store);
        Self {
            records: store.clone(),
            unguarded: store.clone(),
            fleet: store.clone(),
            creates: store.clone(),
            operations: store.clone(),
            stats: store,
        }
    }
}

/// Opens the store and runs its migrations. `max_connections` applies to PostgreSQL (SQLite uses one).
/// Every store call's duration is recorded in `latency`.
pub async fn connect(
    url: &DatabaseUrl,
    max_connections: u32,
    latency: StoreMetrics,
) -> Result<Stores, StoreError> {
    Ok(match url {
        DatabaseUrl::Postgres(u) => {
            Stores::over(SqlStore::<Postgres>::open(u, max_connections, latency).await?)
        }
        DatabaseUrl::SqliteUrl(u) => {
            Stores::over(SqlStore::<Sqlite>::open(u, true, latency).await?)
        }
        DatabaseUrl::SqlitePath(p) => {
            Stores::over(SqlStore::<Sqlite>::open(p, false, latency).await?)
        }
    })
}
