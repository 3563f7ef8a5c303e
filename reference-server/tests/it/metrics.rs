//! `GET /metrics` on the admin listener: scraped over HTTP after known traffic and read with a
//! Prometheus text-format parser (`prometheus-parse`), counts checked exactly.

use std::time::Duration;

use prometheus_parse::{Scrape, Value};

use crate::concurrency::burst;
use crate::support::{worker_body, Db, HungCreate, Options, TestServer};

/// The in-flight TTL: long enough that a burst sent right after the hung create finds it in flight
/// on a loaded machine (≥ 10× the burst's time), short enough to wait out.
const TTL: Duration = Duration::from_secs(3);

/// The simultaneous retries of the hung create.
const BURST: usize = 5;

/// Scrapes `/metrics` from the admin listener and parses it.
pub(crate) async fn scrape(admin: &str) -> Scrape {
    let resp = reqwest::get(format!("{admin}/metrics"))
        .await
        .expect("GET /metrics");
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = resp.text().await.expect("metrics text");
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parse the exposition")
}

const OUTCOMES: &str = "leasebroker_idempotency_outcomes_total";
const CREATES: &str = "leasebroker_creates_total";

/// Scrapes until `pred` holds (up to 30 s).
async fn wait_for(admin: &str, what: &str, pred: impl Fn(&Scrape) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let scraped = scrape(admin).await;
        if pred(&scraped) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: {:#?}",
            scraped.samples
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of sample `metric` whose label `label` is `value`.
fn sample(scrape: &Scrape, metric: &str, label: &str, value: &str) -> f64 {
    sample_if_any(scrape, metric, label, value).unwrap_or_else(|| {
        panic!(
            "no {metric}{{{label}=\"{value}\"}} in {:#?}",
            scrape.samples
        )
    })
}

/// The value of sample `metric` whose label `label` is `value`, if there is one.
fn sample_if_any(scrape: &Scrape, metric: &str, label: &str, value: &str) -> Option<f64> {
    let found = scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && s.labels.get(label) == Some(value))?;
    match found.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
        ref other => panic!("{metric}: not a single value: {other:?}"),
    }
}

const STORE_CALLS: &str = "leasebroker_store_operation_seconds_count";

/// How many calls of store method `operation` were timed (0 when none was).
fn store_calls(scrape: &Scrape, operation: &str) -> f64 {
    sample_if_any(scrape, STORE_CALLS, "operation", operation).unwrap_or(0.0)
}

/// One claim, one replay, one mismatch, a hung create with a burst of retries at a barrier (in-flight
/// conflicts), one reclaim after the in-flight TTL, one failed create: every outcome counted exactly,
/// the create handler's runs counted, and the store's latency observed once per claim.
async fn metrics_count_every_outcome(db: &Db) {
    let server = TestServer::start(
        db,
        Options {
            boot_latency: Duration::ZERO,
            ..Options::in_flight_ttl(TTL)
        },
    )
    .await;
    let c = &server.client;
    let before = scrape(&c.admin).await;
    for outcome in [
        "claimed",
        "replayed",
        "in_flight_conflict",
        "mismatch",
        "reclaimed",
        "failed",
    ] {
        assert_eq!(
            sample(&before, OUTCOMES, "outcome", outcome),
            0.0,
            "{outcome}"
        );
    }

    let first = c.create("alice", Some("m-1"), &worker_body("ubuntu")).await;
    assert_eq!(first.status, 201);
    let replay = c.create("alice", Some("m-1"), &worker_body("ubuntu")).await;
    assert!(replay.replayed(), "{:?}", replay.status);
    let mismatch = c.create("alice", Some("m-1"), &worker_body("debian")).await;
    assert_eq!(mismatch.problem(), "key-reused-with-different-request");

    let mut hung = HungCreate::start(c, "m-2").await;
    for r in burst(c, BURST, "alice", "m-2", "ubuntu").await {
        assert_eq!(r.problem(), "request-in-progress");
    }
    // The original gives up and stays in flight (its boot still hangs); past the TTL a retry takes the
    // record over and resumes once boots go on.
    hung.abandon().await;
    tokio::time::sleep(TTL + Duration::from_millis(500)).await;
    let retry = tokio::spawn({
        let c = c.clone();
        async move { c.create("alice", Some("m-2"), &worker_body("ubuntu")).await }
    });
    wait_for(&c.admin, "the retry's reclaim", |s| {
        sample(s, OUTCOMES, "outcome", "reclaimed") == 1.0
    })
    .await;
    hung.unhang().await;
    let retry = retry.await.expect("retry task");
    assert_eq!(retry.status, 201);
    // The abandoned original goes on on the server once boots do, and ends as a create of its own.
    wait_for(&c.admin, "the abandoned original to end", |s| {
        sample(s, CREATES, "result", "created") == 3.0
    })
    .await;

    let failed = c
        .create("alice", Some("m-3"), &worker_body("fail-always"))
        .await;
    assert_eq!(failed.status, 502);

    let after = scrape(&c.admin).await;
    let outcome = |name| sample(&after, OUTCOMES, "outcome", name);
    assert_eq!(outcome("claimed"), 3.0, "m-1, m-2 and m-3");
    assert_eq!(outcome("replayed"), 1.0);
    assert_eq!(outcome("mismatch"), 1.0);
    assert_eq!(outcome("in_flight_conflict"), BURST as f64);
    assert_eq!(outcome("reclaimed"), 1.0);
    assert_eq!(outcome("failed"), 1.0);
    let creates = |result| sample(&after, CREATES, "result", result);
    // m-1, the hung m-2 (it finishes once boots go on), the reclaiming retry of m-2.
    assert_eq!(creates("created"), 3.0);
    assert_eq!(creates("error"), 1.0, "the failed boot");
    // m-1 three times, the hung m-2, its burst, its reclaiming retry, m-3: each claim is written by
    // the create's first transaction (`claim_and_reserve`), or alone when the create never reaches it.
    let claims = 3 + 1 + BURST + 1 + 1;
    assert_eq!(
        store_calls(&after, "claim") + store_calls(&after, "claim_and_reserve"),
        claims as f64
    );
    // On SQLite each transaction is committed alone or with others that waited for the connection
    // (group commit): the scripts committed include every claim's.
    let commits = unlabeled(&after, "leasebroker_store_scripts_per_commit_count");
    let scripts = unlabeled(&after, "leasebroker_store_scripts_per_commit_sum");
    if matches!(db, Db::Sqlite { .. }) {
        assert!(commits >= 1.0, "{commits} commits");
        assert!(
            scripts >= claims as f64,
            "{scripts} scripts, {claims} claims"
        );
    } else {
        assert_eq!((commits, scripts), (0.0, 0.0), "PostgreSQL runs no scripts");
    }
    server.stop().await;
}

