//! Choosing and opening a store from `--database-url`.

use std::sync::Arc;

use super::{PostgresStore, SqliteStore, Store, StoreError};

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

/// Opens the store and runs its migrations. `max_connections` applies to PostgreSQL (SQLite uses one).
pub async fn connect(
    url: &DatabaseUrl,
    max_connections: u32,
) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match url {
        DatabaseUrl::Postgres(u) => Arc::new(PostgresStore::open(u, max_connections).await?),
        DatabaseUrl::SqliteUrl(u) => Arc::new(SqliteStore::open(u, true).await?),
        DatabaseUrl::SqlitePath(p) => Arc::new(SqliteStore::open(p, false).await?),
    })
}
