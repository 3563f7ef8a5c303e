//! Each `--flaw` shows exactly the behaviour its name says, and the correct server does not: every case
//! runs its observation twice, on a clean server (must be false) and on the flawed one (must be true).

use std::time::Duration;

use leasebroker::flaw::Flaw;
use serde_json::{json, Value};

use crate::concurrency::burst;
use crate::support::{worker_body, Db, HungCreate, Options, Resp, TestServer};

async fn server(flaw: Option<Flaw>, opts: Options) -> (Db, TestServer) {
    let db = Db::sqlite();
    let opts = Options {
        flaws: flaw.into_iter().collect(),
        ..opts
    };
    let server = TestServer::start(&db, opts).await;
    (db, server)
}

/// On a clean or flawed server: optional faults, then two sequential creates with key `k` (images
/// `first` and `second`); returns both responses and the stats after.
async fn two_creates(
    flaw: Option<Flaw>,
    faults: Option<Value>,
    first: &str,
    second: &str,
) -> (Resp, Resp, Value) {
    let (_db, s) = server(flaw, Options::default()).await;
    if let Some(faults) = faults {
        s.client.faults(faults).await;
    }
    let a = s
        .client
        .create("alice", Some("k"), &worker_body(first))
        .await;
    let b = s
        .client
        .create("alice", Some("k"), &worker_body(second))
        .await;
    let stats = s.client.stats().await;
    s.stop().await;
    (a, b, stats)
}

/// Two sequential creates with one key make two workers.
async fn second_worker_on_retry(flaw: Option<Flaw>) -> bool {
    let (_, _, stats) = two_creates(flaw, None, "ubuntu", "ubuntu").await;
    stats["workers"] == 2
}

/// A different body with a used key is answered with the old 201.
async fn mismatch_replayed(flaw: Option<Flaw>) -> bool {
    let (_, other, _) = two_creates(flaw, None, "ubuntu", "debian").await;
    other.status == 201
}

/// Ten simultaneous same-key creates make more than one worker.
async fn race_creates_many(flaw: Option<Flaw>) -> bool {
    let (_db, s) = server(flaw, Options::default()).await;
    burst(&s.client, 10, "alice", "k", "ubuntu").await;
    let workers = s.client.stats().await["workers"].as_i64().unwrap_or(0);
    s.stop().await;
    workers > 1
}

/// After the in-flight TTL a retry still gets 409 (the key is locked out).
async fn locked_out_after_ttl(flaw: Option<Flaw>) -> bool {
    let opts = Options::in_flight_ttl(Duration::from_millis(500));
    let (_db, s) = server(flaw, opts).await;
    let c = &s.client;
    let first = HungCreate::start(c, "k").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    // On the correct server this retry reclaims the record and hangs in the boot; give it a short deadline.
    let retry = {
        let c = c.clone();
        tokio::spawn(async move { c.create("alice", Some("k"), &worker_body("ubuntu")).await })
    };
    let outcome = tokio::time::timeout(Duration::from_secs(3), retry).await;
    let locked_out = matches!(&outcome, Ok(Ok(r)) if r.status == 409);
    first.unhang().await;
    let _ = first.response().await;
    s.stop().await;
    locked_out
}

/// A 5xx is replayed on retry instead of re-run.
async fn five_hundred_replayed(flaw: Option<Flaw>) -> bool {
    let (_, retry, _) = two_creates(
        flaw,
        Some(json!({"fail_next_boots": 1})),
        "ubuntu",
        "ubuntu",
    )
    .await;
    retry.status == 502 && retry.replayed()
}

/// Bob's request with alice's key gets alice's response.
async fn response_leaks_across_principals(flaw: Option<Flaw>) -> bool {
    let (_db, s) = server(flaw, Options::default()).await;
    let a = s
        .client
        .create("alice", Some("k"), &worker_body("ubuntu"))
        .await;
    let b = s
        .client
        .create("bob", Some("k"), &worker_body("ubuntu"))
        .await;
    s.stop().await;
    b.body == a.body
}

