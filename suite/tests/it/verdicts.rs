//! Verdicts the runner must never get wrong, whatever the target: nothing observed is UNKNOWN (never
//! PASS), a missing capability is SKIP with its reason, an unreachable target is an error, user
//! scenarios use the same vocabulary as the catalogue, and progress events frame every check.

use idemspec::engine::SelectError;
use idemspec::model::{RunEvent, Verdict};
use idemspec::reference::ReferenceServer;
use idemspec::runner::{run, RunError, RunOptions, Target, Unreachable};
use idemspec_scenarios::profile::TargetProfile;
use idemspec_scenarios::scenario::Scenario;

use crate::support::reference::{outcome, reference, table};

/// A user scenario whose every response is dropped by the proxy.
const ALL_DROPPED: &str = r#"version: 1
id: everything-dropped
title: Every response is lost
level: MUST
reference: "test"
faults:
  - {name: drop-all, fault: {drop_response: {}}}
steps:
  - {name: first, op: create, key: K1}
  - {name: second, op: create, key: K1}
assert:
  - status: {step: second, in: [2xx]}
  - same_response: {step: second, as: first}
"#;

async fn run_collecting(
    opts: RunOptions,
) -> (Result<idemspec::model::RunReport, RunError>, Vec<RunEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let collect = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        events
    });
    let result = run(opts, tx).await;
    if let Ok(report) = &result {
        crate::support::assert_claims_hold(report);
    }
    (result, collect.await.expect("collector ends"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_responses_and_failed_hooks_are_unknown_and_skips_name_the_missing_capability() {
    let server = ReferenceServer::start(&reference(&[], None))
        .await
        .expect("reference starts");
    let mut profile: TargetProfile = server.profile().expect("bundled profile loads");
    profile.operations.action = None;
    profile.hooks.crash = None;
    profile.operations.create.variants.hangs = None;
    // A hook that cannot do its job leaves its check unable to decide.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_url = format!("http://{}/fail-next", closed.local_addr().expect("addr"));
    drop(closed);
    if let Some(hook) = profile.hooks.fail_next.as_mut() {
        hook.request.as_mut().expect("an HTTP hook").url.value = closed_url;
    }
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.scenarios = vec![Scenario::load("dropped.yaml", ALL_DROPPED).expect("scenario loads")];
    opts.only = vec![
        "everything-dropped".into(),
        "endpoint-scope".into(),
        "stuck-in-flight".into(),
        "replay-fidelity".into(),
        "failed-not-cached".into(),
    ];
    let (result, events) = run_collecting(opts).await;
    server.shutdown().await;
    let report = result.expect("the run starts");
    let dropped = outcome(&report, "everything-dropped");
    assert_eq!(dropped.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        dropped.summary.contains("got no response"),
        "{}",
        dropped.summary
    );
    assert!(dropped
        .evidence
        .iter()
        .all(|e| e.response.is_none() && e.proxy.is_some()));
    let scope = outcome(&report, "endpoint-scope");
    assert_eq!(scope.verdict, Verdict::Skip);
    assert!(
        scope.summary.contains("operations.action"),
        "{}",
        scope.summary
    );
    let stuck = outcome(&report, "stuck-in-flight");
    assert_eq!(stuck.verdict, Verdict::Skip);
    assert!(stuck.summary.contains("hooks.crash"), "{}", stuck.summary);
    assert!(
        stuck.summary.contains("`hangs` request variant"),
        "{}",
        stuck.summary
    );
    assert_eq!(outcome(&report, "replay-fidelity").verdict, Verdict::Pass);
    let failed = outcome(&report, "failed-not-cached");
    assert_eq!(failed.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        failed.summary.contains("hook `fail_next` failed"),
        "{}",
        failed.summary
    );
    let started = events
        .iter()
        .filter(|e| matches!(e, RunEvent::CheckStarted { .. }))
        .count();
    let finished = events
        .iter()
        .filter(|e| matches!(e, RunEvent::CheckFinished(_)))
        .count();
    assert_eq!((started, finished), (5, 5));
    assert!(matches!(
        events.first(),
        Some(RunEvent::RunStarted { total: 5, .. })
    ));
    assert!(matches!(events.last(), Some(RunEvent::RunFinished(_))));
}

#[tokio::test]
async fn an_unreachable_target_is_an_error_not_a_verdict() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let text = idemspec_scenarios::catalogue::LEASEBROKER_PROFILE;
    let url = format!("http://127.0.0.1:{port}");
    let profile = TargetProfile::load("lb.yaml", text, &|v| {
        (v == "LEASEBROKER_URL").then(|| url.clone())
    })
    .expect("profile loads");
    let (result, _) = run_collecting(RunOptions::new(Target::Profile(Box::new(profile)))).await;
    match result {
        Err(RunError::TargetUnreachable { url: u, .. }) => assert_eq!(u, url),
        other => panic!("expected TargetUnreachable, got {other:?}"),
    }
}

#[tokio::test]
async fn unknown_only_id_is_a_usage_error() {
    let profile = TargetProfile::load(
        "lb.yaml",
        idemspec_scenarios::catalogue::LEASEBROKER_PROFILE,
        &|_| None,
    )
    .expect("profile loads");
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.only = vec!["no-such-check".into()];
    let (result, events) = run_collecting(opts).await;
    assert!(
        matches!(result, Err(RunError::Select(SelectError::Unknown(id))) if id == "no-such-check")
    );
    assert!(events.is_empty());
}

#[tokio::test]
async fn a_reference_server_that_cannot_start_says_why() {
    let err = match ReferenceServer::start(&reference(&["no-such-flaw"], None)).await {
        Ok(_) => panic!("leasebroker accepted an unknown flaw"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("exited before listening"), "{err}");
    assert!(
        err.contains("no-such-flaw"),
        "the child's own error is shown: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_stop_the_run_before_any_verdict() {
    let server = ReferenceServer::start(&reference(&[], None))
        .await
        .expect("reference starts");
    let mut profile = server.profile().expect("bundled profile loads");
    profile.principals.value[1]
        .headers
        .insert("Authorization".into(), "Bearer not-a-token".into());
    let (result, events) =
        run_collecting(RunOptions::new(Target::Profile(Box::new(profile)))).await;
    server.shutdown().await;
    match result {
        Err(RunError::TargetUnreachable {
            reason: Unreachable::Answered {
                principal, answer, ..
            },
            ..
        }) => {
            assert_eq!(principal, "bob");
            assert!(answer.starts_with("401"), "{answer}");
        }
        other => panic!("expected the preflight to stop the run, got {other:?}"),
    }
    assert!(events.is_empty(), "no check started");
}

/// Serves `machines` as `/api/machines` of a stub API on 127.0.0.1, and returns run options with
/// the alt-api profile aimed at it, and the server's task (abort it when done).
async fn against_stub(
    machines: axum::routing::MethodRouter,
) -> (RunOptions, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new().route("/api/machines", machines);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let profile = TargetProfile::load("alt-api.yaml", crate::support::alt_api::PROFILE, &|_| {
        Some(url.clone())
    })
    .expect("profile loads");
    (RunOptions::new(Target::Profile(Box::new(profile))), server)
}

/// A target whose list works but whose every write answers an HTML 500: the checks' setup never
/// happens, so they cannot judge idempotency. Their verdict is UNKNOWN — never a FAIL built on a
/// failed setup (cross-tenant once accused such a server of leaking a response across principals,
/// because both principals got the same 500 page).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_setup_is_unknown_not_fail() {
    /// Checks whose setup (a first create, or a fault that must land after the work) is a
    /// precondition.
    const SETUP_CHECKS: [&str; 4] = [
        "lost-response",
        "fingerprint-mismatch",
        "cross-tenant",
        "replay-fidelity",
    ];
    use axum::http::{header, StatusCode};
    use axum::routing::get;
    let (mut opts, server) = against_stub(
        get(|| async { axum::Json(serde_json::json!({"data": []})) }).post(|| async {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/html")],
                "<html><body>Internal Server Error</body></html>",
            )
        }),
    )
    .await;
    opts.only = SETUP_CHECKS.map(String::from).to_vec();
    let (result, _) = run_collecting(opts).await;
    server.abort();
    let report = result.expect("the run starts: the list answers");
    for id in SETUP_CHECKS {
        let o = outcome(&report, id);
        assert_eq!(o.verdict, Verdict::Unknown, "{id}: {}", table(&report));
        assert!(
            o.summary.contains("not met") || o.summary.contains("did not happen"),
            "{id} says why: {}",
            o.summary
        );
    }
}

/// A profile whose `list` cannot see what the API creates (here an `items` JSONPath that matches
/// no item, which the preflight cannot tell from an empty list) makes every count zero. Against a correct API that is no evidence of anything: the
/// checks that count are UNKNOWN and name `operations.list`, never FAIL ("0 resources, expected 1").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_list_that_sees_nothing_is_unknown_not_fail() {
    let api = crate::support::alt_api::start().await;
    let text = crate::support::alt_api::PROFILE
        .replace("items: \"$.data[*]\"", "items: \"$.data[?@.nothing]\"");
    assert_ne!(
        text,
        crate::support::alt_api::PROFILE,
        "the fixture still lists `$.data[*]`"
    );
    let env = api.env();
    let profile = TargetProfile::load("alt-api.yaml", &text, &|var| {
        env.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone())
    })
    .expect("profile loads");
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    let counting = [
        "lost-response",
        "concurrent-same-key",
        "key-validation",
        "retry-storm",
        // Counts after a delete: the list is probed before it (an empty list after proves nothing).
        "replay-after-delete",
    ];
    opts.only = counting.map(String::from).to_vec();
    let (result, _) = run_collecting(opts).await;
    let report = result.expect("the run starts");
    for id in counting {
        let o = outcome(&report, id);
        assert_eq!(o.verdict, Verdict::Unknown, "{id}: {}", table(&report));
        assert!(
            o.summary.contains("operations.list"),
            "{id} says why: {}",
            o.summary
        );
    }
}

/// A create the client gave up on may still be running: "0 resources, expected 1" right after it
/// is no broken rule, so the count is UNKNOWN (too many would still be a FAIL).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn too_few_resources_after_an_unanswered_request_is_unknown() {
    use axum::routing::get;
    const SLOW: &str = r#"version: 1
id: slow-create
title: A create the client gave up on
level: MUST
reference: "test"
steps:
  - {name: slow, op: create, key: K1, timeout: 300ms, via: direct}
assert:
  - created: {equals: 1}
"#;
    let (mut opts, server) = against_stub(
        get(|| async { axum::Json(serde_json::json!({"data": []})) }).post(|| async {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            axum::http::StatusCode::CREATED
        }),
    )
    .await;
    opts.scenarios = vec![Scenario::load("slow.yaml", SLOW).expect("scenario loads")];
    opts.only = vec!["slow-create".into()];
    let (result, _) = run_collecting(opts).await;
    server.abort();
    let report = result.expect("the run starts");
    let o = outcome(&report, "slow-create");
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(o.summary.contains("got no response"), "{}", o.summary);
}
