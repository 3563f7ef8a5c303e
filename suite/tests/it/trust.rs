//! Verdicts and sentences a reader can trust, against hostile fake APIs and flawed reference
//! servers: a check fails only for the rule it owns, an unmet precondition is UNKNOWN, a message
//! names what really happened, evidence is in the order sent, and a run gives the same verdicts run
//! after run.

use idemspec::model::{RunReport, Verdict};
use idemspec::runner::{run, RunOptions, Target};
use idemspec_scenarios::scenario::Scenario;

use crate::support::hostile::{self, Behaviour};
use crate::support::reference::{outcome, run_reference, table};

/// Runs `only` (and `scenarios`) against the fake API.
async fn against(api: &hostile::Hostile, only: &[&str], scenarios: &[&str]) -> RunReport {
    let mut opts = RunOptions::new(Target::Profile(Box::new(api.profile())));
    opts.only = only.iter().map(|s| (*s).to_owned()).collect();
    opts.scenarios = scenarios
        .iter()
        .map(|text| Scenario::load("test.yaml", text).expect("scenario loads"))
        .collect();
    let report = crate::support::reference::run_options(opts).await;
    report
}

/// An API that answers one canned body to everything creates nothing, so nothing can leak across
/// principals: cross-tenant is UNKNOWN (once: FAIL, "got the other principal's response replayed").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_canned_body_is_no_cross_tenant_leak() {
    let api = hostile::start(Behaviour::Canned).await;
    let report = against(&api, &["cross-tenant"], &[]).await;
    let o = outcome(&report, "cross-tenant");
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(o.summary.contains("precondition not met"), "{}", o.summary);
}

/// Identical crash pages are no replay and no leak: an API whose every create answers the same 500
/// page at once (its handler never runs) is not said to have stored, replayed or leaked anything,
/// in any check's sentence or note (once: cross-tenant noted "got `first-principal`'s response
/// replayed ... `beta` got `alpha`'s response").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn identical_crash_pages_are_not_called_replays_or_leaks() {
    let api = hostile::start(Behaviour::CrashPage).await;
    // Every check that compares one answer with another.
    let comparing = [
        "cross-tenant",
        "endpoint-scope",
        "fingerprint-mismatch",
        "replay-fidelity",
        "replay-after-delete",
        "lost-response",
        "never-processed",
        "failed-not-cached",
        "failed-creates-nothing",
        "resumable-side-effects",
        "concurrent-same-key",
    ];
    let report = against(&api, &comparing, &[]).await;
    for o in &report.checks {
        let said = std::iter::once(&o.summary).chain(&o.notes);
        for line in said {
            for claim in [
                "replayed",
                "leak",
                "got `first-principal`'s response",
                "was stored",
            ] {
                assert!(
                    !line.contains(claim),
                    "{}: says `{claim}`: {line}\n{}",
                    o.id,
                    table(&report)
                );
            }
        }
    }
    let o = outcome(&report, "cross-tenant");
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
}

/// Without idemspec the key means nothing, so "the action was not answered with the create's
/// response" proves nothing about scope: endpoint-scope is UNKNOWN (once: PASS), and so is
/// cross-tenant.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scope_is_not_judged_where_the_key_does_nothing() {
    let api = hostile::start(Behaviour::NoIdempotency).await;
    let report = against(&api, &["endpoint-scope", "cross-tenant"], &[]).await;
    for id in ["endpoint-scope", "cross-tenant"] {
        let o = outcome(&report, id);
        assert_eq!(o.verdict, Verdict::Unknown, "{id}: {}", table(&report));
        assert!(o.summary.contains("precondition not met"), "{}", o.summary);
    }
}

/// Retries that get 409 with the original body are a replay with the wrong status, and the
/// message says so (once: "locked out").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_with_the_wrong_status_is_not_called_a_lockout() {
    const RETRIED: &str = r#"version: 1
id: retried
title: A completed key retried until it succeeds
level: MUST
reference: "test"
steps:
  - {name: first, op: create, key: K1, via: direct}
  - {name: retry, op: create, key: K1, via: direct, retry: {every: 100ms, within: 1s}}
assert:
  - succeeded_within: {step: retry, within: 1s}
"#;
    let api = hostile::start(Behaviour::ReplayAs409).await;
    let report = against(&api, &["retried"], &[RETRIED]).await;
    let o = outcome(&report, "retried");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary.contains("replayed with the wrong status") && !o.summary.contains("locked out,"),
        "{}",
        o.summary
    );
}