/// A retried DELETE gets 404.
async fn delete_retry_404(flaw: Option<Flaw>) -> bool {
    let (_db, s) = server(flaw, Options::default()).await;
    let id = s
        .client
        .create("alice", Some("k"), &worker_body("ubuntu"))
        .await
        .id();
    s.client.delete("alice", &id, Some("d")).await;
    let again = s.client.delete("alice", &id, Some("d")).await;
    s.stop().await;
    again.status == 404
}

/// A retry after a failure part-way leaks the first attempt's lease and node.
async fn retry_leaks_lease(flaw: Option<Flaw>) -> bool {
    let (_, retry, stats) = two_creates(
        flaw,
        Some(json!({"fail_next_boots": 1})),
        "ubuntu",
        "ubuntu",
    )
    .await;
    assert_eq!(retry.status, 201);
    stats["leases"] == 2 && stats["nodes_allocated"] == 2 && stats["workers"] == 1
}

/// A request arriving while its key is in flight runs too: two workers.
async fn in_flight_duplicate_runs(flaw: Option<Flaw>) -> bool {
    let (_db, s) = server(flaw, Options::default()).await;
    let c = &s.client;
    let first = HungCreate::start(c, "k").await;
    let second = {
        let c = c.clone();
        tokio::spawn(async move { c.create("alice", Some("k"), &worker_body("ubuntu")).await })
    };
    // Wait until the second request was answered (correct: 409 at once) or is running (flawed: a second
    // pending boot), so the outcome does not depend on the machine's speed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !second.is_finished() && c.stats().await["pending_boots"] != 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second request neither ran nor was refused"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.unhang().await;
    let (first, second) = (first.response().await, second.await.expect("second"));
    let workers = c.stats().await["workers"].as_i64();
    s.stop().await;
    first.status == 201 && second.status == 201 && workers == Some(2)
}

/// A replay lacks `Location`.
async fn replay_without_location(flaw: Option<Flaw>) -> bool {
    let (_, again, _) = two_creates(flaw, None, "ubuntu", "ubuntu").await;
    again.replayed() && again.header("location").is_none()
}

/// A reboot with the create's key gets the create's 201 and never reboots.
async fn reboot_gets_create_replay(flaw: Option<Flaw>) -> bool {
    let (_db, s) = server(flaw, Options::default()).await;
    let created = s
        .client
        .create("alice", Some("k"), &worker_body("ubuntu"))
        .await;
    let id = created.id();
    let reboot = s.client.reboot("alice", &id, Some("k")).await;
    let reboots = s.client.stats().await["reboots"].as_i64();
    s.stop().await;
    reboot.status == 201 && reboot.body == created.body && reboots == Some(0)
}

macro_rules! flaw_cases {
    ($($name:ident: $flaw:expr => $observe:ident;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                assert!(!$observe(None).await, "the correct server must not show `{}`", stringify!($observe));
                assert!($observe(Some($flaw)).await, "--flaw {} must show `{}`", $flaw.name(), stringify!($observe));
            }
        )*
    };
}

flaw_cases! {
    no_idempotency_creates_a_second_worker: Flaw::NoIdempotency => second_worker_on_retry;
    no_fingerprint_replays_a_different_request: Flaw::NoFingerprint => mismatch_replayed;
    check_then_act_lets_a_race_create_many: Flaw::CheckThenAct => race_creates_many;
    no_in_flight_ttl_locks_the_key_out: Flaw::NoInFlightTtl => locked_out_after_ttl;
    cache_5xx_replays_the_failure: Flaw::Cache5xx => five_hundred_replayed;
    global_keyspace_leaks_across_principals: Flaw::GlobalKeyspace => response_leaks_across_principals;
    no_delete_replay_answers_404: Flaw::NoDeleteReplay => delete_retry_404;
    non_resumable_leaks_a_lease: Flaw::NonResumable => retry_leaks_lease;
    proceed_in_flight_runs_twice: Flaw::ProceedInFlight => in_flight_duplicate_runs;
    replay_drops_headers_loses_location: Flaw::ReplayDropsHeaders => replay_without_location;
    endpoint_unscoped_replays_create_for_reboot: Flaw::EndpointUnscoped => reboot_gets_create_replay;
}

/// A flaw breaks only its own rule: `check-then-act` races, but a retry after a failure still resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn check_then_act_still_resumes_a_retry() {
    assert!(!retry_leaks_lease(Some(Flaw::CheckThenAct)).await);
}
