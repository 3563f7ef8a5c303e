//! One test per rule of the contract, on both stores.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{worker_body, Db, HungCreate, Options, TestServer};

/// CASES #2, #12: a completed create is replayed byte for byte — status, Location, Content-Type,
/// body — with `Idempotent-Replayed: true`; the sf-string form of the key is the same key.
async fn replay_is_identical(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let first = c
        .create("alice", Some("order-17"), &worker_body("ubuntu"))
        .await;
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    let id = first.id();
    assert_eq!(first.header("location"), Some(format!("/v1/workers/{id}")));
    for key in ["order-17", "\"order-17\""] {
        let again = c.create("alice", Some(key), &worker_body("ubuntu")).await;
        assert_eq!(again.status, 201, "key {key}");
        assert_eq!(again.body, first.body, "key {key}");
        assert_eq!(again.header("location"), first.header("location"));
        assert_eq!(again.header("content-type"), first.header("content-type"));
        assert!(again.replayed());
    }
    assert_eq!(c.stats().await["workers"], 1);
    server.stop().await;
}

/// CASES #4, #11: same key, one field different → 409 `key-reused-with-different-request` (a type
/// distinct from in-flight), no second worker, and the original still replays.
async fn mismatch_is_rejected(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let first = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(first.status, 201);
    let other = c.create("alice", Some("k"), &worker_body("debian")).await;
    assert_eq!(
        (other.status, other.problem().as_str()),
        (409, "key-reused-with-different-request")
    );
    assert!(
        other.header("retry-after").is_none(),
        "a mismatch is terminal, not retryable"
    );
    let query = c
        .send(
            Method::POST,
            "/v1/workers?x=1",
            "alice",
            Some("k"),
            Some(&worker_body("ubuntu")),
        )
        .await;
    assert_eq!(
        (query.status, query.problem().as_str()),
        (409, "key-reused-with-different-request")
    );
    let again = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!((again.status, again.body), (201, first.body));
    assert_eq!(c.stats().await["workers"], 1);
    server.stop().await;
}

