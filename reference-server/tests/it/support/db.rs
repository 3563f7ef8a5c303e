//! Test databases: a file-backed SQLite in a temp dir, or a fresh PostgreSQL database per test.

use sqlx::Connection;

/// A database for one test.
pub enum Db {
    /// A SQLite file in a temp dir (removed on drop).
    Sqlite {
        /// Keeps the directory alive.
        _dir: tempfile::TempDir,
        /// The file path.
        path: String,
    },
    /// `CREATE DATABASE lb_<uuid>` on the test server; dropped by [`Db::drop_database`].
    Postgres {
        /// The database's URL.
        url: String,
        /// The maintenance URL (the base URL's database).
        base: String,
        /// The database name.
        name: String,
    },
}

/// The PostgreSQL base URL (`IDEMSPEC_TEST_PG_URL`).
pub fn pg_base_url() -> String {
    std::env::var("IDEMSPEC_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
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
        let name = format!("lb_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create a test database");
        let _ = conn.close().await;
        let (prefix, _) = base
            .rsplit_once('/')
            .expect("the PostgreSQL URL has a database path");
        Some(Self::Postgres {
            url: format!("{prefix}/{name}"),
            base,
            name,
        })
    }

    /// The `--database-url` value.
    pub fn url(&self) -> String {
        match self {
            Self::Sqlite { path, .. } => path.clone(),
            Self::Postgres { url, .. } => url.clone(),
        }
    }

    /// Drops a PostgreSQL test database (no-op for SQLite, whose temp dir goes on drop).
    pub async fn drop_database(&self) {
        if let Self::Postgres { base, name, .. } = self {
            if let Ok(mut conn) = sqlx::PgConnection::connect(base).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await;
                let _ = conn.close().await;
            }
        }
    }
}
