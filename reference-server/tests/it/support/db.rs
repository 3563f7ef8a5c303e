//! Test databases: a file-backed SQLite in a temp dir, or a fresh PostgreSQL database per test.

use leasebroker::testing::TestDatabase;

/// A database for one test.
pub enum Db {
    /// A SQLite file in a temp dir (removed on drop).
    Sqlite {
        /// Keeps the directory alive.
        _dir: tempfile::TempDir,
        /// The file path.
        path: String,
    },
    /// `lb_<uuid>` on the test server; dropped by [`Db::drop_database`].
    Postgres(TestDatabase),
}

impl Db {
    /// A fresh SQLite file.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("create a temp dir");
        let path = dir.path().join("lb.db").display().to_string();
        Self::Sqlite { _dir: dir, path }
    }

    /// A fresh PostgreSQL database, or `None` (with a note) when PostgreSQL is unreachable outside CI.
    /// With `CI=true` an unreachable PostgreSQL fails the test.
    pub async fn postgres() -> Option<Self> {
        TestDatabase::create("lb").await.map(Self::Postgres)
    }

    /// The `--database-url` value.
    pub fn url(&self) -> String {
        match self {
            Self::Sqlite { path, .. } => path.clone(),
            Self::Postgres(db) => db.url().to_owned(),
        }
    }

    /// Drops a PostgreSQL test database (no-op for SQLite, whose temp dir goes on drop).
    pub async fn drop_database(&self) {
        if let Self::Postgres(db) = self {
            db.drop_database().await;
        }
    }
}
