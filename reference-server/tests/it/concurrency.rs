//! Simultaneous same-key requests released at one barrier, repeated.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;

use crate::metrics::unlabeled;
use crate::support::{worker_body, Db, HungCreate, Options, Resp, TestServer};

/// Spawns `n` creates with one key, released together at one barrier.
pub fn spawn_burst(
    client: &crate::support::Client,
    n: usize,
    principal: &str,
    key: &str,
    image: &str,
) -> Vec<tokio::task::JoinHandle<Resp>> {
    let barrier = Arc::new(Barrier::new(n));
    (0..n)
        .map(|_| {
            let (client, barrier) = (client.clone(), barrier.clone());
            let (principal, key, body) = (principal.to_owned(), key.to_owned(), worker_body(image));
            tokio::spawn(async move {
                barrier.wait().await;
                client.create(&principal, Some(&key), &body).await
            })
        })
        .collect()
}

/// Fires `n` creates with one key, released together; returns the responses.
pub async fn burst(
    client: &crate::support::Client,
    n: usize,
    principal: &str,
    key: &str,
    image: &str,
) -> Vec<Resp> {
    let mut out = Vec::new();
    for t in spawn_burst(client, n, principal, key, image) {
        out.push(t.await.expect("request task"));
    }
    out
}

/// CASES #1: 50 simultaneous same-key creates, 20 rounds: exactly one worker, node and lease per round;
/// every other response is 409 `request-in-progress` with `Retry-After`, or an identical replay.
async fn fifty_simultaneous_same_key_creates(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    for round in 1..=20_i64 {
        let key = format!("burst-{round}");
        let responses = burst(c, 50, "alice", &key, "ubuntu").await;
        let created: Vec<&Resp> = responses.iter().filter(|r| r.status == 201).collect();
        assert!(!created.is_empty(), "round {round}: no 201 at all");
        for r in &responses {
            match r.status {
                201 => {
                    assert_eq!(r.body, created[0].body, "round {round}: a 201 body differs");
                    assert_eq!(r.header("location"), created[0].header("location"));
                }
                409 => {
                    assert_eq!(r.problem(), "request-in-progress", "round {round}");
                    assert!(
                        r.header("retry-after").is_some(),
                        "round {round}: 409 without Retry-After"
                    );
                }
                other => panic!(
                    "round {round}: unexpected status {other}: {}",
                    String::from_utf8_lossy(&r.body)
                ),
            }
        }
        assert_eq!(
            created.iter().filter(|r| !r.replayed()).count(),
            1,
            "round {round}: one original 201"
        );
        let stats = c.stats().await;
        assert_eq!(stats["workers"], round, "round {round}: {stats}");
        assert_eq!(stats["nodes_allocated"], round, "round {round}: {stats}");
        assert_eq!(stats["leases"], round, "round {round}: {stats}");
        assert_eq!(stats["boots"], round, "round {round}: {stats}");
    }
    if matches!(db, Db::Sqlite { .. }) {
        // The bursts ran through SQLite's group commit: some transactions waited for the one
        // connection and were committed together.
        let scrape = crate::metrics::scrape(&c.admin).await;
        let commits = unlabeled(&scrape, "leasebroker_store_scripts_per_commit_count");
        let scripts = unlabeled(&scrape, "leasebroker_store_scripts_per_commit_sum");
        assert!(scripts > commits, "{scripts} scripts in {commits} commits");
    }
    server.stop().await;
}

/// After the in-flight TTL, 20 simultaneous retries race to reclaim the stuck record: exactly one wins
/// (one new run), the rest get 409 or the identical replay, and the totals stay at one worker.
async fn ttl_reclaim_has_one_winner(db: &Db) {
    let server = TestServer::start(db, Options::in_flight_ttl(Duration::from_secs(2))).await;
    let c = &server.client;
    let first = HungCreate::start(c, "stuck").await;
    let early = c
        .create("alice", Some("stuck"), &worker_body("ubuntu"))
        .await;
    assert_eq!(
        (early.status, early.problem().as_str()),
        (409, "request-in-progress")
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // The boots still hang, so the one reclaimer stays in flight while the other 19 are answered;
    // only then is the hypervisor released (no dependence on how fast the machine is).
    let tasks = spawn_burst(c, 20, "alice", "stuck", "ubuntu");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tasks.iter().filter(|t| t.is_finished()).count() < 19 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the losers were not answered at once"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.unhang().await;
    let mut responses = Vec::new();
    for t in tasks {
        responses.push(t.await.expect("request task"));
    }
    let fresh = responses
        .iter()
        .filter(|r| r.status == 201 && !r.replayed())
        .count();
    assert_eq!(
        fresh,
        1,
        "exactly one reclaimer runs: {:?}",
        responses.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in &responses {
        assert!(r.status == 201 || (r.status == 409 && r.problem() == "request-in-progress"));
    }
    let first = first.response().await;
    assert_eq!(first.status, 201, "the original finishes too");
    let stats = c.stats().await;
    crate::support::assert_totals(&stats, &[("workers", 1), ("leases", 1)]);
    assert_eq!(stats["nodes_allocated"], 1, "{stats}");
    server.stop().await;
}

crate::both_stores!(
    fifty_simultaneous_same_key_creates,
    ttl_reclaim_has_one_winner
);
