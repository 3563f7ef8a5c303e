//! Answers read once, by the contract (issue 41): a replay told from a refusal of the same status
//! by what it carries of the original answer (its body, or its id where the contract says), judged
//! alike by every check over the alt API's real sockets; each correct mode passes, each planted
//! flaw FAILs the check that owns it. A same-key request that waits for the one in flight, as
//! declared (`in_flight_wait`), is judged by its wait.

use std::time::Duration;

use axum::http::StatusCode;
use idemspec::model::{RunReport, Verdict};

use crate::reach::{assert_passes, judged_once, load, profile, run_profile, Shape};
use crate::support::alt_api::{self, ConflictReplay, Flaw, Options};
use crate::support::reference::outcome;

/// The alt profile's contract, with `lines` in place of its `mismatch_status: [422]`.
fn contract(lines: &'static str) -> impl Fn(&str) -> String {
    move |t: &str| {
        assert!(
            t.contains("  mismatch_status: [422]\n"),
            "the fixture's contract"
        );
        t.replace("  mismatch_status: [422]\n", lines)
    }
}

/// A replay answered `409` with the original body and no marker, a mismatch `409` too: declared
/// by its body (`replay_body: original`).
const BY_BODY: &str = "  mismatch_status: [409]\n  replayed_header: \"\"\n  replay_status: 409\n  \
                       replay_body: original\n";

/// The API of [`BY_BODY`], with `flaw`.
async fn conflict_replays(style: ConflictReplay, flaw: Option<Flaw>) -> alt_api::AltApi {
    alt_api::start_with(Options {
        conflict_replays: Some(style),
        mismatch_status: Some(StatusCode::CONFLICT),
        flaw,
        ..Options::default()
    })
    .await
}

/// A replay under the mismatch's own status, told apart by the original body it carries: every
/// check reads it as the replay and the other `409`s as refusals, so the catalogue passes (cross-
/// tenant and endpoint-scope keep their precondition, fingerprint-mismatch reads the mismatch,
/// the burst and the storm take the replays as successes). Keys shared across principals make B's
/// request a replay of A's, which cross-tenant FAILs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_under_the_mismatch_status_is_told_by_the_original_body() {
    let report = passes_and_catches_a_leak(ConflictReplay::OriginalBody, BY_BODY).await;
    let lost = outcome(&report, "lost-response");
    assert!(
        lost.summary
            .contains("`retry` answered 409 (a replay, as declared)"),
        "{}",
        lost.summary
    );
    // A first answer that carried its header is said to be that answer, not "a 2xx (or a replay
    // under 409 …)", which it was not.
    let shape = outcome(&report, "create-response-shape");
    assert!(
        shape.summary.contains("carried `Location` on 201") && !shape.summary.contains("replay"),
        "{}",
        shape.summary
    );
}

/// Runs the whole catalogue against a `kind` API declared with `declared`, asserts it passes, and
/// that keys shared across principals FAIL cross-tenant (B's request a replay of A's); gives the
/// clean run's report.
async fn passes_and_catches_a_leak(kind: ConflictReplay, declared: &'static str) -> RunReport {
    let api = conflict_replays(kind, None).await;
    let report = run_profile(profile(&api, contract(declared)), &[]).await;
    assert_passes(&report, 14);
    let leaky = conflict_replays(kind, Some(Flaw::KeysNotPerPrincipal)).await;
    let leak = run_profile(profile(&leaky, contract(declared)), &["cross-tenant"]).await;
    judged_once(&leak, Verdict::Fail, "second-principal");
    report
}

/// Declared with nothing to tell a `409` replay from the `409` mismatch but the preset's marker,
/// which this API never sends, the replays are refusals: cross-tenant loses its precondition (A's
/// own retry is no replay), and `validate` warns, naming what to declare. With no marker either,
/// the profile is refused at load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_status_told_only_by_the_presets_marker_is_warned_of() {
    let api = conflict_replays(ConflictReplay::OriginalBody, None).await;
    let marker_only = contract("  mismatch_status: [409]\n  replay_status: 409\n");
    let report = run_profile(profile(&api, &marker_only), &["cross-tenant"]).await;
    judged_once(&report, Verdict::Unknown, "first-again");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("p.yaml"), marker_only(alt_api::PROFILE)).expect("write");
    let out = crate::alt_api_cli::idemspec(dir.path(), &api, &["validate", "p.yaml"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "warning: p.yaml: replay_status 409 is also the contract's `mismatch_status`"
        ) && stderr.contains("`replay_body: original`"),
        "{stderr}"
    );
    std::fs::write(
        dir.path().join("p.yaml"),
        contract(BY_BODY)(alt_api::PROFILE),
    )
    .expect("write");
    let out = crate::alt_api_cli::idemspec(dir.path(), &api, &["validate", "p.yaml"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("warning"),
        "{stderr}"
    );
    let text = contract(
        "  mismatch_status: [409]\n  replayed_header: \"\"\n  replay_status: 409\n",
    )(alt_api::PROFILE);
    let err = load(&api, &text).expect_err("an ambiguous replay status is refused");
    assert!(err.to_string().contains("`replay_body: original`"), "{err}");
}

