//! The one error type of every store trait.

/// A storage failure. Its details go to the log, never to a client (see `edge::ApiError`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database rejected or could not run a statement.
    #[error("run a database statement")]
    Database(#[from] sqlx::Error),
    /// The schema migrations could not be applied.
    #[error("apply the schema migrations")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored value could not be decoded (e.g. an unknown record state).
    #[error("decode a stored value: {0}")]
    Corrupt(String),
    /// A statement that decides something found the database changing under it every time it ran
    /// (see `sql::until_claimed`).
    #[error("settle a contended statement: {0}")]
    Unsettled(String),
    /// The worker a create's attempt would write (named by its id, or its boot's) was deleted since
    /// another attempt of the same create wrote it (its boot row is the tombstone): it is not
    /// written again.
    #[error("finish the create of a worker that was deleted ({0})")]
    Deleted(String),
}