/// Storm clients refused for good with a 4xx got a definitive answer: the storm judges what was
/// answered (resources = accepted keys) instead of "never got a 2xx" (once: UNKNOWN).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn storm_clients_refused_for_good_are_judged() {
    let api = hostile::start(Behaviour::RefuseEveryThirdKey).await;
    let report = against(&api, &["retry-storm"], &[]).await;
    let o = outcome(&report, "retry-storm");
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
    assert!(o.summary.contains("refused for good (422"), "{}", o.summary);
    assert!(o.summary.contains("for 8 accepted keys"), "{}", o.summary);
}

/// Every key key-validation sends is unique to the run, so a record an earlier run left cannot
/// turn the next run's verdict (once: FAIL on run 1, a "mismatch" WARN on run 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn key_validation_gives_the_same_verdict_run_after_run() {
    let api = hostile::start(Behaviour::AcceptsAnyKey).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let report = against(&api, &["key-validation"], &[]).await;
        let o = outcome(&report, "key-validation").clone();
        assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
        assert!(
            o.summary.contains("a non-ASCII key was accepted"),
            "{}",
            o.summary
        );
        seen.push(o);
    }
    let keys: Vec<Option<String>> = seen
        .iter()
        .map(|o| {
            o.evidence
                .iter()
                .find(|e| e.request.step == "non-ascii-key")
                .and_then(|e| e.request.idempotency_key.clone())
        })
        .collect();
    assert!(keys[0].is_some() && keys[0] != keys[1], "{keys:?}");
}

/// Evidence is listed in the order it was sent, each exchange once, whatever order the assertions
/// name the steps in.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn evidence_is_in_send_order_and_each_exchange_once() {
    const REVERSED: &str = r#"version: 1
id: reversed
title: Assertions that name the steps in reverse
level: MUST
reference: "test"
steps:
  - {name: first, op: create, key: K1, via: direct}
  - {name: second, op: create, key: K1, via: direct}
  - {name: third, op: create, key: K1, via: direct}
assert:
  - same_response: {step: third, as: first}
  - same_response: {step: second, as: first}
  - same_response: {step: third, as: second}
"#;
    let api = hostile::start(Behaviour::NoIdempotency).await;
    let report = against(&api, &["reversed"], &[REVERSED]).await;
    let o = outcome(&report, "reversed");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    let steps: Vec<&str> = o.evidence.iter().map(|e| e.request.step.as_str()).collect();
    assert_eq!(steps, ["first", "second", "third"]);
}

/// When the API answered a principal with another principal's resource, or carried out a DELETE
/// whose response was lost, an empty list is the truth: no note blames the profile's `list`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_empty_list_is_not_blamed_on_the_profile_when_the_api_leaked_or_deleted() {
    for (flaw, id) in [
        ("global-keyspace", "cross-tenant"),
        ("no-idempotency", "delete-doom-loop"),
    ] {
        let report = run_reference(&[flaw], None, &[id]).await;
        let o = outcome(&report, id);
        assert_eq!(
            o.verdict,
            Verdict::Fail,
            "--flaw {flaw}: {}",
            table(&report)
        );
        let text = format!("{} {:?}", o.summary, o.notes);
        assert!(
            !text.contains("operations.list"),
            "--flaw {flaw}: {id} blames the profile: {text}"
        );
    }
}

/// A check has a deadline: one still running then is UNKNOWN naming it, and the run goes on; the
/// run has one too, after which the checks left are UNKNOWN.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_check_past_its_deadline_is_unknown_and_the_run_ends() {
    const SLOW: &str = r#"version: 1
id: slow
title: A check that waits longer than its deadline
level: MUST
reference: "test"
steps:
  - {name: first, op: create, key: K1, via: direct}
  - {wait: 30s}
assert:
  - created: {equals: 1}
"#;
    let api = hostile::start(Behaviour::NoIdempotency).await;
    let mut opts = RunOptions::new(Target::Profile(Box::new(api.profile())));
    opts.scenarios = vec![Scenario::load("slow.yaml", SLOW).expect("scenario loads")];
    opts.only = vec!["slow".into(), "never-processed".into()];
    opts.check_timeout = std::time::Duration::from_millis(500);
    opts.parallelism = 1;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let started = std::time::Instant::now();
    let report = run(opts, tx).await.expect("the run starts");
    drain.await.expect("drain ends");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let o = outcome(&report, "slow");
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        o.summary.contains("did not finish within 500ms"),
        "{}",
        o.summary
    );
    assert_eq!(o.evidence.len(), 1, "what it had sent is evidence");

    let mut opts = RunOptions::new(Target::Profile(Box::new(api.profile())));
    opts.only = vec!["never-processed".into()];
    opts.run_timeout = std::time::Duration::ZERO;
    let report = crate::support::reference::run_options(opts).await;
    let o = outcome(&report, "never-processed");
    assert_eq!(o.verdict, Verdict::Unknown);
    assert!(o.summary.contains("--run-timeout"), "{}", o.summary);
}