/// The alt profile under a contract that re-runs a failure (`replays_5xx: false`).
fn reruns_failures(t: &str) -> String {
    assert!(
        t.contains("  in_flight_ttl: 2s\n"),
        "the fixture's contract"
    );
    t.replace(
        "  in_flight_ttl: 2s\n",
        "  in_flight_ttl: 2s\n  replays_5xx: false\n",
    )
}

/// A retry of a `500` answered with a replay of a success (its marker says so) means the work was
/// done and stored behind the failure the client was told: failed-not-cached FAILs saying so,
/// where a retry that really ran again and succeeded PASSes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_answering_the_retry_of_a_failure_is_work_done_behind_it() {
    let options = |flaw| Options {
        stores_only: Some(&[200, 201, 202, 204]),
        flaw,
        ..Options::default()
    };
    let api = alt_api::start_with(options(None)).await;
    let report = run_profile(profile(&api, reruns_failures), &["failed-not-cached"]).await;
    judged_once(&report, Verdict::Pass, "the retry ran again and succeeded");
    let flawed = alt_api::start_with(options(Some(Flaw::SucceedsBehindFailure))).await;
    let report = run_profile(profile(&flawed, reruns_failures), &["failed-not-cached"]).await;
    judged_once(
        &report,
        Verdict::Fail,
        "the work was done and stored behind the failure",
    );
    assert!(
        report.checks[0]
            .summary
            .contains("told by its replay marker header"),
        "{}",
        report.checks[0].summary
    );
}

/// A replay answered `409 {"error": {"code": "MachineAlreadyExists", "resource_id": …}}`, a
/// mismatch `409` too: declared by where the replay names the original's id.
const BY_ID: &str = "  mismatch_status: [409]\n  replayed_header: \"\"\n  replay_status: 409\n  \
                     replay_id_at: $.error.resource_id\n";

/// An "already exists" `409` naming the original's machine is its replay where the contract says
/// where it names it: every check reads it so (a burst's replays name the one resource, the
/// mismatch's `again` is the original's answer, its body the API's own as declared), and the
/// catalogue passes; keys shared across principals make B's request name A's machine, which
/// cross-tenant FAILs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_already_exists_naming_the_original_is_its_replay() {
    let report = passes_and_catches_a_leak(ConflictReplay::AlreadyExists, BY_ID).await;
    let burst = outcome(&report, "concurrent-same-key");
    assert!(
        burst.summary.contains("succeeded with one resource"),
        "{}",
        burst.summary
    );
}

/// A key that ends with its resource is judged by the declared retention: under `retention:
/// while_resource_exists` a fresh create after the delete PASSes replay-after-delete and a replay
/// of the deleted resource's answer FAILs; under the preset's `24h` the fresh create FAILs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_that_ends_with_its_resource_is_judged_by_the_declared_retention() {
    let dies = contract("  mismatch_status: [422]\n  retention: while_resource_exists\n");
    let forgetting = alt_api::start_with(Options {
        keys_die_with_resource: true,
        ..Options::default()
    })
    .await;
    let report = run_profile(profile(&forgetting, &dies), &["replay-after-delete"]).await;
    judged_once(&report, Verdict::Pass, "");
    let report = run_profile(
        profile(&forgetting, str::to_owned),
        &["replay-after-delete"],
    )
    .await;
    judged_once(&report, Verdict::Fail, "");
    let keeping = alt_api::start().await;
    let report = run_profile(profile(&keeping, &dies), &["replay-after-delete"]).await;
    judged_once(&report, Verdict::Fail, "replay");
}

/// The same failure again without a marker, where the contract re-runs a failure, is told by what
/// was measured: a retry answered far faster than the failed attempt's work was replayed (FAIL),
/// one that took as long ran again and failed again (UNKNOWN: nothing was stored, but no re-run
/// completed), and where the failure came before any work nothing tells them apart (UNKNOWN with
/// both readings).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_failure_again_is_told_by_what_was_measured() {
    let article = |t: &str| {
        t.replace(
            "  preset: stripe-v1\n",
            "  preset: article\n  key_required: false\n",
        )
    };
    let judged = |options: Options| async move {
        let api = alt_api::start_with(options).await;
        run_profile(profile(&api, article), &["failed-not-cached"]).await
    };
    let unmarked = judged(Options {
        replayed_header: Some("X-Cached"),
        ..Options::default()
    })
    .await;
    judged_once(
        &unmarked,
        Verdict::Fail,
        "answered too fast to have run the request again",
    );
    let not_stored = || Options {
        stores_only: Some(&[200, 201, 202, 204]),
        fail_next_times: Some(2),
        ..Options::default()
    };
    let twice = judged(not_stored()).await;
    judged_once(&twice, Verdict::Unknown, "so it ran again and failed again");
    let before_work = judged(Options {
        fails_before_work: true,
        ..not_stored()
    })
    .await;
    judged_once(
        &before_work,
        Verdict::Unknown,
        "nothing measured tells the two readings apart",
    );
}

