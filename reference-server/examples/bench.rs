//! leasebroker's benchmark (not a test): creates per second with and without an Idempotency-Key, on
//! SQLite and PostgreSQL, plus the replay path and the in-flight conflict path, side by side in one run
//! with each store's own single-statement commit rate: one `INSERT … ON CONFLICT DO UPDATE …
//! RETURNING` per transaction, on PostgreSQL from as many sqlx connections as there are clients, on
//! SQLite in a loop on one connection to the same file with the same settings
//! ([`leasebroker::store::sqlite_options`]).
//!
//! ```sh
//! cargo run --release -p leasebroker --example bench            # PostgreSQL from IDEMSPEC_TEST_PG_URL
//! cargo run --release -p leasebroker --example bench -- 4000 32 # requests per case, client concurrency
//! ```
//!
//! Everything runs in process on 127.0.0.1 with the hypervisor's boot latency set to zero, so the
//! numbers measure the HTTP + idempotency + storage path. Prints a Markdown table.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leasebroker::auth::Auth;
use leasebroker::flaw::Flaws;
use leasebroker::idempotency::IdempotencyConfig;
use leasebroker::server::{start, RunningServer, ServerConfig};
use leasebroker::store::{sqlite_options, DatabaseUrl};
use sqlx::Connection;

const BODY: &str = r#"{"image":"ubuntu-24.04","cpu":2,"memory_gb":4,"labels":{"bench":"yes"}}"#;

#[derive(Clone, Copy)]
enum Case {
    CreateNoKey,
    CreateUniqueKey,
    Replay,
    InFlightConflict,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Self::CreateNoKey => "create, no key",
            Self::CreateUniqueKey => "create, unique key",
            Self::Replay => "replay (completed key)",
            Self::InFlightConflict => "409 in flight (same key)",
        }
    }
}

async fn server(url: &str, pool_size: i64) -> RunningServer {
    let config = ServerConfig {
        listen: "127.0.0.1:0".parse().expect("address"),
        admin_listen: Some("127.0.0.1:0".parse().expect("address")),
        database: DatabaseUrl::parse(url),
        max_connections: 32,
        auth: Auth::Dev,
        idempotency: IdempotencyConfig {
            retention: Duration::from_secs(3600),
            in_flight_ttl: Duration::from_secs(3600),
            require_key_on_post: false,
            require_key_on_delete: false,
            retry_after_secs: 1,
            flaws: Flaws::default(),
        },
        sweep_interval: Duration::from_secs(3600),
        pool_size,
        boot_latency: Duration::ZERO,
        header_read_timeout: Duration::from_secs(10),
        body_read_timeout: Duration::from_secs(10),
    };
    start(config).await.expect("start leasebroker")
}

/// Runs `total` requests of `case` over `concurrency` clients; returns requests per second.
async fn run_case(server: &RunningServer, case: Case, total: usize, concurrency: usize) -> f64 {
    let http = reqwest::Client::new();
    let base = format!("http://{}", server.addr());
    let admin = format!("http://{}", server.admin_addr().expect("admin"));
    let send = |key: Option<String>| {
        let mut req = http
            .post(format!("{base}/v1/workers"))
            .bearer_auth("bench")
            .header("content-type", "application/json")
            .body(BODY);
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        req.send()
    };
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let fixed_key = format!("{run_id}-fixed");
    let mut in_flight = None;
    match case {
        Case::Replay => {
            let r = send(Some(fixed_key.clone()))
                .await
                .expect("seed the replay key");
            assert_eq!(r.status().as_u16(), 201);
        }
        Case::InFlightConflict => {
            let faults = http
                .post(format!("{admin}/v1/admin/faults"))
                .json(&serde_json::json!({"hang_boots": true}))
                .send()
                .await
                .expect("set faults");
            assert_eq!(faults.status().as_u16(), 204);
            in_flight = Some(tokio::spawn(send(Some(fixed_key.clone()))));
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        _ => {}
    }
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (next, run_id, fixed_key) = (next.clone(), run_id.clone(), fixed_key.clone());
        tasks.push(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return;
                }
                let key = match case {
                    Case::CreateNoKey => None,
                    Case::CreateUniqueKey => Some(format!("{run_id}-{i}")),
                    Case::Replay | Case::InFlightConflict => Some(fixed_key.clone()),
                };
                let r = send(key).await.expect("request");
                let want = match case {
                    Case::InFlightConflict => 409,
                    _ => 201,
                };
                assert_eq!(r.status().as_u16(), want, "{}", case.name());
                let _ = r.bytes().await;
            }
        });
    }
    futures::future::join_all(tasks).await;
    let rate = total as f64 / started.elapsed().as_secs_f64();
    if let Some(task) = in_flight {
        let _ = http
            .post(format!("{admin}/v1/admin/faults"))
            .json(&serde_json::json!({"hang_boots": false}))
            .send()
            .await;
        let _ = task.await;
    }
    rate
}

