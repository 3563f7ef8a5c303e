//! `--creates async`: a create answers `202` with an operation and boots after the answer; the
//! operation settles `DONE` or `FAILED`; a failed one releases its key (the retry runs again and
//! resumes), except under `cache-5xx`; a restarted process takes up the operations a killed one
//! left running, once they are older than the in-flight TTL.

use std::time::{Duration, Instant};

use leasebroker::flaw::Flaw;
use leasebroker::fleet::CreateMode;
use leasebroker::testing::{ServerCommand, ServerProcess};
use serde_json::{json, Value};

use crate::support::{assert_totals, worker_body, Client, Db, Options, Resp, TestServer};

/// A server on `db` whose creates answer `202`, with `flaws`.
async fn server(db: &Db, flaws: Vec<Flaw>) -> TestServer {
    TestServer::start(
        db,
        Options {
            creates: CreateMode::Async,
            flaws,
            ..Options::default()
        },
    )
    .await
}

/// Polls `link` as `principal` until the operation is no longer `RUNNING` (at most 20 s).
async fn settled(c: &Client, principal: &str, link: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let op = c
            .send(reqwest::Method::GET, link, principal, None, None)
            .await;
        assert_eq!(op.status, 200, "{}", String::from_utf8_lossy(&op.body));
        let op = op.json();
        if op["status"] != "RUNNING" {
            return op;
        }
        assert!(Instant::now() < deadline, "still running: {op}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `202` of a create, its operation's `selfLink` checked against its `Location`.
fn accepted(r: &Resp) -> Value {
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let op = r.json();
    assert_eq!(op["status"], "RUNNING", "{op}");
    assert_eq!(r.header("location").as_deref(), op["selfLink"].as_str());
    op
}

async fn a_create_answers_an_operation_that_settles_done(db: &Db) {
    let s = server(db, Vec::new()).await;
    let c = &s.client;
    let first = c
        .create("alice", Some("op-1"), &worker_body("ubuntu"))
        .await;
    let op = accepted(&first);
    let link = op["selfLink"].as_str().expect("a selfLink");
    // A retry gets the same 202, byte for byte, marked as a replay.
    let again = c
        .create("alice", Some("op-1"), &worker_body("ubuntu"))
        .await;
    assert!(again.replayed());
    assert_eq!((again.status, &again.body), (202, &first.body));
    // Another principal does not see the operation.
    let other = c.send(reqwest::Method::GET, link, "bob", None, None).await;
    assert_eq!((other.status, other.problem().as_str()), (404, "not-found"));
    let done = settled(c, "alice", link).await;
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(done["name"], op["name"]);
    let worker = c
        .get("alice", done["targetId"].as_str().expect("a targetId"))
        .await;
    assert_eq!(worker.status, 200);
    crate::support::assert_one_of_everything(&c.stats().await);
    s.stop().await;
}

async fn a_failed_operation_releases_its_key_and_the_retry_resumes(db: &Db) {
    let s = server(db, Vec::new()).await;
    let c = &s.client;
    let body = worker_body("fail-once-async");
    let first = accepted(&c.create("alice", Some("op-2"), &body).await);
    let failed = settled(c, "alice", first["selfLink"].as_str().expect("a selfLink")).await;
    assert_eq!(failed["status"], "FAILED", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("boot")),
        "{failed}"
    );
    let stats = c.stats().await;
    assert_eq!(stats["idempotency_records"]["failed"], 1, "{stats}");
    assert_totals(
        &stats,
        &[("workers", 0), ("nodes_allocated", 1), ("leases", 1)],
    );
    // The retry runs again: a new operation, for the same worker, on the same node and lease.
    let retry = c.create("alice", Some("op-2"), &body).await;
    assert!(!retry.replayed());
    let second = accepted(&retry);
    assert_ne!(second["name"], first["name"]);
    assert_eq!(second["targetId"], first["targetId"]);
    let done = settled(c, "alice", second["selfLink"].as_str().expect("a selfLink")).await;
    assert_eq!(done["status"], "DONE", "{done}");
    assert_totals(
        &c.stats().await,
        &[("workers", 1), ("nodes_allocated", 1), ("leases", 1)],
    );
    s.stop().await;
}

async fn cache_5xx_keeps_a_failed_operation_answered(db: &Db) {
    let s = server(db, vec![Flaw::Cache5xx]).await;
    let c = &s.client;
    let body = worker_body("fail-once-cached");
    let first = c.create("alice", Some("op-3"), &body).await;
    let op = accepted(&first);
    let failed = settled(c, "alice", op["selfLink"].as_str().expect("a selfLink")).await;
    assert_eq!(failed["status"], "FAILED", "{failed}");
    let again = c.create("alice", Some("op-3"), &body).await;
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    s.stop().await;
}

async fn a_restarted_process_finishes_the_operations_a_killed_one_left_running(db: &Db) {
    let command = ServerCommand::binary(env!("CARGO_BIN_EXE_leasebroker"));
    // The watchdog takes up an operation no process took up for the in-flight TTL.
    let flags = [
        "--creates",
        "async",
        "--boot-latency",
        "20ms",
        "--in-flight-ttl",
        "1s",
    ]
    .map(str::to_owned);
    let start = || async {
        let process = ServerProcess::start(&command, &db.url(), &flags)
            .await
            .expect("start leasebroker");
        let client = Client::new(process.base.clone(), process.admin.clone());
        (process, client)
    };
    let (mut first, c) = start().await;
    // The boot, after the answer, hangs until the process is killed.
    c.faults(json!({"hang_boots": true})).await;
    let op = accepted(
        &c.create("alice", Some("op-4"), &worker_body("ubuntu"))
            .await,
    );
    let link = op["selfLink"].as_str().expect("a selfLink").to_owned();
    first.child.start_kill().expect("SIGKILL the server");
    first.child.wait().await.expect("wait");
    let (mut second, c) = start().await;
    let done = settled(&c, "alice", &link).await;
    assert_eq!(done["status"], "DONE", "{done}");
    crate::support::assert_one_of_everything(&c.stats().await);
    second.child.kill().await.expect("stop the server");
}

crate::both_stores!(
    a_create_answers_an_operation_that_settles_done,
    a_failed_operation_releases_its_key_and_the_retry_resumes,
    cache_5xx_keeps_a_failed_operation_answered,
    a_restarted_process_finishes_the_operations_a_killed_one_left_running,
);
