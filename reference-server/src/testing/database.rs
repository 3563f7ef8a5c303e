//! A throwaway PostgreSQL database per test.
//!
//! The server comes from `IDEMSPEC_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/test`;
//! that database must exist). When it is unreachable a test skips with a note, unless `CI=true`, where
//! an unreachable PostgreSQL fails the test (CONTRIBUTING.md: "Build and test").

use sqlx::Connection;

/// The environment variable naming the PostgreSQL server's URL.
pub const PG_URL_VAR: &str = "IDEMSPEC_TEST_PG_URL";

/// The URL used when [`PG_URL_VAR`] is unset.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The PostgreSQL server's URL: [`PG_URL_VAR`], or [`DEFAULT_PG_URL`].
pub fn pg_base_url() -> String {
    std::env::var(PG_URL_VAR).unwrap_or_else(|_| DEFAULT_PG_URL.into())
}

/// A database of its own for one test, `<prefix>_<uuid>` on the test server. Call
/// [`TestDatabase::drop_database`] at the end of the test; nothing drops it otherwise.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
    base: String,
    name: String,
}

impl TestDatabase {
    /// Creates `<prefix>_<uuid>`, or returns `None` after a note on stderr when the server is
    /// unreachable outside CI.
    ///
    /// # Panics
    /// When the server is unreachable and `CI=true`, when `CREATE DATABASE` fails, when `prefix` is
    /// not a lowercase SQL identifier, or when the server's URL has no database path to replace.
    pub async fn create(prefix: &str) -> Option<Self> {
        assert!(
            !prefix.is_empty()
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "test database prefix {prefix:?} must be a lowercase SQL identifier"
        );
        let base = pg_base_url();
        let mut conn = match sqlx::PgConnection::connect(&base).await {
            Ok(conn) => conn,
            Err(err) => {
                if std::env::var("CI").is_ok_and(|v| v == "true") {
                    panic!("PostgreSQL at {base} is unreachable and CI=true: {err}");
                }
                eprintln!("note: skipping a PostgreSQL test; {base} is unreachable: {err}");
                return None;
            }
        };
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        if let Err(err) = sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
        {
            panic!("create the test database {name} on {base}: {err}");
        }
        let _ = conn.close().await;
        let Some((server, _database)) = base.rsplit_once('/') else {
            panic!("the PostgreSQL URL {base} has no database path");
        };
        Some(Self {
            url: format!("{server}/{name}"),
            base,
            name,
        })
    }

    /// The database's URL (a `--database-url` value).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Drops the database, `WITH (FORCE)` so connections a test left open do not block it. Best
    /// effort: a test's verdict does not depend on its cleanup.
    pub async fn drop_database(&self) {
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
