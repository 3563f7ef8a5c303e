//! Hostile request lines and headers: odd path ids and ambiguous headers get a 4xx problem body,
//! never a 5xx or a plain-text rejection, and leave no record in flight or failed.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{worker_body, Client, Db, HungCreate, Options, Resp, TestServer};

/// Path ids no worker can have: a NUL (PostgreSQL refuses it in a text parameter), other control
/// characters, spaces, invalid UTF-8 after percent-decoding, non-ASCII, an over-long id. Each is a
/// `404 not-found` problem on GET, DELETE (with and without a key) and reboot, and writes nothing.
async fn odd_path_ids_are_404_problems(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let long = "a".repeat(4096);
    let ids = [
        "%00",
        "wkr-%00",
        "a%01b",
        "a%20b",
        "%ff",
        "%c3%28",
        "cl%C3%A9",
        long.as_str(),
    ];
    for (n, id) in ids.iter().enumerate() {
        let get = c.get("alice", id).await;
        let delete = c.delete("alice", id, Some(&format!("del-{n}"))).await;
        let delete_unkeyed = c.delete("alice", id, None).await;
        let reboot = c.reboot("alice", id, Some(&format!("reboot-{n}"))).await;
        for (what, r) in [
            ("GET", &get),
            ("DELETE", &delete),
            ("DELETE without key", &delete_unkeyed),
            ("reboot", &reboot),
        ] {
            assert_eq!(
                (r.status, r.problem().as_str()),
                (404, "not-found"),
                "{what} id {id:.40}"
            );
        }
    }
    let stats = c.stats().await;
    assert_eq!(stats["workers"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["in_flight"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["failed"], 0, "{stats}");
    server.stop().await;
}

/// Two `Authorization` headers are ambiguous (a proxy may check one, the server use the other):
/// `401 unauthorized`, nothing created.
async fn repeated_authorization_is_401(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let r = Client::read(
        c.raw(Method::POST, "/v1/workers")
            .header("authorization", "Bearer alice")
            .header("authorization", "Bearer mallory")
            .header("idempotency-key", "two-tokens")
            .json(&worker_body("u"))
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((r.status, r.problem().as_str()), (401, "unauthorized"));
    assert!(c.list("alice").await.is_empty());
    assert!(c.list("mallory").await.is_empty());
    assert_eq!(c.stats().await["workers"], 0);
    server.stop().await;
}

/// Creates with `key` while boots hang; once the first boot is pending, waits `retry_after` and retries
/// with the same key; 1.5 s after that (time for the retry to reach the hanging call) releases the
/// boots. Returns (first, retry).
async fn create_retry_during_a_hung_boot(
    c: &Client,
    key: &str,
    retry_after: Duration,
) -> (Resp, Resp) {
    let first = HungCreate::start(c, key).await;
    let retry = async {
        tokio::time::sleep(retry_after).await;
        c.create("alice", Some(key), &worker_body("ubuntu")).await
    };
    let release = async {
        tokio::time::sleep(retry_after + Duration::from_millis(1500)).await;
        first.unhang().await;
        first.response().await
    };
    let (retry, first) = tokio::join!(retry, release);
    (first, retry)
}

/// A boot that hangs past the in-flight TTL: the retry reclaims the record and resumes while the first
/// attempt is still inside the hypervisor call. Reconciling by tag finds nothing yet, so both call the
/// hypervisor with the same `boot_id` tag; the call must be "do or return the existing one", or the
/// worker gets a phantom second instance. Both attempts answer with the one worker.
async fn reclaim_during_a_hung_boot_boots_once(db: &Db) {
    let ttl = Duration::from_millis(500);
    let server = TestServer::start(db, Options::in_flight_ttl(ttl)).await;
    let c = &server.client;
    // Past the TTL: the retry reclaims the record while the first attempt is inside the call.
    let (first, retry) = create_retry_during_a_hung_boot(c, "hung", ttl * 2).await;
    assert_eq!((first.status, retry.status), (201, 201));
    assert_eq!(first.id(), retry.id());
    let stats = c.stats().await;
    crate::support::assert_one_of_everything(&stats);
    server.stop().await;
}

/// Two `Content-Type` headers, one of them JSON: which one a proxy honoured is unknown, so the body is
/// not JSON to us either: `415 unsupported-media-type`, nothing created.
async fn repeated_content_type_is_415(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let body = serde_json::to_vec(&worker_body("u")).expect("serialise");
    for (n, (first, second)) in [
        ("application/json", "text/plain"),
        ("text/plain", "application/json"),
        ("application/json", "application/json"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = Client::read(
            c.raw(Method::POST, "/v1/workers")
                .bearer_auth("alice")
                .header("idempotency-key", format!("two-types-{n}"))
                .header("content-type", first)
                .header("content-type", second)
                .body(body.clone())
                .send()
                .await
                .expect("send"),
        )
        .await;
        assert_eq!(
            (r.status, r.problem().as_str()),
            (415, "unsupported-media-type"),
            "{first} + {second}"
        );
    }
    assert_eq!(c.stats().await["workers"], 0);
    server.stop().await;
}

/// An in-flight record is governed by the in-flight TTL, not the retention window: a request still
/// running when its record's retention ends (a short `--retention`, a hung boot) must keep its key.
/// Otherwise a retry, or the sweeper, treats the record as gone and the retry starts a new operation
/// with new side-effect sub-keys: a second node, lease and worker, or a leaked lease after a crash.
async fn in_flight_record_outlives_its_retention(db: &Db) {
    let retention = Duration::from_secs(1);
    let opts = Options {
        retention,
        sweep_interval: Duration::from_millis(100),
        ..Options::default()
    };
    let server = TestServer::start(db, opts).await;
    let c = &server.client;
    // Past the retention window, several sweeps later; the in-flight TTL (30 s) still runs.
    let (first, retry) = create_retry_during_a_hung_boot(c, "slow", retention * 2).await;
    assert_eq!(first.status, 201);
    assert_eq!(
        (retry.status, retry.problem().as_str()),
        (409, "request-in-progress")
    );
    let stats = c.stats().await;
    crate::support::assert_one_of_everything(&stats);
    server.stop().await;
}

/// A bearer token becomes the principal under `--dev`, and the principal is part of the record's
/// primary key: a long random token overflowed PostgreSQL's index row limit (500). Tokens are at most
/// 1024 bytes: longer is `401 unauthorized` on both stores, nothing written; 1024 is accepted.
async fn over_long_bearer_token_is_401(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let random = |len: usize| {
        let mut token = String::new();
        while token.len() < len {
            token.push_str(&uuid::Uuid::new_v4().simple().to_string());
        }
        token.truncate(len);
        token
    };
    let long = c
        .create(&random(3000), Some("long"), &worker_body("u"))
        .await;
    assert_eq!(
        (long.status, long.problem().as_str()),
        (401, "unauthorized")
    );
    let stats = c.stats().await;
    assert_eq!(stats["workers"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["failed"], 0, "{stats}");
    let limit = c
        .create(&random(1024), Some("limit"), &worker_body("u"))
        .await;
    assert_eq!(limit.status, 201);
    server.stop().await;
}

/// A create that failed after its node and lease were written (a 502 from the hypervisor) and was
/// never retried: once the failed record's retention ends, nothing can resume it any more, so the
/// sweeper releases what it left (node, lease, pending boot) instead of leaking them forever; a later
/// create with the same key is a new operation and ends with one of each.
async fn swept_failed_record_releases_its_leftovers(db: &Db) {
    let opts = Options {
        retention: Duration::from_secs(1),
        sweep_interval: Duration::from_millis(100),
        ..Options::default()
    };
    let server = TestServer::start(db, opts).await;
    let c = &server.client;
    c.faults(json!({"fail_next_boots": 1})).await;
    let failed = c.create("alice", Some("given-up"), &worker_body("u")).await;
    assert_eq!(
        (failed.status, failed.problem().as_str()),
        (502, "hypervisor-error")
    );
    c.wait_stats("the sweeper to release the failed attempt", |s| {
        s["idempotency_records"]["failed"] == 0
            && s["leases"] == 0
            && s["nodes_allocated"] == 0
            && s["pending_boots"] == 0
    })
    .await;
    let again = c.create("alice", Some("given-up"), &worker_body("u")).await;
    assert_eq!(again.status, 201);
    let stats = c.stats().await;
    crate::support::assert_totals(
        &stats,
        &[
            ("workers", 1),
            ("nodes_allocated", 1),
            ("leases", 1),
            ("pending_boots", 0),
        ],
    );
    server.stop().await;
}

/// The same failed create retried after its retention ended but before a sweep: the retry takes the
/// record over keeping its nonce and resumes the attempt (one node, one lease), rather than starting
/// over beside the leftovers.
async fn expired_failed_record_is_resumed(db: &Db) {
    let retention = Duration::from_secs(1);
    let opts = Options {
        retention,
        sweep_interval: Duration::from_secs(3600),
        ..Options::default()
    };
    let server = TestServer::start(db, opts).await;
    let c = &server.client;
    c.faults(json!({"fail_next_boots": 1})).await;
    let failed = c.create("alice", Some("late"), &worker_body("u")).await;
    assert_eq!(failed.status, 502);
    tokio::time::sleep(retention + Duration::from_millis(500)).await;
    let late = c.create("alice", Some("late"), &worker_body("u")).await;
    assert_eq!(late.status, 201);
    crate::support::assert_totals(
        &c.stats().await,
        &[
            ("workers", 1),
            ("nodes_allocated", 1),
            ("leases", 1),
            ("pending_boots", 0),
        ],
    );
    server.stop().await;
}

crate::both_stores!(
    odd_path_ids_are_404_problems,
    repeated_authorization_is_401,
    reclaim_during_a_hung_boot_boots_once,
    repeated_content_type_is_415,
    in_flight_record_outlives_its_retention,
    over_long_bearer_token_is_401,
    swept_failed_record_releases_its_leftovers,
    expired_failed_record_is_resumed,
);