/// The value of the one sample of unlabelled `metric`.
pub(crate) fn unlabeled(scrape: &Scrape, metric: &str) -> f64 {
    let found = scrape
        .samples
        .iter()
        .find(|s| s.metric == metric)
        .unwrap_or_else(|| panic!("no {metric} in {:#?}", scrape.samples));
    match found.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
        ref other => panic!("{metric}: not a single value: {other:?}"),
    }
}

/// The store calls one create makes, each one statement or one transaction.
fn calls_per_create(before: &Scrape, after: &Scrape) -> Vec<(&'static str, f64)> {
    [
        "claim",
        "claim_and_reserve",
        "reserve",
        "allocate_node",
        "ensure_lease",
        "insert_pending_boot",
        "hypervisor_record_instance",
        "complete_boot",
        "insert_worker",
        "finish",
        "finish_and_complete",
        "complete",
    ]
    .into_iter()
    .map(|op| (op, store_calls(after, op) - store_calls(before, op)))
    .filter(|(_, n)| *n != 0.0)
    .collect()
}

/// A first attempt is two transactions around the hypervisor call, with or without a key: the claim
/// rides in the first (with the node, the lease and the pending boot), the completion in the last
/// (with the boot and the worker); no statement of its own for either.
async fn a_create_is_two_transactions(db: &Db) {
    let server = TestServer::start(
        db,
        Options {
            require_key_on_post: false,
            ..Options::default()
        },
    )
    .await;
    let c = &server.client;
    let before = scrape(&c.admin).await;
    let keyed = c.create("alice", Some("t-1"), &worker_body("ubuntu")).await;
    assert_eq!(keyed.status, 201);
    let after_keyed = scrape(&c.admin).await;
    assert_eq!(
        calls_per_create(&before, &after_keyed),
        [
            ("claim_and_reserve", 1.0),
            ("hypervisor_record_instance", 1.0),
            ("finish_and_complete", 1.0),
        ]
    );
    let unkeyed = c.create("alice", None, &worker_body("ubuntu")).await;
    assert_eq!(unkeyed.status, 201);
    let after_unkeyed = scrape(&c.admin).await;
    assert_eq!(
        calls_per_create(&after_keyed, &after_unkeyed),
        [
            ("reserve", 1.0),
            ("hypervisor_record_instance", 1.0),
            ("finish", 1.0),
        ]
    );
    // The completion written with the worker replays.
    let replay = c.create("alice", Some("t-1"), &worker_body("ubuntu")).await;
    assert!(replay.replayed());
    assert_eq!(replay.body, keyed.body);
    crate::support::assert_totals(
        &c.stats().await,
        &[
            ("workers", 2),
            ("nodes_allocated", 2),
            ("leases", 2),
            ("boots", 2),
            ("pending_boots", 0),
        ],
    );
    server.stop().await;
}

crate::both_stores!(metrics_count_every_outcome, a_create_is_two_transactions);
