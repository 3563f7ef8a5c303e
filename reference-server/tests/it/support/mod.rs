//! Test helpers: databases (file SQLite, a fresh PostgreSQL database per test), in-process servers on
//! 127.0.0.1:0, a small HTTP client, raw HTTP/1.1 over a socket, and a create held in flight.

pub mod client;
pub mod db;
pub mod hung;
pub mod raw;
pub mod server;

pub use client::{Client, Resp};
pub use db::Db;
pub use hung::HungCreate;
pub use server::{Options, TestServer};

/// A JSON create body with a distinguishing image name.
pub fn worker_body(image: &str) -> serde_json::Value {
    serde_json::json!({"image": image, "cpu": 2, "memory_gb": 4, "labels": {"team": "it"}})
}

/// Asserts the admin stats' counters (`workers`, `leases`, …) equal `want`, showing all stats on failure.
pub fn assert_totals(stats: &serde_json::Value, want: &[(&str, i64)]) {
    for (field, value) in want {
        assert_eq!(stats[*field], *value, "{field}: {stats}");
    }
}

/// Asserts one create's footprint after all its retries: one worker, one node, one lease, one
/// hypervisor boot and no boot left pending (CASES.md #13: no leaked lease, no second allocation).
pub fn assert_one_of_everything(stats: &serde_json::Value) {
    assert_totals(
        stats,
        &[
            ("workers", 1),
            ("nodes_allocated", 1),
            ("leases", 1),
            ("boots", 1),
            ("pending_boots", 0),
        ],
    );
}

/// Runs one async behaviour test against both stores: `mod sqlite { fn NAME }` and `mod postgres { fn NAME }`.
#[macro_export]
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let db = $crate::support::Db::sqlite();
                    super::$name(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(db) = $crate::support::Db::postgres().await else { return };
                    super::$name(&db).await;
                    db.drop_database().await;
                }
            )*
        }
    };
}