/// The alt profile declaring that a same-key request in flight waits up to 1 s, then gets `408`.
fn waits_1s(t: &str) -> String {
    assert!(
        t.contains("  in_flight_ttl: 2s\n"),
        "the fixture's contract"
    );
    t.replace(
        "  in_flight_ttl: 2s\n",
        "  in_flight_ttl: 2s\n  in_flight_wait: {up_to: 1s, then: [408]}\n",
    )
}

/// An alt API whose same-key request waits up to 1 s for the one in flight, with `flaw`, its
/// creates taking `create_latency`.
async fn waiting(create_latency: Option<Duration>, flaw: Option<Flaw>) -> alt_api::AltApi {
    alt_api::start_with(Options {
        waits_up_to: Some(Duration::from_secs(1)),
        create_latency,
        flaw,
        ..Options::default()
    })
    .await
}

/// A layer whose same-key request waits for the one in flight (up to 1 s, then `408`), declared
/// so, passes the catalogue, the checks that meet a key in flight among them: creates that outlast the wait (1.5 s) give the burst's
/// duplicates and the client's early retry the `408`, within the wait; after a crash a retry
/// waits and is answered `408` until the record is reclaimed. Undeclared, the burst's `408`s are
/// no answer the contract names.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_duplicate_that_waits_as_declared_passes() {
    let api = waiting(Some(Duration::from_millis(1500)), None).await;
    let report = run_profile(profile(&api, waits_1s), &[]).await;
    assert_passes(&report, 16);
    let burst = outcome(&report, "concurrent-same-key");
    assert!(
        burst
            .summary
            .contains("9 got in-flight conflicts or a wait that ran out")
            && burst
                .summary
                .contains("no request of `burst-1` that found its key in flight was held past"),
        "{}",
        burst.summary
    );
    let early = outcome(&report, "client-timeout-in-flight");
    assert!(
        early.summary.contains("`retry` answered 408"),
        "{}",
        early.summary
    );
    let stuck = outcome(&report, "stuck-in-flight");
    assert!(
        stuck
            .summary
            .contains("no request of `retry` that found its key in flight"),
        "{}",
        stuck.summary
    );
    let undeclared = run_profile(profile(&api, str::to_owned), &["concurrent-same-key"]).await;
    judged_once(&undeclared, Verdict::Fail, "408");
}

/// A duplicate that waited and then runs the request itself makes a second resource:
/// concurrent-same-key and client-timeout-in-flight FAIL. A layer that waits for the request in flight however long it runs
/// (past its declared 1 s) holds the duplicates of a 2.5 s create until it ends, and the retries
/// of a crashed request (and their twins) for good: concurrent-same-key and stuck-in-flight FAIL,
/// each naming the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_duplicate_that_runs_again_or_waits_too_long_fails() {
    let again = waiting(None, Some(Flaw::WaiterRunsAgain)).await;
    let report = run_profile(profile(&again, waits_1s), &["concurrent-same-key"]).await;
    judged_once(&report, Verdict::Fail, "different resources");
    let report = run_profile(profile(&again, waits_1s), &["client-timeout-in-flight"]).await;
    judged_once(&report, Verdict::Fail, "2 resources with marker");
    // Each on an API of its own: a crash armed by stuck-in-flight lands after the create's
    // latency, which must be shorter than the crashed request's timeout.
    let long_creates = waiting(
        Some(Duration::from_millis(2500)),
        Some(Flaw::WaitsUnbounded),
    )
    .await;
    let report = run_profile(profile(&long_creates, waits_1s), &["concurrent-same-key"]).await;
    judged_once(&report, Verdict::Fail, "held past the declared wait");
    let unbounded = waiting(None, Some(Flaw::WaitsUnbounded)).await;
    let report = run_profile(profile(&unbounded, waits_1s), &["stuck-in-flight"]).await;
    judged_once(&report, Verdict::Fail, "held past the declared wait");
}