/// Under a contract whose keys are optional (the alt-api profile's `stripe-v1`), a keyless create
/// refused with a 400 is not "held": the API requires what the profile calls optional, and the
/// check says so at SHOULD, naming the field to declare (once: PASS, "optional here got 400").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keyless_refusal_under_optional_keys_names_key_required() {
    let api = hostile::start(Behaviour::RequiresKey).await;
    let report = against(&api, &["key-validation"], &[]).await;
    let o = outcome(&report, "key-validation");
    assert_eq!(o.verdict, Verdict::Warn, "{}", table(&report));
    assert!(
        o.summary.contains("without a key got 400") && o.summary.contains("key_required: true"),
        "{}",
        o.summary
    );
    let api = hostile::start(Behaviour::AcceptsAnyKey).await;
    let report = against(&api, &["key-validation"], &[]).await;
    let o = outcome(&report, "key-validation");
    assert!(
        !o.summary.contains("key_required"),
        "an API that takes keyless creates is not told to require keys: {}",
        o.summary
    );
}

/// A refused request was not handled: `not_replay_of` says a refusal got no replay, and only a
/// success "was handled as its own operation" (once: "`action` was handled as its own operation"
/// beside "`action` answered 422").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refusal_is_not_called_an_operation_of_its_own() {
    let hostile = hostile::start(Behaviour::RequiresKey).await;
    let report = against(
        &hostile,
        &[],
        &[r#"version: 1
id: refused-is-no-replay
title: a refused request is no replay, and was not handled
level: MUST
reference: "article"
steps:
  - {name: create, op: create, key: K1}
  - {name: keyless, op: create, key: none}
  - {name: other, op: create, key: K2}
assert:
  - status: {step: create, in: [2xx]}
    precondition: true
  - not_replay_of: {step: keyless, as: create}
  - not_replay_of: {step: other, as: create}
"#],
    )
    .await;
    let o = outcome(&report, "refused-is-no-replay");
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
    assert!(
        o.summary
            .contains("`keyless` did not get `create`'s response replayed (it answered 400"),
        "{}",
        o.summary
    );
    assert!(
        !o.summary
            .contains("`keyless` was handled as its own operation"),
        "{}",
        o.summary
    );
    assert!(
        o.summary
            .contains("`other` was handled as its own operation (201"),
        "{}",
        o.summary
    );
}

/// key-validation counts resources against the requests the contract lets create one: an empty
/// key the contract counts as no key, where keys are required, is a refusal owed, not a resource
/// owed (once: "4 resources exist …; only 2 valid request(s) should have created one", counting
/// the empty key the same sentence called refused). Requests it refuses that were accepted anyway
/// explain their resources, each reported once, not again as a count.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn key_validation_counts_against_what_the_contract_lets_create() {
    let api = hostile::start(Behaviour::AcceptsAnyKey).await;
    let env = api.env();
    let text = crate::support::alt_api::PROFILE.replace(
        "  mismatch_status: [422]\n",
        "  mismatch_status: [422]\n  key_required: true\n  empty_key_is_missing: true\n",
    );
    let profile = idemspec_scenarios::profile::TargetProfile::load("alt.yaml", &text, &|var| {
        env.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone())
    })
    .expect("profile loads");
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.only = vec!["key-validation".into()];
    let report = crate::support::reference::run_options(opts).await;
    let o = outcome(&report, "key-validation");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary
            .contains("an empty key (no key, by the contract) got 201"),
        "{}",
        o.summary
    );
    assert!(
        !o.summary.contains("resources exist after the key checks"),
        "each accepted refusal is reported once, not again as a count: {}",
        o.summary
    );
    let counted = o
        .notes
        .iter()
        .find(|n| n.contains("resource(s):"))
        .unwrap_or_else(|| panic!("the count is a note: {:?}", o.notes));
    assert!(
        counted.contains("1 from requests the contract accepts")
            && counted.contains("an empty key (no key, by the contract)"),
        "{counted}"
    );
}

/// A side-effect counter that grew by less than expected is a missing side effect, never called a
/// leak (once: "side effects leaked: nodes grew by 0 … expected each to grow by exactly 1"); and
/// where no request of the check got a 2xx, it is not "fewer than the check made" either (the
/// check made nothing): UNKNOWN, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_counter_that_did_not_move_is_not_called_a_leak() {
    let mut opts = RunOptions::new(Target::Reference(crate::support::reference::reference(
        &[],
        None,
    )));
    opts.builtin = false;
    opts.scenarios = vec![Scenario::load(
        "nothing.yaml",
        r#"version: 1
id: nothing-made
title: a create refused for its key, judged as if it made one of each side effect
level: MUST
reference: "article"
requires: [side_effects]
steps:
  - {name: refused, op: create, key: "raw:clé", via: direct}
assert:
  - side_effects: {equals: 1}
"#,
    )
    .expect("loads")];
    let report = crate::support::reference::run_options(opts).await;
    let o = outcome(&report, "nothing-made");
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        o.summary.contains("grew by 0")
            && o.summary
                .contains("no request of the check got a 2xx, so it made nothing to count")
            && !o.summary.contains("than the check made"),
        "{}",
        o.summary
    );
    assert!(!o.summary.contains("leaked"), "{}", o.summary);
}