/// The commits and the scripts they committed so far (`leasebroker_store_scripts_per_commit`'s
/// count and sum, from the admin listener's `/metrics`).
async fn scripts_per_commit(server: &RunningServer) -> (f64, f64) {
    let admin = format!("http://{}/metrics", server.admin_addr().expect("admin"));
    let text = reqwest::get(admin)
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics text");
    let read = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        read("leasebroker_store_scripts_per_commit_count"),
        read("leasebroker_store_scripts_per_commit_sum"),
    )
}

/// The store's own commit rate: `total` single-statement transactions (an upsert of a fresh key that
/// returns a column, the statement issue 12 timed with pgbench), on PostgreSQL over `concurrency`
/// connections, on SQLite in a loop on one connection; returns statements per second.
async fn commit_rate(url: &str, total: usize, concurrency: usize) -> f64 {
    const TABLE: &str =
        "CREATE TABLE IF NOT EXISTS bench_commits (k TEXT PRIMARY KEY, n BIGINT NOT NULL)";
    const UPSERT: &str = "INSERT INTO bench_commits (k, n) VALUES ($1, 1) \
         ON CONFLICT (k) DO UPDATE SET n = bench_commits.n + 1 RETURNING n";
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    match DatabaseUrl::parse(url) {
        DatabaseUrl::Postgres(url) => {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(u32::try_from(concurrency).expect("concurrency fits"))
                .min_connections(u32::try_from(concurrency).expect("concurrency fits"))
                // The store's own rate: no ping round trip before each statement.
                .test_before_acquire(false)
                .connect(&url)
                .await
                .expect("connect for the commit rate");
            sqlx::query(TABLE).execute(&pool).await.expect("table");
            let next = Arc::new(AtomicUsize::new(0));
            let started = Instant::now();
            let tasks = (0..concurrency).map(|_| {
                let (pool, next, run_id) = (pool.clone(), next.clone(), run_id.clone());
                async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            return;
                        }
                        sqlx::query(UPSERT)
                            .bind(format!("{run_id}-{i}"))
                            .fetch_one(&pool)
                            .await
                            .expect("upsert");
                    }
                }
            });
            futures::future::join_all(tasks).await;
            let rate = total as f64 / started.elapsed().as_secs_f64();
            pool.close().await;
            rate
        }
        DatabaseUrl::SqlitePath(path) => {
            let options = sqlite_options(&path, false).expect("SQLite options");
            let mut conn = sqlx::SqliteConnection::connect_with(&options)
                .await
                .expect("open SQLite for the commit rate");
            sqlx::query(TABLE).execute(&mut conn).await.expect("table");
            let started = Instant::now();
            for i in 0..total {
                sqlx::query(UPSERT)
                    .bind(format!("{run_id}-{i}"))
                    .fetch_one(&mut conn)
                    .await
                    .expect("upsert");
            }
            let rate = total as f64 / started.elapsed().as_secs_f64();
            let _ = conn.close().await;
            rate
        }
        DatabaseUrl::SqliteUrl(_) => unreachable!("the bench opens SQLite by path"),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let total: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let concurrency: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let pool_size = i64::try_from(total * 3).expect("pool size fits") + 10;

    let dir = tempfile::tempdir().expect("temp dir");
    let mut stores = vec![(
        "SQLite (file, WAL)".to_owned(),
        dir.path().join("bench.db").display().to_string(),
        None,
    )];
    let pg_base = std::env::var("IDEMSPEC_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    match sqlx::PgConnection::connect(&pg_base).await {
        Ok(mut conn) => {
            let name = format!("lb_bench_{}", uuid::Uuid::new_v4().simple());
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .await
                .expect("create bench db");
            let (prefix, _) = pg_base.rsplit_once('/').expect("URL with a database");
            stores.push((
                "PostgreSQL".to_owned(),
                format!("{prefix}/{name}"),
                Some(name),
            ));
        }
        Err(err) => eprintln!("note: PostgreSQL unreachable ({err}); SQLite only"),
    }

    let cases = [
        Case::CreateNoKey,
        Case::CreateUniqueKey,
        Case::Replay,
        Case::InFlightConflict,
    ];
    println!(
        "| case | {} |",
        stores
            .iter()
            .map(|s| s.0.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---:|".repeat(stores.len()));
    let mut results = vec![vec![0.0; stores.len()]; cases.len()];
    let mut commits = vec![0.0; stores.len()];
    let mut grouped = vec![(0.0, 0.0); stores.len()];
    for (s, (_, url, _)) in stores.iter().enumerate() {
        let server = server(url, pool_size).await;
        // Warm up connections and caches.
        run_case(&server, Case::CreateNoKey, 100, concurrency).await;
        let before = scripts_per_commit(&server).await;
        for (c, case) in cases.iter().enumerate() {
            results[c][s] = run_case(&server, *case, total, concurrency).await;
        }
        let after = scripts_per_commit(&server).await;
        grouped[s] = (after.0 - before.0, after.1 - before.1);
        server.shutdown(Duration::from_secs(2)).await;
        // The same file or database, now idle, each statement its own transaction.
        commit_rate(url, 100, concurrency).await;
        commits[s] = commit_rate(url, total, concurrency).await;
    }
    let row = |name: &str, cells: Vec<String>| println!("| {name} | {} |", cells.join(" | "));
    for (c, case) in cases.iter().enumerate() {
        row(
            case.name(),
            results[c].iter().map(|r| format!("{r:.0} req/s")).collect(),
        );
    }
    row(
        "store: one-statement commits",
        commits.iter().map(|r| format!("{r:.0} /s")).collect(),
    );
    row(
        "scripts per commit (SQLite's group commit)",
        grouped
            .iter()
            .map(|&(commits, scripts)| match commits {
                0.0 => "–".to_owned(),
                _ => format!("{:.2} ({commits:.0} commits)", scripts / commits),
            })
            .collect(),
    );
    // The targets of issue 12: keyed ÷ unkeyed ≥ 0.9, keyed ÷ the store's commit rate ≥ 0.25.
    let verdict = |ratio: f64, target: f64| {
        let met = if ratio >= target { "met" } else { "not met" };
        format!("{ratio:.2} ({met}, target ≥ {target})")
    };
    row(
        "keyed ÷ unkeyed create",
        (0..stores.len())
            .map(|s| verdict(results[1][s] / results[0][s], 0.9))
            .collect(),
    );
    row(
        "keyed create ÷ commit rate",
        (0..stores.len())
            .map(|s| verdict(results[1][s] / commits[s], 0.25))
            .collect(),
    );
    println!(
        "\n{total} requests (and commits) per case, {concurrency} concurrent clients \
         (SQLite's commits: one connection), boot latency 0."
    );

    for (_, _, name) in &stores {
        if let Some(name) = name {
            if let Ok(mut conn) = sqlx::PgConnection::connect(&pg_base).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await;
            }
        }
    }
}
