//! The crash soak, long form (not a test): leasebroker killed mid-create `--kills` times on a
//! file-backed SQLite and on PostgreSQL, restarted on the same database each time while clients keep
//! retrying with their keys; then the checks of [`leasebroker::testing::soak`]. Prints one line per
//! store with what it did; exits 1 when a check fails.
//!
//! ```sh
//! cargo run -p leasebroker --example soak                 # 100 kills per store
//! cargo run -p leasebroker --example soak -- 20 sqlite 7  # kills, store(s), seed
//! ```
//!
//! The servers it kills are this program itself, re-executed as `soak __serve FLAGS…`, which runs
//! leasebroker's CLI exactly as the `leasebroker` binary does. PostgreSQL comes from
//! `IDEMSPEC_TEST_PG_URL` (a fresh database per run, dropped afterwards).

use std::time::Duration;

use clap::Parser;
use leasebroker::testing::soak::{self, SoakConfig};
use leasebroker::testing::{ServerCommand, TestDatabase};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    if args.get(1).map(String::as_str) == Some("__serve") {
        let flags = leasebroker::cli::Args::parse_from(
            std::iter::once("leasebroker".to_owned()).chain(args[2..].iter().cloned()),
        );
        return match runtime.block_on(leasebroker::cli::run(flags)) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("leasebroker: error: {err:#}");
                std::process::ExitCode::from(2)
            }
        };
    }
    let kills = args
        .get(1)
        .map_or(Ok(100), |n| n.parse())
        .expect("kills: a number");
    let stores = args.get(2).map_or("sqlite,postgres", String::as_str);
    let seed = args
        .get(3)
        .map_or(Ok(1), |n| n.parse())
        .expect("seed: a number");
    let mut failed = false;
    for store in stores.split(',') {
        failed |= !runtime.block_on(soak_store(store, kills, seed));
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// Soaks one store; prints the outcome and returns whether every check held.
async fn soak_store(store: &str, kills: u32, seed: u64) -> bool {
    let dir = tempfile::tempdir().expect("a temp dir");
    let pg = match store {
        "postgres" => Some(
            TestDatabase::create("soak")
                .await
                .expect("PostgreSQL is reachable"),
        ),
        _ => None,
    };
    let database_url = match &pg {
        Some(db) => db.url().to_owned(),
        None => dir.path().join("soak.db").display().to_string(),
    };
    let config = SoakConfig {
        server: ServerCommand {
            program: std::env::current_exe().expect("this program's path"),
            args: vec!["__serve".into()],
        },
        database_url,
        kills,
        clients: 4,
        seed,
        in_flight_ttl: Duration::from_millis(500),
        boot_latency: Duration::from_millis(20),
        time_limit: Duration::from_secs(u64::from(kills) * 10 + 60),
    };
    let outcome = soak::run(&config).await;
    if let Some(db) = pg {
        db.drop_database().await;
    }
    match outcome {
        Ok(report) => {
            println!("{store}: {report}");
            true
        }
        Err(err) => {
            println!("{store}: FAILED: {err}");
            false
        }
    }
}