/// `GET /v1/workers?label=k:v` filters the principal's workers by label (all given labels must match).
async fn list_filters_by_label(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let body = |team: &str, env: &str| json!({"image": "u", "cpu": 1, "memory_gb": 1, "labels": {"team": team, "env": env}});
    let a = c
        .create("alice", Some("a"), &body("red", "prod"))
        .await
        .id();
    c.create("alice", Some("b"), &body("blue", "prod")).await;
    c.create("bob", Some("a"), &body("red", "prod")).await;
    let ids = |items: Vec<serde_json::Value>| {
        items
            .iter()
            .map(|w| w["id"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    let red = c
        .send(
            Method::GET,
            "/v1/workers?label=team:red",
            "alice",
            None,
            None,
        )
        .await;
    assert_eq!(
        ids(red.json()["items"].as_array().cloned().unwrap_or_default()),
        vec![Some(a)]
    );
    let both = c
        .send(
            Method::GET,
            "/v1/workers?label=env:prod&label=team:blue",
            "alice",
            None,
            None,
        )
        .await;
    assert_eq!(both.json()["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(c.list("alice").await.len(), 2);
    server.stop().await;
}

/// CASES #3: the same key from two principals creates two workers, and neither sees the other's.
async fn principals_are_separate(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let a = c
        .create("alice", Some("shared"), &worker_body("ubuntu"))
        .await;
    let b = c
        .create("bob", Some("shared"), &worker_body("ubuntu"))
        .await;
    assert_eq!((a.status, b.status), (201, 201));
    assert!(!b.replayed(), "bob must not get alice's replay");
    let (a_id, b_id) = (
        a.json()["id"].as_str().map(str::to_owned),
        b.json()["id"].as_str().map(str::to_owned),
    );
    assert_ne!(a_id, b_id);
    assert_eq!(c.list("alice").await.len(), 1);
    assert_eq!(c.list("bob").await.len(), 1);
    let peek = c.get("bob", a_id.as_deref().expect("id")).await;
    assert_eq!((peek.status, peek.problem().as_str()), (404, "not-found"));
    assert_eq!(c.stats().await["workers"], 2);
    server.stop().await;
}

/// CASES #5: the same key on create and on reboot names two distinct operations.
async fn endpoints_are_separate(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let created = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    let id = created.id();
    let reboot = c.reboot("alice", &id, Some("k")).await;
    assert_eq!(
        reboot.status,
        202,
        "{}",
        String::from_utf8_lossy(&reboot.body)
    );
    assert!(!reboot.replayed());
    assert_eq!(reboot.json()["reboot_count"], 1);
    server.stop().await;
}

/// CASES #6: a retried DELETE replays its 204 (not 404), and the node and lease are freed once.
async fn delete_is_replayed(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let id = c
        .create("alice", Some("c"), &worker_body("ubuntu"))
        .await
        .id();
    let first = c.delete("alice", &id, Some("d")).await;
    assert_eq!(first.status, 204);
    let again = c.delete("alice", &id, Some("d")).await;
    assert_eq!(
        again.status,
        204,
        "{}",
        String::from_utf8_lossy(&again.body)
    );
    assert!(again.replayed() && again.body.is_empty());
    let unkeyed = c.delete("alice", &id, None).await;
    assert_eq!(
        (unkeyed.status, unkeyed.problem().as_str()),
        (404, "not-found")
    );
    let stats = c.stats().await;
    crate::support::assert_totals(&stats, &[("workers", 0), ("leases", 0)]);
    assert_eq!(stats["nodes_allocated"], 0, "{stats}");
    server.stop().await;
}

/// CASES #7: a retried reboot reboots once; a new key reboots again.
async fn reboot_runs_once(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let id = c
        .create("alice", Some("c"), &worker_body("ubuntu"))
        .await
        .id();
    let first = c.reboot("alice", &id, Some("r1")).await;
    let again = c.reboot("alice", &id, Some("r1")).await;
    assert_eq!((first.status, again.status), (202, 202));
    assert_eq!(again.body, first.body);
    assert_eq!(c.get("alice", &id).await.json()["reboot_count"], 1);
    assert_eq!(c.stats().await["reboots"], 1);
    let second = c.reboot("alice", &id, Some("r2")).await;
    assert_eq!(second.json()["reboot_count"], 2);
    assert_eq!(c.stats().await["reboots"], 2);
    server.stop().await;
}

/// CASES #8, #13: a boot that fails with a 5xx after the node and lease were written marks the record
/// failed (not replayed); the retry runs again and resumes: one node, one lease, one worker, one boot.
async fn failure_then_retry_resumes(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    c.faults(json!({"fail_next_boots": 1})).await;
    let failed = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(
        (failed.status, failed.problem().as_str()),
        (502, "hypervisor-error")
    );
    let stats = c.stats().await;
    assert_eq!(stats["idempotency_records"]["failed"], 1, "{stats}");
    crate::support::assert_totals(&stats, &[("leases", 1), ("workers", 0)]);
    let retried = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(retried.status, 201);
    assert!(!retried.replayed(), "a 5xx is re-run, not replayed");
    let stats = c.stats().await;
    crate::support::assert_one_of_everything(&stats);
    assert_eq!(stats["idempotency_records"]["completed"], 1, "{stats}");
    server.stop().await;
}

/// A panic in the handler marks the record failed (a top-level cleanup), so the row never stays in
/// flight: the client gets a 500 problem and the retry runs again and resumes.
async fn panic_marks_failed(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    c.faults(json!({"panic_next_boots": 1})).await;
    let crashed = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(
        (crashed.status, crashed.problem().as_str()),
        (500, "internal-error")
    );
    let detail = crashed.json()["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        !detail.contains("panic"),
        "internals must not leak: {detail}"
    );
    let stats = c
        .wait_stats("the record failed", |s| {
            s["idempotency_records"]["failed"] == 1
        })
        .await;
    assert_eq!(stats["idempotency_records"]["in_flight"], 0, "{stats}");
    let retried = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(retried.status, 201);
    let stats = c.stats().await;
    crate::support::assert_totals(
        &stats,
        &[
            ("workers", 1),
            ("nodes_allocated", 1),
            ("leases", 1),
            ("boots", 1),
        ],
    );
    server.stop().await;
}

/// The create key still replays its 201 after the worker was deleted, and creates nothing.
async fn replay_after_delete(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let first = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    let id = first.id();
    assert_eq!(c.delete("alice", &id, None).await.status, 204);
    let again = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!((again.status, &again.body), (201, &first.body));
    assert!(again.replayed());
    assert_eq!(c.stats().await["workers"], 0);
    server.stop().await;
}

/// While the first request is in flight, a retry gets 409 `request-in-progress` + `Retry-After` at once
/// (no blocking); after the in-flight TTL a retry reclaims and completes, converging on one worker.
async fn in_flight_conflict_then_ttl(db: &Db) {
    let server = TestServer::start(db, Options::in_flight_ttl(Duration::from_secs(1))).await;
    let c = &server.client;
    let first = HungCreate::start(c, "k").await;
    let started = std::time::Instant::now();
    let busy = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the conflict must not wait for the lock"
    );
    assert_eq!(
        (busy.status, busy.problem().as_str()),
        (409, "request-in-progress")
    );
    assert_eq!(busy.header("retry-after").as_deref(), Some("1"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    first.unhang().await;
    let reclaimed = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(
        reclaimed.status,
        201,
        "{}",
        String::from_utf8_lossy(&reclaimed.body)
    );
    assert_eq!(first.response().await.status, 201);
    let stats = c.stats().await;
    crate::support::assert_totals(&stats, &[("workers", 1), ("leases", 1)]);
    server.stop().await;
}

/// A client that gives up mid-request does not cancel the work: the create completes on the server
/// and the retry gets its replay (CASES #9's "lost response" half, without a proxy).
async fn client_disconnect_does_not_cancel(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    // The client hangs up while the create is inside the boot call.
    let mut abandoned = HungCreate::start(c, "k").await;
    abandoned.abandon().await;
    abandoned.unhang().await;
    c.wait_stats("the abandoned create to finish", |s| {
        s["idempotency_records"]["completed"] == 1
    })
    .await;
    let retry = c.create("alice", Some("k"), &worker_body("ubuntu")).await;
    assert_eq!(retry.status, 201);
    assert!(retry.replayed());
    crate::support::assert_totals(
        &c.stats().await,
        &[("workers", 1), ("leases", 1), ("boots", 1)],
    );
    server.stop().await;
}

/// CASES #10: invalid keys get 400 problems and write nothing; a missing key on create is 400.
async fn key_validation(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let long = "k".repeat(256);
    for bad in ["", long.as_str(), "\"unterminated", "two words"] {
        let r = c.create("alice", Some(bad), &worker_body("ubuntu")).await;
        assert_eq!(
            (r.status, r.problem().as_str()),
            (400, "invalid-idempotency-key"),
            "key {bad:?}"
        );
    }
    let non_ascii = c
        .raw(Method::POST, "/v1/workers")
        .bearer_auth("alice")
        .header(
            "idempotency-key",
            reqwest::header::HeaderValue::from_bytes("clé".as_bytes()).expect("obs-text"),
        )
        .json(&worker_body("ubuntu"))
        .send()
        .await
        .expect("send");
    let non_ascii = crate::support::Client::read(non_ascii).await;
    assert_eq!(
        (non_ascii.status, non_ascii.problem().as_str()),
        (400, "invalid-idempotency-key")
    );
    let missing = c.create("alice", None, &worker_body("ubuntu")).await;
    assert_eq!(
        (missing.status, missing.problem().as_str()),
        (400, "missing-idempotency-key")
    );
    let stats = c.stats().await;
    assert_eq!(stats["workers"], 0, "{stats}");
    assert_eq!(
        stats["idempotency_records"],
        json!({"in_flight": 0, "completed": 0, "failed": 0})
    );
    let max = "k".repeat(255);
    assert_eq!(
        c.create("alice", Some(&max), &worker_body("ubuntu"))
            .await
            .status,
        201
    );
    server.stop().await;
}

/// Records past the retention window are swept; the key can then be used afresh.
async fn sweeper_expires_records(db: &Db) {
    let opts = Options {
        retention: Duration::from_secs(1),
        sweep_interval: Duration::from_millis(200),
        ..Options::default()
    };
    let server = TestServer::start(db, opts).await;
    let c = &server.client;
    assert_eq!(
        c.create("alice", Some("k"), &worker_body("ubuntu"))
            .await
            .status,
        201
    );
    assert_eq!(c.stats().await["idempotency_records"]["completed"], 1);
    c.wait_stats("the sweeper", |s| {
        s["idempotency_records"]["completed"] == 0
    })
    .await;
    // The key is free again: a different body is accepted (no mismatch against a swept record).
    let fresh = c.create("alice", Some("k"), &worker_body("debian")).await;
    assert_eq!(fresh.status, 201);
    assert!(!fresh.replayed());
    // A new operation: a new worker with the new body, not the old worker adopted through its sub-keys.
    assert_eq!(fresh.json()["image"], "debian");
    assert_eq!(c.stats().await["workers"], 2);
    server.stop().await;
}

/// A create the pool cannot satisfy gets 503 `pool-exhausted` and leaks nothing; the same key
/// succeeds once a node is free (503 is not stored).
async fn pool_exhaustion(db: &Db) {
    let opts = Options {
        pool_size: 2,
        ..Options::default()
    };
    let server = TestServer::start(db, opts).await;
    let c = &server.client;
    let first = c.create("alice", Some("a"), &worker_body("ubuntu")).await;
    assert_eq!(
        c.create("alice", Some("b"), &worker_body("ubuntu"))
            .await
            .status,
        201
    );
    let full = c.create("alice", Some("c"), &worker_body("ubuntu")).await;
    assert_eq!(
        (full.status, full.problem().as_str()),
        (503, "pool-exhausted")
    );
    assert!(full.header("retry-after").is_some());
    let stats = c.stats().await;
    crate::support::assert_totals(
        &stats,
        &[("workers", 2), ("nodes_allocated", 2), ("leases", 2)],
    );
    let id = first.id();
    assert_eq!(c.delete("alice", &id, None).await.status, 204);
    assert_eq!(
        c.create("alice", Some("c"), &worker_body("ubuntu"))
            .await
            .status,
        201
    );
    let stats = c.stats().await;
    crate::support::assert_totals(&stats, &[("workers", 2), ("leases", 2)]);
    server.stop().await;
}

crate::both_stores!(
    replay_is_identical,
    mismatch_is_rejected,
    principals_are_separate,
    list_filters_by_label,
    endpoints_are_separate,
    delete_is_replayed,
    reboot_runs_once,
    failure_then_retry_resumes,
    panic_marks_failed,
    replay_after_delete,
    in_flight_conflict_then_ttl,
    client_disconnect_does_not_cancel,
    key_validation,
    sweeper_expires_records,
    pool_exhaustion,
);
