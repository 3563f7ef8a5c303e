//! A fresh PostgreSQL database per test (`CREATE DATABASE idemspec_<uuid>`), dropped afterwards.

use sqlx::Connection;

/// The server's URL (`IDEMSPEC_TEST_PG_URL`, default `postgres://postgres@127.0.0.1:5432/test`).
pub fn base_url() -> String {
    std::env::var("IDEMSPEC_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A test database; call [`PgDb::drop`] at the end.
pub struct PgDb {
    /// The database's URL.
    pub url: String,
    base: String,
    name: String,
}

impl PgDb {
    /// Creates a database, or returns `None` with a note when PostgreSQL is unreachable outside CI.
    /// With `CI=true` an unreachable PostgreSQL fails the test.
    pub async fn create() -> Option<Self> {
        let base = base_url();
        let mut conn = match sqlx::PgConnection::connect(&base).await {
            Ok(c) => c,
            Err(err) => {
                assert!(
                    std::env::var("CI").map_or(true, |v| v != "true"),
                    "PostgreSQL at {base} is unreachable and CI=true: {err}"
                );
                eprintln!("note: skipping a PostgreSQL test; {base} is unreachable: {err}");
                return None;
            }
        };
        let name = format!("idemspec_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create a test database");
        let _ = conn.close().await;
        let (prefix, _) = base.rsplit_once('/').expect("the URL names a database");
        Some(Self {
            url: format!("{prefix}/{name}"),
            base,
            name,
        })
    }

    /// Drops the database (best effort).
    pub async fn drop(self) {
        if let Ok(mut conn) = sqlx::PgConnection::connect(&self.base).await {
            let _ = sqlx::query(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&mut conn)
            .await;
            let _ = conn.close().await;
        }
    }
}