/// The checks that ask of a refusal what some contracts promise and others do not: an error body
/// of the contract's `error_shape`, `Retry-After` while in flight (`in_flight_retry_after`).
const SHAPE_CHECKS: [&str; 3] = [
    "key-validation",
    "concurrent-same-key",
    "client-timeout-in-flight",
];

/// Each vendor-shaped API answers its refusals in its vendor's error object, with no
/// `Retry-After` while in flight, as its preset promises: under its worked profile key-validation,
/// concurrent-same-key and client-timeout-in-flight PASS (no SHOULD of the article's problem body
/// or `Retry-After` is asked), the bursts saying `Retry-After` is not looked for and whose preset
/// says so. With an invalid key refused by a bare `400` (no body at all), key-validation WARNs,
/// naming the shape the preset promises and its source.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vendor_refusals_are_judged_by_the_shape_their_contract_promises() {
    for (shape, preset, promised) in [
        (Shape::Stripe, "stripe-v1", "a member at $.error.type"),
        (Shape::AwsJson, "aws-client-token", "a member at $.__type"),
        (
            Shape::Google,
            "gcp-request-id",
            "a member at $.error.status or $.error.code",
        ),
    ] {
        let worked = |_: &str| shape.profile().to_owned();
        let api = alt_api::start_with(shape.options()).await;
        let report = run_profile(profile(&api, worked), &SHAPE_CHECKS).await;
        assert_passes(&report, SHAPE_CHECKS.len());
        let burst = outcome(&report, "concurrent-same-key");
        let unasked = format!(
            "`Retry-After` on an in-flight refusal is not looked for: the {preset} contract does \
             not promise it"
        );
        assert!(
            burst.notes.iter().any(|n| n.contains(&unasked)),
            "{preset}: {:?}",
            burst.notes
        );
        let bare = alt_api::start_with(Options {
            flaw: Some(Flaw::BareRefusals),
            ..shape.options()
        })
        .await;
        let report = run_profile(profile(&bare, worked), &["key-validation"]).await;
        judged_once(
            &report,
            Verdict::Warn,
            &format!("without an error body with {promised}, which the {preset} contract promises"),
        );
    }
}

/// A profile that declares its API's own error shape over the preset is judged by it, and named
/// as who promises it: EC2's Query-shaped API answers XML errors naming the code under the root
/// element, which its worked profile declares (`error_shape: {at: $.Response.__type}`), and
/// key-validation PASSes; refused bare, it WARNs naming the profile's field. The same API under
/// the article's problem shape WARNs for the problem body the article promises.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_declared_error_shape_is_judged_and_named_as_the_profiles() {
    let worked = |_: &str| Shape::AwsQuery.profile().to_owned();
    let api = alt_api::start_with(Shape::AwsQuery.options()).await;
    let report = run_profile(profile(&api, worked), &["key-validation"]).await;
    judged_once(&report, Verdict::Pass, "");
    let bare = alt_api::start_with(Options {
        flaw: Some(Flaw::BareRefusals),
        ..Shape::AwsQuery.options()
    })
    .await;
    let report = run_profile(profile(&bare, worked), &["key-validation"]).await;
    judged_once(
        &report,
        Verdict::Warn,
        "without an error body with a member at $.Response.__type, which the profile's \
         `error_shape: {at: $.Response.__type}` (over the aws-client-token preset) promises",
    );
    let problems = |t: &str| {
        worked(t).replace(
            "  error_shape: {at: $.Response.__type}\n",
            "  error_shape: problem\n",
        )
    };
    let report = run_profile(profile(&api, problems), &["key-validation"]).await;
    judged_once(&report, Verdict::Warn, "without an RFC 9457 problem body");
}

/// A reused `requestId` answered with the original operation wherever it is sent, as Google
/// Cloud documents (`gcp-request-id`: keys not per endpoint, `mismatch_answer: original`): the
/// create's id on the reboot gets the create's operation, which endpoint-scope PASSes as the
/// documented answer; a profile that says keys are per endpoint WARNs it as the create replayed
/// to another operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_id_answered_with_the_original_operation_anywhere_is_as_documented() {
    let api = alt_api::start_with(Options {
        keys_across_endpoints: true,
        ..Shape::Google.options()
    })
    .await;
    let worked = |_: &str| Shape::Google.profile().to_owned();
    let report = run_profile(profile(&api, worked), &["endpoint-scope"]).await;
    judged_once(&report, Verdict::Pass, "`action` got `create`'s answer");
    let per_endpoint = |t: &str| {
        worked(t).replace(
            "  covers: [create, delete, action]\n",
            "  covers: [create, delete, action]\n  per_endpoint: true\n",
        )
    };
    let report = run_profile(profile(&api, per_endpoint), &["endpoint-scope"]).await;
    judged_once(
        &report,
        Verdict::Warn,
        "the key was not scoped to the operation",
    );
}
