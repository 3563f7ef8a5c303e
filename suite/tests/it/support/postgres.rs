//! A fresh PostgreSQL database per test (`CREATE DATABASE idemspec_<uuid>`), dropped afterwards, by
//! leasebroker's test helper (`IDEMSPEC_TEST_PG_URL`; skipped with a note when unreachable, a failure
//! when `CI=true`).

use leasebroker::testing::TestDatabase;

/// A test database; call [`PgDb::drop`] at the end.
pub struct PgDb {
    /// The database's URL.
    pub url: String,
    db: TestDatabase,
}

impl PgDb {
    /// Creates a database, or returns `None` with a note when PostgreSQL is unreachable outside CI.
    /// With `CI=true` an unreachable PostgreSQL fails the test.
    pub async fn create() -> Option<Self> {
        let db = TestDatabase::create("idemspec").await?;
        Some(Self {
            url: db.url().to_owned(),
            db,
        })
    }

    /// Drops the database (best effort).
    pub async fn drop(self) {
        self.db.drop_database().await;
    }
}