/// A defect the exchanges show is a FAIL even when a precondition that only a PASS needs did not
/// hold: with keys shared by every principal and a completed key answered 409, the first
/// principal's own retry does not replay (so a PASS could prove nothing), but the second
/// principal got the first one's resource, and that is a leak whatever else held (once: UNKNOWN,
/// "precondition not met", with the leak out of sight).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leak_seen_is_a_fail_though_a_pass_only_precondition_failed() {
    let api = hostile::start(Behaviour::GlobalReplayAs409).await;
    let report = against(&api, &["cross-tenant"], &[]).await;
    let o = outcome(&report, "cross-tenant");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.evidence
            .iter()
            .any(|e| e.request.step == "second-principal"),
        "the exchange that shows the leak is in the evidence: {:?}",
        o.evidence
            .iter()
            .map(|e| &e.request.step)
            .collect::<Vec<_>>()
    );
    // The per-principal API that also answers 409 stays UNKNOWN: nothing leaked.
    let api = hostile::start(Behaviour::ReplayAs409).await;
    let report = against(&api, &["cross-tenant"], &[]).await;
    let o = outcome(&report, "cross-tenant");
    assert_ne!(o.verdict, Verdict::Fail, "{}", table(&report));
}

/// A response of another resource is no replay: its differing `Location` is part of the judged
/// difference, not a note that another check judges "a replay's fidelity" (once: notes about
/// other resources called replays).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_resource_is_not_called_a_replay_in_a_note() {
    // leasebroker ignoring keys: `again` creates another worker, with another `Location`.
    let report = run_reference(&["no-idempotency"], None, &["fingerprint-mismatch"]).await;
    let o = outcome(&report, "fingerprint-mismatch");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary.contains("`again`") || o.notes.iter().any(|n| n.contains("`again`")),
        "{}\n{:?}",
        o.summary,
        o.notes
    );
    assert!(
        !o.notes.iter().any(|n| n.contains("not judged here")),
        "{:?}",
        o.notes
    );
}

/// slow-handler-outlives-ttl's steps with the `slow` request held 600 ms by the proxy, so that the
/// retry reaches the target first and claims the key: `slow` is refused as in flight at once and
/// never runs. Nothing outlived the in-flight TTL, so the check judged nothing.
const SLOW_ARRIVES_LATE: &str = r#"version: 1
id: slow-arrives-late
title: The slow request reaches the target after its retry
level: MUST
reference: "a loaded machine's ordering, forced"
requires: [in_flight_ttl, slow]
faults:
  - {name: late, match: {header: {name: x-idemspec-step, equals: slow}}, fault: {delay_request: {duration: 600ms}}}
steps:
  - {name: slow, op: create, key: K1, body: slow, background: true, timeout: 10m}
  - {wait: {sent: slow, then: 100ms}}
  - {name: reclaim, op: create, key: K1, body: slow, via: direct, timeout: 10m, retry: {every: 250ms, within: in_flight_ttl + 10s, until: [released]}}
assert:
  - overlapped: {step: reclaim, with: slow}
    precondition: true
  - status: {step: slow, in: [2xx, in_flight]}
    precondition: true
  - created: {equals: 1}
"#;

/// A handler refused on arrival is not a handler that outlived the TTL: UNKNOWN, naming the order,
/// on the clean reference and on one whose retries start over (where a PASS would be false too).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_request_refused_on_arrival_is_not_a_handler_that_outlived_the_ttl() {
    for flaws in [&[][..], &["non-resumable"]] {
        let mut opts = RunOptions::new(Target::Reference(crate::support::reference::reference(
            flaws, None,
        )));
        opts.builtin = false;
        opts.scenarios = vec![Scenario::load("late.yaml", SLOW_ARRIVES_LATE).expect("loads")];
        let report = crate::support::reference::run_options(opts).await;
        let o = outcome(&report, "slow-arrives-late");
        assert_eq!(o.verdict, Verdict::Unknown, "{flaws:?}: {}", table(&report));
        assert!(
            o.summary.contains("`slow` was itself refused as in flight")
                && o.summary.contains("`reclaim` reached the target first"),
            "{flaws:?}: {}",
            o.summary
        );
    }
}
