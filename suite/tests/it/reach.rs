//! Reaching real APIs: keys of the form the API accepts, failures by what is sent, a process
//! nemesis for any target, the conventions libraries document, lockouts measured without a
//! declared TTL.

use idemspec::model::{RunReport, Verdict};
use idemspec::runner::{run, RunOptions, Target};
use idemspec_scenarios::profile::TargetProfile;

use crate::support::alt_api;
use crate::support::reference::table;

/// Runs the catalogue (or `only`) against `profile`.
pub(crate) async fn run_profile(profile: TargetProfile, only: &[&str]) -> RunReport {
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.only = only.iter().map(|s| (*s).to_owned()).collect();
    run_with(opts).await
}

/// Every check of `report` PASSes or is SKIP (a capability the target lacks), and at least
/// `at_least` PASS.
pub(crate) fn assert_passes(report: &RunReport, at_least: usize) {
    let not_passed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::Skip))
        .map(|c| c.id.as_str())
        .collect();
    assert!(not_passed.is_empty(), "{}", table(report));
    let passed = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Pass)
        .count();
    assert!(passed >= at_least, "{}", table(report));
}

/// `report` judged its one check `verdict`, in a sentence that says `said`.
pub(crate) fn judged_once(report: &RunReport, verdict: Verdict, said: &str) {
    let o = &report.checks[0];
    assert_eq!(o.verdict, verdict, "{}", table(report));
    assert!(o.summary.contains(said), "{}", o.summary);
}

/// Runs the one scenario `text` (no built-in check) against `profile`.
async fn run_scenario(profile: TargetProfile, text: &str) -> RunReport {
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.builtin = false;
    opts.scenarios = vec![
        idemspec_scenarios::scenario::Scenario::load("scenario.yaml", text)
            .expect("the scenario loads"),
    ];
    run_with(opts).await
}

/// Runs `opts`, draining its progress events; its sentences audited against its exchanges.
async fn run_with(opts: RunOptions) -> RunReport {
    crate::support::reference::run_options(opts).await
}

/// The bundled leasebroker profile up to its hooks (which crash through leasebroker's admin API),
/// and a `process` instead, running `command` and ready at `port`'s `/healthz`, with `extra`
/// (lines of the `process:` block) after: idemspec itself starts, kills and restarts the target.
fn process_profile(port: u16, command: &str, extra: &str) -> TargetProfile {
    let text = idemspec_scenarios::catalogue::LEASEBROKER_PROFILE;
    let start = text.find("hooks:").expect("the bundled profile has hooks");
    let profile_text = format!(
        "{}process:\n  command: {command:?}\n  ready: {{url: \"http://127.0.0.1:{port}/healthz\"}}\n{extra}",
        &text[..start]
    );
    let vars = [
        ("LEASEBROKER_URL", format!("http://127.0.0.1:{port}")),
        ("LEASEBROKER_IN_FLIGHT_TTL", "2s".to_owned()),
    ];
    TargetProfile::load("lb.yaml", &profile_text, &|var| {
        vars.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone())
    })
    .expect("profile loads")
}

/// The alt-api profile with `edit` applied to its text, aimed at `api`.
pub(crate) fn profile(api: &alt_api::AltApi, edit: impl Fn(&str) -> String) -> TargetProfile {
    load(api, &edit(alt_api::PROFILE)).expect("profile loads")
}

/// `text` loaded as a target profile, with `api`'s environment.
pub(crate) fn load(
    api: &alt_api::AltApi,
    text: &str,
) -> Result<TargetProfile, idemspec_scenarios::LoadError> {
    let env = api.env();
    TargetProfile::load("alt-api.yaml", text, &|var| {
        env.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone())
    })
}

// The alt profile shaped for the alt API's options, each an edit of its text.

/// `tenant_in_path`: every path under the principal's project, given in its `vars`.
fn in_projects(text: &str) -> String {
    text.replace(
        "/api/machines",
        "/projects/{{principal.project}}/api/machines",
    )
    .replace(
        "    headers: {X-Api-Key: alpha-key}\n",
        "    headers: {X-Api-Key: alpha-key}\n    vars: {project: alpha}\n",
    )
    .replace(
        "    headers: {X-Api-Key: beta-key}\n",
        "    headers: {X-Api-Key: beta-key}\n    vars: {project: beta}\n",
    )
}

/// `names_in_body`: every create names its machine `name` (a template).
fn naming(text: &str, name: &str) -> String {
    text.replace(
        r#""tag":"{{marker}}"}'"#,
        &format!(r#""tag":"{{{{marker}}}}","name":"{name}"}}'"#),
    )
}

/// `operations_by_header`: each operation names itself in `X-Operation`, and the list is a `POST`
/// with a body.
fn named_operations(text: &str) -> String {
    text.replace(
        "  create:\n    path: /api/machines\n",
        "  create:\n    path: /api/machines\n    headers: {X-Operation: CreateMachine}\n",
    )
    .replace(
        "  list:\n    path: \"/api/machines?tag={{marker}}\"\n",
        "  list:\n    method: POST\n    path: /api/machines/search\n    body: '{\"tag\":\"{{marker}}\"}'\n    headers: {X-Operation: ListMachines}\n",
    )
    .replace(
        "  get: {path: \"/api/machines/{id}\"}",
        "  get: {path: \"/api/machines/{id}\", headers: {X-Operation: GetMachine}}",
    )
    .replace(
        "  delete: {path: \"/api/machines/{id}\"}",
        "  delete: {path: \"/api/machines/{id}\", headers: {X-Operation: DeleteMachine}}",
    )
    .replace(
        "effect: $.data.restarts}",
        "effect: $.data.restarts, headers: {X-Operation: RestartMachine}}",
    )
}

/// `operations`: the id read from the Operation's `targetLink`.
fn id_in_link(text: &str) -> String {
    text.replace(
        "    id: $.data.uuid\n",
        "    id: $.targetLink\n    id_after: /machines/\n",
    )
}

/// `operations`: the id read from the Operation's `targetLink`, and the Operation declared.
fn polled(text: &str) -> String {
    id_in_link(text).replace(
        "    id_after: /machines/\n",
        "    id_after: /machines/\n    operation:\n      poll: {json: $.selfLink}\n      done: {at: $.status, is: DONE}\n      within: 10s\n",
    )
}

/// The alt-api profile without hooks (no admin switches), so the checks use its request variants
/// that make the API fail, fail once, be slow or hang by what is sent.
fn failing_by_request(text: &str) -> String {
    let start = text.find("hooks:").expect("the fixture has hooks");
    let end = text.find("side_effects:").expect("and a probe");
    let without_hooks = format!("{}{}", &text[..start], &text[end..]);
    assert!(
        without_hooks.contains("      hangs:"),
        "the fixture declares the variants"
    );
    without_hooks
}

/// The checks that need a failure, an abandoned request or a slow handler are judged, not SKIP,
/// against an API that fails by what is sent and has no admin switch at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failures_by_request_variant_are_judged_not_skipped() {
    let api = alt_api::start().await;
    let checks = [
        "failed-not-cached",
        "failed-creates-nothing",
        "resumable-side-effects",
        "stuck-in-flight",
        "slow-handler-outlives-ttl",
    ];
    let report = run_profile(profile(&api, failing_by_request), &checks).await;
    for id in checks {
        let o = crate::support::reference::outcome(&report, id);
        assert_eq!(o.verdict, Verdict::Pass, "{id}: {}", table(&report));
    }
}

/// Runs `stuck-in-flight` alone against an alt API started with `options`, failing by request
/// (no hooks), and asserts its verdict and that its sentence says every one of `said`.
async fn stuck_in_flight(options: alt_api::Options, verdict: Verdict, said: &[&str]) {
    let api = alt_api::start_with(options).await;
    let report = run_profile(profile(&api, failing_by_request), &["stuck-in-flight"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, verdict, "{}", table(&report));
    for s in said {
        assert!(o.summary.contains(s), "{s}: {}", o.summary);
    }
}

/// An API whose same-key retries wait on the abandoned request's record answers none of them,
/// nor the twin sent beside the unanswered retry: no free key was seen, so the verdict is UNKNOWN
/// naming both, not a PASS on "locked for 0.3 s, then `retry` got timed out".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_that_is_never_answered_is_not_a_released_key() {
    let options = alt_api::Options {
        retry_waits_on_in_flight: true,
        ..alt_api::Options::default()
    };
    let said = [
        "`retry`, sent ",
        "after the abandoned request, got no answer",
        "`retry-twin`, sent with the same key",
        "timed out",
        "declare it (`contract.in_flight_wait: {up_to, then}`)",
    ];
    stuck_in_flight(options, Verdict::Unknown, &said).await;
}

/// An API that makes a same-key request wait before refusing it, longer than the retry waits for
/// an answer, while its abandoned record is never released: the unanswered retry's twin would be
/// refused, but only as late as the retry itself (it waits on the same record), and a twin ends
/// when its retry does. A late refusal is no sign the retry held the key (it never did): UNKNOWN,
/// never the PASS a twin that waited longer than its retry once gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_twin_refused_only_after_its_retry_ended_shows_nothing() {
    let options = alt_api::Options {
        never_reclaim: true,
        in_flight_wait: Some(std::time::Duration::from_secs(6)),
        ..alt_api::Options::default()
    };
    let said = [
        "`retry`, sent ",
        "after the abandoned request, got no answer",
        // 1.0 s after the retry, or 1.1 s where a wake-up is late.
        "`retry-twin`, sent with the same key 1.",
        "s into it, got timed out",
    ];
    stuck_in_flight(options, Verdict::Unknown, &said).await;
}

/// An API whose abandoned key answers 503 for good (a middleware's "record busy" error the profile
/// does not declare as its in-flight status) never showed the key free: a 5xx is no release, and
/// retries that end in one are UNKNOWN naming `contract.in_flight_status`, not the PASS "then
/// `retry` got 503".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_that_answers_5xx_for_good_is_not_released() {
    let options = alt_api::Options {
        never_reclaim: true,
        in_flight_status: Some(axum::http::StatusCode::SERVICE_UNAVAILABLE),
        ..alt_api::Options::default()
    };
    let said = [
        "`retry` was answered 503",
        "declare it in `contract.in_flight_status`",
    ];
    stuck_in_flight(options, Verdict::Unknown, &said).await;
}

/// A correct API's reclaiming retry re-runs the hanging handler and gets no answer either; its
/// twin, refused as in flight, shows that the retry held the key, so the lock was released: PASS,
/// saying so, with the limit and its slack.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unanswered_retry_whose_twin_is_refused_held_the_key() {
    let said = [
        "then `retry` got timed out",
        "`retry-twin`, sent with the same key",
        "got 409",
        "`retry` held the key",
        "limit 7.0 s",
    ];
    stuck_in_flight(alt_api::Options::default(), Verdict::Pass, &said).await;
}

/// A profile whose `list` cannot see what the API creates (an `items` path that misses the
/// response) would count zero for the checks that create nothing (a failed create, an abandoned
/// one) and PASS them on "0 resource(s) created"; the preflight stops the run first, naming the
/// path and the response's fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_list_that_cannot_see_resources_stops_the_run() {
    let api = alt_api::start().await;
    let edit = |text: &str| {
        assert!(
            text.contains(r#"items: "$.data[*]""#),
            "the fixture's items path"
        );
        failing_by_request(text).replace(r#"items: "$.data[*]""#, r#"items: "$.machines[*]""#)
    };
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile(&api, edit))));
    opts.only = vec!["failed-creates-nothing".into(), "stuck-in-flight".into()];
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = run(opts, tx)
        .await
        .expect_err("the preflight refuses the list");
    let text = err.to_string();
    assert!(
        text.contains("GET /api/machines?tag=preflight as principal `alpha` answered 200, but")
            && text.contains(
                "`$.machines` is not in the response (its top-level fields are `data`, `meta`)"
            ),
        "{text}"
    );
}

/// An in-flight lock that never expires is never PASS: without a declared TTL (the article's
/// preset declares none) the lockout is measured up to the bound and reported, with the time, as
/// a WARN; with a declared TTL it is a FAIL.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lock_that_never_expires_is_not_pass_under_article() {
    let api = alt_api::start_with(alt_api::Options {
        never_reclaim: true,
        ..alt_api::Options::default()
    })
    .await;
    let article = |text: &str| {
        failing_by_request(text)
            .replace("preset: stripe-v1", "preset: article")
            .replace("  in_flight_ttl: 2s\n", "")
    };
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile(&api, article))));
    opts.only = vec!["stuck-in-flight".into()];
    opts.lockout_bound = std::time::Duration::from_secs(2);
    let report = run_with(opts).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Warn, "{}", table(&report));
    assert!(
        o.summary.contains("declares no in-flight TTL")
            && o.summary.contains("in-flight TTL of minutes"),
        "{}",
        o.summary
    );
    let declared = |text: &str| failing_by_request(text);
    let report = run_profile(profile(&api, declared), &["stuck-in-flight"]).await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Fail,
        "{}",
        table(&report)
    );
}

/// Without a declared in-flight TTL there is no TTL for a slow handler to outlive: the check is
/// SKIP and says so, even when the profile has a `slow` variant (it PASSed vacuously before: the
/// retry waited out the handler and got its replay).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_handler_without_a_declared_ttl_is_skipped_with_that_reason() {
    let api = alt_api::start().await;
    let no_ttl = |text: &str| failing_by_request(text).replace("  in_flight_ttl: 2s\n", "");
    let report = run_profile(profile(&api, no_ttl), &["slow-handler-outlives-ttl"]).await;
    judged_once(&report, Verdict::Skip, "in_flight_ttl");
}

/// A target that takes longer than its in-flight TTL to restart, and whose first answer after the
/// restart finds the abandoned key free, did not hold the lock past the TTL: the time the target
/// was down is not a lock. The same slow restart with a lock that is never reclaimed still fails,
/// on the refusals seen past the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_restart_is_not_a_lock_held_past_the_ttl() {
    // The fixture's TTL is 2 s and stuck-in-flight allows 5 s of slack: 8 s of restart is past both.
    let slow_restart = std::time::Duration::from_secs(8);
    for (never_reclaim, expected) in [(false, Verdict::Pass), (true, Verdict::Fail)] {
        let api = alt_api::start_with(alt_api::Options {
            never_reclaim,
            restart_delay: slow_restart,
            ..alt_api::Options::default()
        })
        .await;
        // Without the `hangs` variant the abandoned request is the default create, which the
        // armed crash kills after its work began (a hanging handler never reaches the crash).
        let crash_mid_create = |text: &str| {
            let hangs = "      hangs: {body: '{\"flavor\":\"hang\",\"tag\":\"{{marker}}\"}'}\n";
            assert!(
                text.contains(hangs),
                "the fixture declares the hangs variant"
            );
            text.replace(hangs, "")
        };
        let report = run_profile(profile(&api, crash_mid_create), &["stuck-in-flight"]).await;
        let o = crate::support::reference::outcome(&report, "stuck-in-flight");
        assert_eq!(
            o.verdict,
            expected,
            "never_reclaim {never_reclaim}: {}",
            table(&report)
        );
        if !never_reclaim {
            assert!(o.summary.contains("found the key free"), "{}", o.summary);
        }
    }
}

/// An API that accepts only UUID keys passes the whole catalogue once its profile says so: every
/// check sends UUID keys, unique per check and run, and key-validation still sends the invalid
/// ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_uuid_only_api_passes_the_catalogue_with_uuid_keys() {
    let api = alt_api::start_with(alt_api::Options {
        uuid_keys: true,
        ..alt_api::Options::default()
    })
    .await;
    let uuid = |text: &str| {
        text.replace(
            "  in_flight_ttl: 2s",
            "  in_flight_ttl: 2s\n  key_form: uuid",
        )
    };
    let report = run_profile(profile(&api, uuid), &[]).await;
    // SKIP only where the profile lacks a capability (it declares no request variants).
    assert_passes(&report, 16);
    // Without the declaration the same API is judged for the wrong reason: its keys are refused.
    let report = run_profile(profile(&api, str::to_owned), &["lost-response"]).await;
    assert_ne!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
}

/// An API that reads its key from a query parameter (Google Cloud's `requestId`) or a member of
/// the JSON body (AWS's `clientToken`) passes the whole catalogue once its profile says where the
/// key goes (`contract.key_at`): every check, the invalid keys of key-validation and the storm's
/// upstream count included, follows it. Left in the default header, the same API sees no key and
/// runs every retry again, and lost-response FAILs.
#[rstest::rstest]
#[case::query(alt_api::KeyIn::Query("requestId"), "{query: requestId}")]
#[case::json_body(alt_api::KeyIn::Json("clientToken"), "{json: clientToken}")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_outside_a_header_is_followed_by_every_check(
    #[case] key_in: alt_api::KeyIn,
    #[case] key_at: &str,
) {
    let api = alt_api::start_with(alt_api::Options {
        key_in,
        ..alt_api::Options::default()
    })
    .await;
    let declared = format!("  in_flight_ttl: 2s\n  key_at: {key_at}");
    let placed = |text: &str| text.replace("  in_flight_ttl: 2s", &declared);
    let report = run_profile(profile(&api, placed), &[]).await;
    assert_passes(&report, 16);
    let unplaced = run_profile(profile(&api, str::to_owned), &["lost-response"]).await;
    assert_eq!(
        unplaced.checks[0].verdict,
        Verdict::Fail,
        "{}",
        table(&unplaced)
    );
}

/// An API that keeps each tenant in its paths (`/projects/P/…`, as Google Cloud) and has the
/// client name each machine (a name taken is a 409, as Compute's instance names) passes the whole
/// catalogue with a profile that puts each principal's project in its paths
/// (`{{principal.project}}`) and names each create after its key (`{{key_name}}`: a retry repeats
/// its own name, two keys never share one). Named after the check instead, the creates of one
/// check collide on the name and the checks that make several resources cannot pass; and a
/// principal without the variable is refused at load, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_in_the_path_and_names_per_key_pass_the_catalogue() {
    let api = alt_api::start_with(alt_api::Options {
        tenant_in_path: true,
        names_in_body: true,
        ..alt_api::Options::default()
    })
    .await;
    let shaped = |name: &'static str| move |text: &str| naming(&in_projects(text), name);
    let report = run_profile(profile(&api, shaped("{{key_name}}")), &[]).await;
    assert_passes(&report, 16);
    let one_name = run_profile(
        profile(&api, shaped("n-{{marker}}")),
        &["concurrent-same-key"],
    )
    .await;
    assert_ne!(
        one_name.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&one_name)
    );
    let without_vars =
        shaped("{{key_name}}")(alt_api::PROFILE).replace("    vars: {project: beta}\n", "");
    let err = load(&api, &without_vars).expect_err("a principal without the variable is refused");
    let err = format!("{err:#}");
    assert!(
        err.contains("principal `beta` has no `project`") && err.contains("operations.create.path"),
        "{err}"
    );
}

/// An API that tells its operations apart by a header (as AWS's `X-Amz-Target`) and lists with a
/// `POST` and a body passes the whole catalogue once each operation of the profile carries its
/// header (`operations.*.headers`) and the list its method and body; a header name HTTP cannot
/// carry is refused at load, located.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operations_named_by_a_header_and_a_list_with_a_body_pass_the_catalogue() {
    let api = alt_api::start_with(alt_api::Options {
        operations_by_header: true,
        ..alt_api::Options::default()
    })
    .await;
    assert!(
        named_operations(alt_api::PROFILE)
            .matches("X-Operation")
            .count()
            == 5,
        "the fixture changed"
    );
    let report = run_profile(profile(&api, named_operations), &[]).await;
    assert_passes(&report, 16);
    let bad = named_operations(alt_api::PROFILE).replace(
        "{X-Operation: CreateMachine}",
        "{\"X Operation\": CreateMachine}",
    );
    let err = load(&api, &bad).expect_err("a header name with a space is refused");
    let err = format!("{err:#}");
    assert!(
        err.contains("operations.create.headers") && err.contains("alt-api.yaml:"),
        "{err}"
    );
}

/// An API whose same-key request waits for the one in flight and answers with its result (as AWS
/// documents for a repeated client token), never with a conflict, is judged by what it does: the
/// checks that accept a replay in place of the conflict pass, and the lock after a crash is
/// measured by when the waiting retry is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_duplicate_that_waits_for_the_result_passes_the_catalogue() {
    let api = alt_api::start_with(alt_api::Options {
        waits_for_result: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, str::to_owned), &[]).await;
    assert_passes(&report, 16);
}

/// Key-validation's key too long is one character past the limit the contract declares
/// (`key_max_len`): against an API that takes keys up to 255 characters, a profile that declares
/// AWS's 64 sees its 65-character key accepted and FAILs, naming it; the default (255) passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_key_too_long_is_one_past_the_declared_limit() {
    let api = alt_api::start().await;
    let limited = profile(&api, |t| {
        t.replace(
            "  in_flight_ttl: 2s",
            "  in_flight_ttl: 2s\n  key_max_len: 64",
        )
    });
    let report = run_profile(limited, &["key-validation"]).await;
    judged_once(&report, Verdict::Fail, "a 65-character key");
    let report = run_profile(profile(&api, str::to_owned), &["key-validation"]).await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
    assert!(
        report.checks[0].summary.contains("a 256-character key"),
        "{}",
        report.checks[0].summary
    );
}

/// An id inside a link (Google Cloud's `targetLink`) is cut out of it (`create.id_after`): the
/// checks that act on what they created find it; read whole, the link is no id the API's paths
/// take, and reboot-once cannot pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_id_cut_out_of_a_link_names_the_resource() {
    let api = alt_api::start().await;
    let only = [
        "reboot-once",
        "replay-after-delete",
        "delete-doom-loop",
        "endpoint-scope",
    ];
    let cut = profile(&api, |t| {
        t.replace(
            "    id: $.data.uuid\n",
            "    id: $.data.selfLink\n    id_after: /machines/\n",
        )
    });
    let report = run_profile(cut, &only).await;
    for check in &report.checks {
        assert_eq!(check.verdict, Verdict::Pass, "{}", table(&report));
    }
    let whole = profile(&api, |t| {
        t.replace("    id: $.data.uuid\n", "    id: $.data.selfLink\n")
    });
    let report = run_profile(whole, &["reboot-once"]).await;
    assert_ne!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
}

/// An API whose create answers a long-running operation (as Google Cloud's) and lists its machine
/// only once the operation is done passes the catalogue once the profile says where the operation
/// is and what done looks like (`create.operation`): a check counts after every operation it
/// started has settled, and a replay that answers the same operation in a later state is the same
/// answer. Without the declaration the counts come too early and the replays look like other
/// responses, and the checks that count or compare cannot pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_create_that_answers_an_operation_is_judged_once_it_settles() {
    let api = alt_api::start_with(alt_api::Options {
        operations: true,
        ..alt_api::Options::default()
    })
    .await;
    let declared = profile(&api, polled);
    let report = run_profile(declared, &[]).await;
    assert_passes(&report, 14);
    let undeclared = run_profile(
        profile(&api, id_in_link),
        &["lost-response", "replay-fidelity"],
    )
    .await;
    for check in &undeclared.checks {
        assert_ne!(check.verdict, Verdict::Pass, "{}", table(&undeclared));
    }
}

/// Every request a check makes about a long-running operation goes the one way its principal's
/// requests go: an API whose principals are cookie sessions and whose creates answer operations
/// is judged PASS (its polls carry the session, or they get `401` and every check is UNKNOWN); an
/// operation that answers `Retry-After: 1` while it runs is polled that late, not every 100 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn polls_go_through_the_session_and_wait_as_the_operation_asks() {
    let api = alt_api::start_with(alt_api::Options {
        operations: true,
        sessions: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, |t| in_sessions(&polled(t), None)), &[]).await;
    assert_passes(&report, 14);
    let api = alt_api::start_with(alt_api::Options {
        operations: true,
        operation_retry_after: Some(1),
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, polled), &["lost-response"]).await;
    assert_passes(&report, 1);
    let polls = api.polls();
    assert!(!polls.is_empty(), "the operation was polled");
    // It runs 300 ms: polled at once (RUNNING, `Retry-After: 1`), then once it is done; at every
    // 100 ms it would take four polls.
    assert!(polls[0] <= 2, "at most two polls per operation: {polls:?}");
}

/// The process's peak resident memory so far, in bytes (`VmHWM`); one process per test under
/// nextest, as CI runs them.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM")
        * 1024
}

/// An API whose every answer to a write is 7 MB wide (3.5 M JSON values; 500 k XML elements) is
/// judged as the same API with plain answers: the same verdicts, each answer parsed once and only
/// its first values read, the process's peak memory bounded (it grew to 14 GB over a catalogue
/// when every answer was parsed whole and copied per read).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn answers_megabytes_wide_are_judged_as_plain_ones() {
    for (xml, n) in [(false, 3_500_000), (true, 500_000)] {
        let options = |wide| alt_api::Options {
            xml_answers: xml,
            wide_answers: wide,
            ..alt_api::Options::default()
        };
        let verdicts = |report: &RunReport| -> Vec<(String, Verdict)> {
            report
                .checks
                .iter()
                .map(|c| (c.id.clone(), c.verdict))
                .collect()
        };
        let plain = alt_api::start_with(options(None)).await;
        let shape = |t: &str| if xml { as_xml_profile(t) } else { t.to_owned() };
        let plain = run_profile(profile(&plain, shape), &[]).await;
        let wide = alt_api::start_with(options(Some(n))).await;
        let wide = run_profile(profile(&wide, shape), &[]).await;
        assert_eq!(
            verdicts(&wide),
            verdicts(&plain),
            "xml: {xml}\n{}",
            table(&wide)
        );
    }
    let peak = peak_rss();
    eprintln!("peak resident memory: {} MiB", peak >> 20);
    assert!(peak < 1536 << 20, "peak resident memory {} MiB", peak >> 20);
}

/// A create whose id is past the values idemspec reads of its answer (a 100,001-value member
/// first) is not reported as an answer without an id: the check is UNKNOWN, and its sentence says
/// the body was read in part and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_id_past_what_is_read_is_told_as_a_body_read_in_part() {
    let api = alt_api::start_with(alt_api::Options {
        wide_answers: Some(100_001),
        wide_first: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, str::to_owned), &["cross-tenant"]).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        check
            .summary
            .contains("no id at `$.data.uuid`: its body was read in part")
            && check.summary.contains("the first 100000 JSON values"),
        "{}",
        check.summary
    );
}

/// A contract that answers a reused key with another request by the original (Google Cloud's
/// `requestId`: `mismatch_answer: original`) is judged by what it says: fingerprint-mismatch
/// PASSes on an API that does so, FAILs on one that refuses instead (naming the contract), and
/// under the default contract the API that answers with the original FAILs for not refusing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_mismatch_answered_with_the_original_is_judged_by_the_contract() {
    let original = |t: &str| {
        t.replace(
            "  in_flight_ttl: 2s",
            "  in_flight_ttl: 2s\n  mismatch_answer: original",
        )
    };
    let answers_original = alt_api::start_with(alt_api::Options {
        mismatch_answers_original: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(
        profile(&answers_original, original),
        &["fingerprint-mismatch"],
    )
    .await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
    assert!(
        report.checks[0]
            .summary
            .contains("`changed` got `original`'s answer"),
        "{}",
        table(&report)
    );
    let report = run_profile(
        profile(&answers_original, str::to_owned),
        &["fingerprint-mismatch"],
    )
    .await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Fail,
        "{}",
        table(&report)
    );
    let refuses = alt_api::start().await;
    let report = run_profile(profile(&refuses, original), &["fingerprint-mismatch"]).await;
    judged_once(&report, Verdict::Fail, "`mismatch_answer: original`");
}

/// A Google-Compute-shaped API, all at once: `requestId` a UUID in the query, each principal's
/// project in the path, client-chosen names, a create that answers an Operation whose machine
/// appears once it is done, an id inside its `targetLink`, a repeated `requestId` with other
/// parameters answered with the original operation, and every refusal Google's error object
/// with no `Retry-After`. Its profile starts from the `gcp-request-id`
/// preset and says only what the preset cannot know (the paths, the operation, the 5xx it
/// stores), and the catalogue passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_google_shaped_api_passes_under_the_gcp_preset() {
    let api = alt_api::start_with(Shape::Google.options()).await;
    let report = run_profile(profile(&api, |_| GOOGLE_SHAPED.to_owned()), &[]).await;
    assert_passes(&report, 14);
}

/// An AWS-JSON-shaped API under the `aws-client-token` preset: the token a `clientToken` member,
/// operations named by a header, the list a `POST`, and a reused token with other parameters a
/// `400` told from any other `400` only by `__type`. The catalogue passes; and an action the API
/// refuses with a plain `400` is not taken for the mismatch (endpoint-scope is UNKNOWN, naming its
/// control).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_aws_shaped_api_passes_under_the_aws_preset() {
    let api = alt_api::start_with(Shape::AwsJson.options()).await;
    let aws = |_: &str| AWS_JSON_SHAPED.to_owned();
    let report = run_profile(profile(&api, aws), &[]).await;
    assert_passes(&report, 14);
    // The action named wrongly: a plain 400 for any key, which is not the mismatch.
    let wrong_action =
        |t: &str| aws(t).replace("X-Operation: RestartMachine", "X-Operation: Reboot");
    let report = run_profile(profile(&api, wrong_action), &["endpoint-scope"]).await;
    judged_once(&report, Verdict::Unknown, "`control`");
}

/// An API shaped like EC2's Query protocol (every request a `POST /` whose form `Action` names
/// it, the token the form's `ClientToken`, instances named in the body, XML answers, the mismatch
/// `400` known by its code, every refusal's error named where its worked profile's `error_shape`
/// says) passes the catalogue under its worked profile; the action named wrongly
/// (`Action=Reboot`) is a plain 400 for any token, never taken for the mismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_aws_query_shaped_api_passes_under_its_worked_profile() {
    let api = alt_api::start_with(Shape::AwsQuery.options()).await;
    let report = run_profile(profile(&api, |_| AWS_QUERY_SHAPED.to_owned()), &[]).await;
    assert_passes(&report, 14);
    let wrong = |_: &str| AWS_QUERY_SHAPED.replace("Action=RebootInstances", "Action=Reboot");
    let report = run_profile(profile(&api, wrong), &["endpoint-scope"]).await;
    judged_once(&report, Verdict::Unknown, "`control`");
}

/// The worked profiles of docs/profiles/, each the profile a test double here is judged by.
const GOOGLE_SHAPED: &str = include_str!("../../../docs/profiles/google-compute-shaped.yaml");
const AWS_JSON_SHAPED: &str = include_str!("../../../docs/profiles/aws-json-shaped.yaml");
const STRIPE_SHAPED: &str = include_str!("../../../docs/profiles/stripe-shaped.yaml");
const AWS_QUERY_SHAPED: &str = include_str!("../../../docs/profiles/aws-query-shaped.yaml");

/// The Stripe-shaped worked profile, whatever the alt profile says.
fn stripe_shaped(_: &str) -> String {
    STRIPE_SHAPED.to_owned()
}

/// The shapes of public API the alt API takes, each with its worked profile.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// `?requestId=` UUIDs, projects in the path, instance names, Operations, a repeated
    /// requestId answered with the original.
    Google,
    /// A `clientToken` member, operations named by a header, a `POST` list, `__type` errors.
    AwsJson,
    /// Form bodies, keys across endpoints, `error.type` and `error.code`.
    Stripe,
    /// EC2's Query protocol: `POST /` with `Action=…` and a `ClientToken` field, instances
    /// named by `InstanceId.1`, XML answers, error codes in the body.
    AwsQuery,
}

impl Shape {
    /// The alt API's options that give it this shape.
    pub(crate) fn options(self) -> alt_api::Options {
        match self {
            Shape::Google => alt_api::Options {
                key_in: alt_api::KeyIn::Query("requestId"),
                uuid_keys: true,
                tenant_in_path: true,
                names_in_body: true,
                operations: true,
                mismatch_answers_original: true,
                gcp_errors: true,
                ..alt_api::Options::default()
            },
            Shape::AwsJson => alt_api::Options {
                key_in: alt_api::KeyIn::Json("clientToken"),
                operations_by_header: true,
                aws_errors: true,
                key_max_len: Some(64),
                ..alt_api::Options::default()
            },
            Shape::Stripe => alt_api::Options {
                stripe_shape: true,
                keys_across_endpoints: true,
                ..alt_api::Options::default()
            },
            Shape::AwsQuery => alt_api::Options {
                key_in: alt_api::KeyIn::Form("ClientToken"),
                query_actions: true,
                xml_answers: true,
                aws_errors: true,
                key_max_len: Some(64),
                ..alt_api::Options::default()
            },
        }
    }

    /// Its worked profile (docs/profiles/).
    pub(crate) fn profile(self) -> &'static str {
        match self {
            Shape::Google => GOOGLE_SHAPED,
            Shape::AwsJson => AWS_JSON_SHAPED,
            Shape::Stripe => STRIPE_SHAPED,
            Shape::AwsQuery => AWS_QUERY_SHAPED,
        }
    }
}

/// A Stripe-shaped API: form bodies, keys per principal across endpoints, a reused key with
/// another request a `400` told from any other `400` only by `error.type`, every refusal Stripe's
/// error object and no `Retry-After` on the in-flight `409`. Under `stripe-v1` with the body
/// conditions declared, the catalogue passes (the preset promises Stripe's error shape and no
/// `Retry-After`, so neither the article's problem body nor its `Retry-After` is asked); an API
/// that replays the create to an action with its key WARNs endpoint-scope (a SHOULD) and no other
/// check: the false PASS a status-only contract gave, where any 400 counted as the refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stripe_shaped_api_passes_under_the_stripe_preset() {
    let api = alt_api::start_with(Shape::Stripe.options()).await;
    let not_passed = |report: &RunReport| -> std::collections::BTreeMap<String, Verdict> {
        report
            .checks
            .iter()
            .filter(|c| !matches!(c.verdict, Verdict::Pass | Verdict::Skip))
            .map(|c| (c.id.clone(), c.verdict))
            .collect()
    };
    let expect = |extra: Option<(&str, Verdict)>| -> std::collections::BTreeMap<String, Verdict> {
        extra
            .into_iter()
            .map(|(id, v)| (id.to_owned(), v))
            .collect()
    };
    let report = run_profile(profile(&api, stripe_shaped), &[]).await;
    assert_eq!(not_passed(&report), expect(None), "{}", table(&report));
    let passed = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Pass)
        .count();
    assert!(passed >= 14, "{}", table(&report));
    let replays = alt_api::start_with(alt_api::Options {
        action_replays_create: true,
        ..Shape::Stripe.options()
    })
    .await;
    let report = run_profile(profile(&replays, stripe_shaped), &[]).await;
    assert_eq!(
        not_passed(&report),
        expect(Some(("endpoint-scope", Verdict::Warn))),
        "{}",
        table(&report)
    );
    // An action sent with a JSON body, which this API refuses with a plain 400 before it looks at
    // the key: never taken for the mismatch. With `mismatch_body` declared its body says it is
    // not one; by status alone it would be, but the control (the same action with a fresh key) is
    // refused too, so either way endpoint-scope is UNKNOWN naming the control, never a PASS.
    let json_action = |t: &str| {
        stripe_shaped(t).replace(
            "effect: $.data.restarts}",
            "effect: $.data.restarts, body: '{\"reason\":\"x\"}'}",
        )
    };
    let status_only = |t: &str| {
        json_action(t).replace(
            "  mismatch_body: {at: $.error.type, is: idempotency_error}\n",
            "",
        )
    };
    let declared = run_profile(profile(&replays, json_action), &["endpoint-scope"]).await;
    judged_once(&declared, Verdict::Unknown, "`control`");
    let by_status = run_profile(profile(&replays, status_only), &["endpoint-scope"]).await;
    judged_once(&by_status, Verdict::Unknown, "`control`");
}

/// A target idemspec starts from its profile's `process` is killed mid-handler (its whole process
/// group) and restarted on the same address, and inherits no descriptor of idemspec's: a command
/// its shell runs lists its open descriptors, and there are only stdin, stdout, stderr and the
/// directory it is reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_target_idemspec_starts_is_killed_mid_handler_and_restarted() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let dir = tempfile::tempdir().expect("temp dir");
    let fds = dir.path().join("fds.txt");
    let log = dir.path().join("target.log");
    let command = format!(
        "ls /proc/self/fd >> {fds}; echo ---- >> {fds}; exec {bin} __leasebroker --dev \
         --listen 127.0.0.1:{port} --database-url sqlite://{db}?mode=rwc --in-flight-ttl 2s \
         --boot-latency 100ms",
        fds = fds.display(),
        bin = env!("CARGO_BIN_EXE_idemspec"),
        db = dir.path().join("lb.db").display(),
    );
    let log_line = format!("  log: {:?}\n", log.display().to_string());
    let profile = process_profile(port, &command, &log_line);
    let report = run_profile(profile, &["stuck-in-flight", "lost-response"]).await;
    for check in &report.checks {
        assert_eq!(check.verdict, Verdict::Pass, "{}", table(&report));
    }
    assert_eq!(
        report.target_log.as_deref(),
        Some(log.to_str().expect("utf-8"))
    );
    let listings = std::fs::read_to_string(&fds).expect("the shell listed its descriptors");
    let starts: Vec<&str> = listings
        .split("----")
        .filter(|s| !s.trim().is_empty())
        .collect();
    assert_eq!(
        starts.len(),
        2,
        "started, killed mid-handler, started again: {listings}"
    );
    for listing in starts {
        let mut open: Vec<&str> = listing.split_whitespace().collect();
        open.sort_unstable();
        assert_eq!(
            open,
            ["0", "1", "2", "3"],
            "descriptors in the target: {listing}"
        );
    }
    let logged = std::fs::read_to_string(&log).expect("the target's log");
    assert_eq!(
        logged.matches("leasebroker listening on").count(),
        2,
        "{logged}"
    );
}

/// An API that answers `423 Locked` while a key's first request runs, and declares it as its
/// `in_flight_status`, asks retry-storm's clients to try again as surely as a `409` would: they
/// keep retrying and every client ends with its key's resource, none "refused for good".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retry_storm_retries_the_declared_in_flight_status() {
    const STORM: &str = r#"version: 1
id: storm-locked
title: 8 clients on 2 keys against an API that answers 423 while in flight
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 8, keys: 2, attempts: 40, seed: 5, within: 30s}
"#;
    let api = alt_api::start_with(alt_api::Options {
        in_flight_status: Some(axum::http::StatusCode::LOCKED),
        ..alt_api::Options::default()
    })
    .await;
    let locked = |text: &str| {
        text.replace(
            "  in_flight_ttl: 2s\n",
            "  in_flight_ttl: 2s\n  in_flight_status: [423]\n",
        )
    };
    let report = run_scenario(profile(&api, locked), STORM).await;
    let o = crate::support::reference::outcome(&report, "storm-locked");
    let said = serde_json::to_string(o).expect("the outcome serialises");
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
    assert!(
        !said.contains("refused for good") && o.summary.contains("2 resources for 2 accepted keys"),
        "{said}"
    );
    assert!(
        said.contains("423"),
        "the clients met the API's 423: {said}"
    );
}

/// A target idemspec starts without a `process.log` writes to a file in a temporary directory
/// that the report names; the file is still there once the process is gone, since a failed run
/// is when it is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_target_log_outlives_the_target() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let dir = tempfile::tempdir().expect("temp dir");
    let command = format!(
        "echo target-started; exec {bin} __leasebroker --dev --listen 127.0.0.1:{port} \
         --database-url sqlite://{db}?mode=rwc",
        bin = env!("CARGO_BIN_EXE_idemspec"),
        db = dir.path().join("lb.db").display(),
    );
    let profile = process_profile(port, &command, "");
    let target = idemspec::target_process::TargetProcess::start(&profile)
        .await
        .expect("the target starts");
    let log = target.log().to_path_buf();
    drop(target);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let logged = std::fs::read_to_string(&log).expect("the log is still there");
    assert!(logged.contains("target-started"), "{logged}");
    let _ = std::fs::remove_dir_all(log.parent().expect("its directory"));
}

/// An API that answers 423 while a key's first request runs, with the 423 left undeclared, and
/// creates that outlast the storm clients' 5 s timeout under a lock that is not reclaimed: each
/// client's retry meets a 423 and stops
/// there, so no create is accepted and the storm judged nothing. That is UNKNOWN naming
/// `in_flight_status`, not a PASS on "0 resources for 0 accepted keys".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_storm_that_accepted_nothing_is_unknown() {
    const STORM: &str = r#"version: 1
id: storm-all-locked
title: 3 clients whose creates outlast their timeout, against an undeclared in-flight 423
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 3, attempts: 5, seed: 1, within: 20s}
"#;
    let api = alt_api::start_with(alt_api::Options {
        in_flight_status: Some(axum::http::StatusCode::LOCKED),
        create_latency: Some(std::time::Duration::from_secs(6)),
        // A lock that outlasts the 2 s in-flight TTL, so the retry meets the 423, not a re-run.
        never_reclaim: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_scenario(profile(&api, str::to_owned), STORM).await;
    let o = crate::support::reference::outcome(&report, "storm-all-locked");
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        o.summary.contains("judged nothing") && o.summary.contains("in_flight_status"),
        "{}",
        o.summary
    );
}

/// One defect fails one check: an API that replays a `201` as a `200` (body, Location and
/// Content-Type intact) breaks replay fidelity, which `replay-fidelity` owns. The checks that also
/// see a replay (`fingerprint-mismatch`, `replay-after-delete`, `concurrent-same-key`, ...) judge
/// their own rules and name the difference in a note pointing there; nothing else FAILs or goes
/// UNKNOWN.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_with_another_success_status_fails_replay_fidelity_alone() {
    let api = alt_api::start_with(alt_api::Options {
        replay_status: Some(axum::http::StatusCode::OK),
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, |t| t.to_owned()), &[]).await;
    only_replay_fidelity_fails(&report, "status 200 instead of 201");
}

/// The same for a replay that renders the same resource's body again (a member added): the body
/// differs but names the one resource, which is replay fidelity too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_rendered_again_fails_replay_fidelity_alone() {
    let api = alt_api::start_with(alt_api::Options {
        rerender_replays: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, |t| t.to_owned()), &[]).await;
    only_replay_fidelity_fails(&report, "body differs at byte");
}

/// A layer that answers a completed key `409` with the original body (the replay under another
/// status some middlewares document) is judged by the contract: undeclared, the retries that
/// expected the stored response FAIL naming the 409; declared with `replay_status`, the catalogue
/// passes, whether the marker header or the in-flight refusal's body tells the replay from the
/// in-flight 409; and a declared 409 whose body is rendered again FAILs replay-fidelity alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_under_a_declared_other_status_is_a_replay() {
    let options = || alt_api::Options {
        replay_status: Some(axum::http::StatusCode::CONFLICT),
        ..alt_api::Options::default()
    };
    let api = alt_api::start_with(options()).await;
    let undeclared = run_profile(profile(&api, |t| t.to_owned()), &["lost-response"]).await;
    judged_once(
        &undeclared,
        Verdict::Fail,
        "`retry` answered 409; expected 2xx (",
    );
    let declared = |extra: &'static str| {
        move |t: &str| {
            assert!(
                t.contains("  in_flight_ttl: 2s\n"),
                "the fixture's contract"
            );
            t.replace(
                "  in_flight_ttl: 2s\n",
                &format!("  in_flight_ttl: 2s\n  replay_status: 409\n{extra}"),
            )
        }
    };
    // Told apart by the marker header (the preset's `Idempotent-Replayed`).
    let report = run_profile(profile(&api, declared("")), &[]).await;
    assert_passes(&report, 15);
    // Told apart by what the in-flight refusal's body says, with no marker declared.
    let by_body = declared(
        "  replayed_header: \"\"\n  in_flight_body: {at: $.type, is: \"https://alt-api.test/problems/request-in-progress\"}\n",
    );
    let report = run_profile(profile(&api, by_body), &[]).await;
    assert_passes(&report, 14);
    // Nothing to tell them apart: refused at load, naming what to declare.
    let text = declared("  replayed_header: \"\"\n")(alt_api::PROFILE);
    let err = load(&api, &text).expect_err("an ambiguous replay status is refused");
    assert!(
        err.to_string()
            .contains("replay_status 409 is also the contract's `in_flight_status`"),
        "{err}"
    );
    let rerendered = alt_api::start_with(alt_api::Options {
        rerender_replays: true,
        ..options()
    })
    .await;
    let report = run_profile(profile(&rerendered, declared("")), &[]).await;
    only_replay_fidelity_fails(&report, "body differs at byte");
}

/// A layer that wraps its replays in an envelope (`200 {"cached":true,"data":ORIGINAL}`) is judged
/// by the original body inside, where the contract declares the envelope: undeclared, the replay
/// is another response (FAIL); declared, the catalogue passes with no marker header, the envelope
/// told by its body; an envelope whose original is rendered again FAILs replay-fidelity alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_in_a_declared_envelope_is_read_inside_it() {
    let options = || alt_api::Options {
        envelope_replays: true,
        ..alt_api::Options::default()
    };
    let api = alt_api::start_with(options()).await;
    let undeclared = run_profile(profile(&api, |t| t.to_owned()), &["replay-fidelity"]).await;
    judged_once(&undeclared, Verdict::Fail, "status 200 instead of 201");
    let declared = |t: &str| {
        assert!(
            t.contains("  in_flight_ttl: 2s\n"),
            "the fixture's contract"
        );
        t.replace(
            "  in_flight_ttl: 2s\n",
            "  in_flight_ttl: 2s\n  replayed_header: \"\"\n  replay_status: 200\n  \
             replay_body: {at: $.cached, is: true}\n  replay_envelope: $.data\n",
        )
    };
    let report = run_profile(profile(&api, declared), &[]).await;
    assert_passes(&report, 14);
    // An envelope declared with a member the replay lacks is compared whole, and said so.
    let elsewhere =
        |t: &str| declared(t).replace("replay_envelope: $.data", "replay_envelope: payload");
    let report = run_profile(profile(&api, elsewhere), &["replay-fidelity"]).await;
    judged_once(
        &report,
        Verdict::Fail,
        "marked as the declared envelope but has no `payload` member, so it was compared whole",
    );
    // Without what tells an envelope from a first answer, the profile is refused at load.
    let text = declared(alt_api::PROFILE).replace("  replay_body: {at: $.cached, is: true}\n", "");
    let indexed =
        declared(alt_api::PROFILE).replace("replay_envelope: $.data", "replay_envelope: data[0]");
    let err = load(&api, &indexed).expect_err("an envelope member with an index is refused");
    assert!(err.to_string().contains("names no member"), "{err}");
    let err = load(&api, &text).expect_err("an envelope nothing marks is refused");
    assert!(
        err.to_string().contains("replay_envelope needs something"),
        "{err}"
    );
    let rerendered = alt_api::start_with(alt_api::Options {
        rerender_replays: true,
        ..options()
    })
    .await;
    let report = run_profile(profile(&rerendered, declared), &[]).await;
    only_replay_fidelity_fails(&report, "body differs at byte");
    let fidelity = crate::support::reference::outcome(&report, "replay-fidelity");
    assert!(
        fidelity.evidence.iter().any(|e| e
            .response
            .as_ref()
            .is_some_and(|r| r.body_excerpt.starts_with("{\"cached\":true"))),
        "the evidence keeps the envelope as sent: {:?}",
        fidelity.evidence
    );
}

/// `alt`'s principals authenticated by a session their `login` opens (the body names the API
/// key), with `cookies` as the profile's `cookies:` line (`None`: the default).
fn in_sessions(text: &str, cookies: Option<&str>) -> String {
    let headers = [
        "    headers: {X-Api-Key: alpha-key}\n",
        "    headers: {X-Api-Key: beta-key}\n",
    ];
    let mut out = text.to_owned();
    for (h, key) in headers.iter().zip(["alpha-key", "beta-key"]) {
        assert!(out.contains(h), "the fixture's principal");
        out = out.replace(
            h,
            &format!("    login: {{path: /login, body: '{{\"api_key\":\"{key}\"}}'}}\n"),
        );
    }
    match cookies {
        Some(scope) => format!("{out}cookies: {scope}\n"),
        None => out,
    }
}

/// An API whose principals are sessions (a login sets a cookie; a request without it is `401`)
/// is judged through each principal's cookie jar: per principal, the catalogue passes with one
/// login each; per check, it passes too, each check logging in afresh; a login the API refuses
/// stops the run, naming the login and its answer; a login with `cookies: off` is refused at load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn principals_in_cookie_sessions_are_judged_through_their_jars() {
    let api = alt_api::start_with(alt_api::Options {
        sessions: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, |t| in_sessions(t, None)), &[]).await;
    assert_passes(&report, 15);
    assert_eq!(api.logins(), 2, "one login per principal for the run");
    let report = run_profile(profile(&api, |t| in_sessions(t, Some("per_check"))), &[]).await;
    assert_passes(&report, 15);
    let per_check = api.logins() - 2;
    assert!(
        per_check > 19,
        "a login per principal and check: {per_check}"
    );
    let refused = |t: &str| in_sessions(t, None).replace("beta-key", "nobody");
    let opts = RunOptions::new(Target::Profile(Box::new(profile(&api, refused))));
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = run(opts, tx)
        .await
        .expect_err("a session that cannot open stops the run");
    assert!(
        err.to_string()
            .contains("principal `beta`'s login (POST /login) answered 401"),
        "{err}"
    );
    let err = load(&api, &in_sessions(alt_api::PROFILE, Some("off")))
        .expect_err("a login with cookies off is refused");
    assert!(
        err.to_string()
            .contains("has a `login` but the profile says `cookies: off`"),
        "{err}"
    );
}

/// A differing request the API refuses whatever its key (an invalid flavor, `400`) is no mismatch
/// rejection, even under a contract that knows the mismatch by its `400` alone: its control (the
/// same request with a key of its own) is refused too, and fingerprint-mismatch is UNKNOWN naming
/// it, never PASS.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_differing_request_refused_whatever_its_key_leaves_fingerprint_mismatch_unknown() {
    let api = alt_api::start_with(alt_api::Options {
        refuses_flavor: Some("small-2"),
        ..alt_api::Options::default()
    })
    .await;
    let status_only = |t: &str| {
        assert!(
            t.contains("  mismatch_status: [422]\n"),
            "the fixture's contract"
        );
        t.replace(
            "  mismatch_status: [422]\n",
            "  mismatch_status: [400, 422]\n",
        )
    };
    let report = run_profile(profile(&api, status_only), &["fingerprint-mismatch"]).await;
    judged_once(
        &report,
        Verdict::Unknown,
        "precondition not met: `control` answered 400",
    );
    let api = alt_api::start().await;
    let report = run_profile(profile(&api, status_only), &["fingerprint-mismatch"]).await;
    judged_once(&report, Verdict::Pass, "");
}

/// Asserts that only `replay-fidelity` FAILs, saying `said`, and that `fingerprint-mismatch`
/// PASSes with a note naming the difference and the check that owns it.
fn only_replay_fidelity_fails(report: &RunReport, said: &str) {
    for o in &report.checks {
        let expected = if o.id == "replay-fidelity" {
            Verdict::Fail
        } else {
            Verdict::Pass
        };
        assert_eq!(o.verdict, expected, "{}: {}", o.id, table(report));
    }
    let fidelity = crate::support::reference::outcome(report, "replay-fidelity");
    assert!(fidelity.summary.contains(said), "{}", fidelity.summary);
    let mismatch = crate::support::reference::outcome(report, "fingerprint-mismatch");
    assert!(
        mismatch
            .summary
            .contains("apart from what replay-fidelity judges (in the notes)"),
        "{}",
        mismatch.summary
    );
    assert!(
        mismatch
            .notes
            .iter()
            .any(|n| n.contains(said) && n.contains("replay-fidelity judges a replay's")),
        "{:?}",
        mismatch.notes
    );
}

/// A concurrent burst whose later successes are replays answered `200` for the first's `201` is
/// one resource replayed, not "successes that are not identical replays": `consistent` leaves the
/// status code to `replay-fidelity`, in a note, and still FAILs on a body that differs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_replayed_with_another_success_status_is_consistent() {
    const BURST: &str = r#"version: 1
id: burst
title: A burst with one key
level: MUST
reference: "test"
steps:
  - {name: burst, op: create, key: K1, concurrency: 10, via: direct}
assert:
  - consistent: {step: burst, fidelity_judged_by: replay-fidelity}
"#;
    let api = alt_api::start_with(alt_api::Options {
        replay_status: Some(axum::http::StatusCode::OK),
        create_latency: Some(std::time::Duration::ZERO),
        ..alt_api::Options::default()
    })
    .await;
    let judged = BURST.replace(", fidelity_judged_by: replay-fidelity", "");
    let mut replayed = 0;
    for _ in 0..30 {
        let report = run_scenario(profile(&api, |t| t.to_owned()), BURST).await;
        let o = &report.checks[0];
        assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
        if o.notes.iter().any(|n| {
            (n.contains("status 200 instead of 201") || n.contains("status 201 instead of 200"))
                && n.contains("replay-fidelity judges")
        }) {
            replayed += 1;
        }
        // Without an owner named, the same burst is judged whole: a replay among the successes
        // FAILs it, naming the status; a burst with one success and conflicts PASSes.
        let report = run_scenario(profile(&api, |t| t.to_owned()), &judged).await;
        let o = &report.checks[0];
        match o.verdict {
            Verdict::Pass => assert!(
                o.summary.starts_with("1 request(s) succeeded"),
                "{}",
                o.summary
            ),
            // The first success in send order may be a replay whose request was sent before
            // the one that created (it reached the server later): either order is the defect.
            Verdict::Fail => assert!(
                o.summary.contains(
                    "not identical replays of the first (201): status 200 instead of 201"
                ) || o.summary.contains(
                    "not identical replays of the first (200): status 201 instead of 200"
                ),
                "{}",
                o.summary
            ),
            _ => panic!("{}", table(&report)),
        }
    }
    assert!(replayed > 0, "no burst had a replay among its successes");
}

/// A create id path that matches nothing in an accepted create's body is the profile's problem,
/// not "no client's create was accepted": retry-storm is UNKNOWN naming the path and the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_storm_whose_creates_carry_no_id_at_the_path_names_the_path() {
    let api = alt_api::start().await;
    let edit = |text: &str| {
        assert!(text.contains("id: $.data.uuid"), "the fixture's id path");
        text.replace("id: $.data.uuid", "id: $.data.machine_id")
    };
    let report = run_profile(profile(&api, edit), &["retry-storm"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        o.summary
            .contains("but no id at `$.data.machine_id` (first body: `{")
            && o.summary.contains("check `operations.create.id`"),
        "{}",
        o.summary
    );
}

/// An API that sends its replay header on every keyed response and says `false` on a first one
/// (drf-idempotency 1.0.0): the first response is a success on the timeline, not a replay, and a
/// replay that says `true` carries the mark. A replay that says `false` does not: replay-fidelity's
/// SHOULD is broken, naming the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_header_that_says_false_marks_no_replay() {
    use idemspec::model::AttemptEnd;
    for (replay_says, verdict) in [("true", Verdict::Pass), ("false", Verdict::Warn)] {
        let api = alt_api::start_with(alt_api::Options {
            replayed_values: Some(("false", replay_says)),
            ..alt_api::Options::default()
        })
        .await;
        let report = run_profile(profile(&api, |t| t.to_owned()), &["replay-fidelity"]).await;
        let o = &report.checks[0];
        assert_eq!(o.verdict, verdict, "{}", table(&report));
        if verdict == Verdict::Warn {
            assert!(
                o.summary.contains("with `Idempotent-Replayed: false`"),
                "{}",
                o.summary
            );
        }
        let ends = |step: &str| -> Vec<AttemptEnd> {
            let lane = o.timeline.lanes.iter().find(|l| l.name == step);
            lane.expect(step).attempts.iter().map(|a| a.end).collect()
        };
        assert_eq!(ends("original"), [AttemptEnd::Success], "{replay_says}");
        let replay = match replay_says {
            "true" => AttemptEnd::Replay,
            _ => AttemptEnd::Success,
        };
        assert_eq!(ends("replay"), [replay], "{replay_says}");
    }
}

/// Evidence shows the replay marker the contract declares, whatever its name, beside the
/// headers it always shows: a reader sees the header replay-fidelity judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn evidence_shows_the_declared_replay_header() {
    const REPLAYED: &str = r#"version: 1
id: replayed
title: A replay, judged against a status it cannot have so that its evidence is kept
level: MUST
reference: "test"
steps:
  - {name: original, op: create, key: K1, via: direct}
  - {name: replay, op: create, key: K1, via: direct}
assert:
  - status: {step: replay, in: [418]}
"#;
    let api = alt_api::start_with(alt_api::Options {
        replayed_header: Some("x-served-from-cache"),
        ..alt_api::Options::default()
    })
    .await;
    let edit = |text: &str| {
        text.replace(
            "  mismatch_status: [422]\n",
            "  mismatch_status: [422]\n  replayed_header: X-Served-From-Cache\n",
        )
    };
    let report = run_scenario(profile(&api, edit), REPLAYED).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    let replay = o
        .evidence
        .iter()
        .find(|e| e.request.step == "replay")
        .and_then(|e| e.response.as_ref())
        .expect("the replay's response is in the evidence");
    assert!(
        replay
            .headers
            .iter()
            .any(|(n, v)| n == "x-served-from-cache" && v == "true"),
        "{:?}",
        replay.headers
    );
}

/// A profile's `checks_at_once: 1` runs one check at a time (no check starts before the one
/// before it finished), and every verdict is the one the same catalogue gets side by side: how
/// many checks run at once changes the time, never a verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_check_at_a_time_gives_the_verdicts_of_side_by_side() {
    let api = alt_api::start().await;
    let side_by_side = run_profile(profile(&api, str::to_owned), &[]).await;
    let one_at_a_time = profile(&api, |t| {
        t.replace("name: alt-api\n", "name: alt-api\nchecks_at_once: 1\n")
    });
    assert_eq!(
        one_at_a_time
            .checks_at_once
            .as_ref()
            .and_then(|n| n.value.get()),
        Some(1)
    );
    let mut opts = RunOptions::new(Target::Profile(Box::new(one_at_a_time)));
    opts.parallelism = 8;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let events = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            seen.push(event);
        }
        seen
    });
    let serial = run(opts, tx).await.expect("the run starts");
    let events = events.await.expect("events end");
    let mut running = 0;
    for event in &events {
        match event {
            idemspec::model::RunEvent::CheckStarted { id } => {
                running += 1;
                assert_eq!(running, 1, "`{id}` started beside another check");
            }
            idemspec::model::RunEvent::CheckFinished(_) => running -= 1,
            _ => {}
        }
    }
    let verdicts = |r: &RunReport| -> Vec<(String, Verdict)> {
        r.checks.iter().map(|c| (c.id.clone(), c.verdict)).collect()
    };
    assert_eq!(
        verdicts(&serial),
        verdicts(&side_by_side),
        "one at a time:\n{}\nside by side:\n{}",
        table(&serial),
        table(&side_by_side)
    );
}

/// `checks_at_once` out of its range is a located load error.
#[test]
fn checks_at_once_out_of_range_is_located() {
    let text = alt_api::PROFILE.replace("name: alt-api\n", "name: alt-api\nchecks_at_once: 0\n");
    let err = TargetProfile::load("alt.yaml", &text, &|_| {
        Some("http://127.0.0.1:1".to_owned())
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("checks_at_once: 0 is out of range; expected 1 to 64"),
        "{err}"
    );
    assert_eq!(err.line, 5, "{err}");
    for (written, says) in [
        ("-1", "checks_at_once: -1 is out of range; expected 1 to 64"),
        (
            "1.5",
            "checks_at_once: 1.5 is not a whole number; expected 1 to 64",
        ),
        (
            "'8'",
            "checks_at_once: \"8\" is text; expected a whole number from 1 to 64",
        ),
        ("true", "checks_at_once: true is not a number"),
        (
            "99999999999999999999",
            "checks_at_once: a number that large is out of range",
        ),
    ] {
        let text = alt_api::PROFILE.replace(
            "name: alt-api\n",
            &format!("name: alt-api\nchecks_at_once: {written}\n"),
        );
        let err = TargetProfile::load("alt.yaml", &text, &|_| {
            Some("http://127.0.0.1:1".to_owned())
        })
        .unwrap_err();
        assert!(err.to_string().contains(says), "{written}: {err}");
        assert_eq!(err.line, 5, "{written}: {err}");
    }
}

/// A rule the profile overrode is named as the profile's, over its preset: the alt API replays a
/// 500, which the article preset forbids and `replays_5xx: true` allows, and its mismatch is a
/// 422, which the profile declares; the sentences say which field set the rule, not "as the
/// article contract says" of what the article preset says the opposite of.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rule_the_profile_overrode_is_named_as_the_profiles() {
    let api = alt_api::start().await;
    let overridden = profile(&api, |t| {
        t.replace(
            "  preset: stripe-v1\n",
            "  preset: article\n  replays_5xx: true\n  key_required: false\n",
        )
    });
    let report = run_profile(overridden, &["failed-not-cached"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
    assert!(
        o.summary
            .contains("as the profile's `replays_5xx: true` (over the article preset) says"),
        "{}",
        o.summary
    );
    // A mismatch status the API does not answer, declared by the profile: the FAIL names it.
    let wrong = profile(&api, |t| {
        t.replace("  mismatch_status: [422]\n", "  mismatch_status: [409]\n")
    });
    let report = run_profile(wrong, &["fingerprint-mismatch"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary.contains(
            "under the profile's `mismatch_status: [409]` (over the stripe-v1 preset), got 422"
        ),
        "{}",
        o.summary
    );
}

/// A layer that stores only `200` and `201` (`stores: [200, 201]`): its failed create is re-run,
/// as the contract says (failed-not-cached PASSes; under the preset's stored 5xx it FAILs); a
/// retried DELETE whose `204` it did not keep answers 404, the doom loop, which still FAILs, in a
/// sentence that says the contract stores no 204. A profile whose `replays_5xx` and `stores`
/// disagree is refused at load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_layer_stores_is_the_contracts_stores() {
    let api = alt_api::start_with(alt_api::Options {
        stores_only: Some(&[200, 201]),
        ..alt_api::Options::default()
    })
    .await;
    let only = |t: &str| {
        t.replace(
            "  preset: stripe-v1\n",
            "  preset: stripe-v1\n  stores: [200, 201]\n",
        )
    };
    let report = run_profile(
        profile(&api, only),
        &["failed-not-cached", "delete-doom-loop"],
    )
    .await;
    let failed = crate::support::reference::outcome(&report, "failed-not-cached");
    assert_eq!(failed.verdict, Verdict::Pass, "{}", table(&report));
    assert!(
        failed.summary.contains("ran again and succeeded"),
        "{}",
        failed.summary
    );
    let doom = crate::support::reference::outcome(&report, "delete-doom-loop");
    assert_eq!(doom.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        doom.summary.contains(
            "the profile's `stores: [200, 201]` (over the stripe-v1 preset) stores no 204"
        ),
        "{}",
        doom.summary
    );
    // The preset's `stores` (5xx included) expects the failure replayed: this layer re-ran it.
    let report = run_profile(profile(&api, str::to_owned), &["failed-not-cached"]).await;
    judged_once(&report, Verdict::Fail, "the stripe-v1 contract says a 5");
    let both = |t: &str| {
        t.replace(
            "  preset: stripe-v1\n",
            "  preset: stripe-v1\n  stores: [2xx, 4xx]\n  replays_5xx: true\n",
        )
    };
    let err = load(&api, &both(alt_api::PROFILE)).expect_err("disagreeing fields are refused");
    assert!(err.to_string().contains("disagree"), "{err}");
}

/// A SKIP names the one cause that holds (a delete that sends no key is that, never "no key, or
/// not covered"), and a keyed DELETE the contract does not cover is not skipped: what the API did
/// with the key is recorded as INFO naming the contract. A retried DELETE that answered 404 (the
/// doom loop) is on the page even where the contract claims nothing for DELETE.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_skip_names_the_one_cause_and_an_uncovered_delete_is_recorded() {
    let api = alt_api::start().await;
    let keyless = profile(&api, |t| {
        t.replace(
            "delete: {path: \"/api/machines/{id}\"}",
            "delete: {path: \"/api/machines/{id}\", key: never}",
        )
    });
    let report = run_profile(keyless, &["delete-doom-loop"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Skip, "{}", table(&report));
    assert_eq!(
        o.summary,
        "the profile's delete sends no idempotency key (`operations.delete.key`)"
    );

    // leasebroker with its DELETE not keyed (`--flaw no-delete-replay`), under a contract that
    // does not cover DELETE: the 404 is recorded, not skipped, and not judged a FAIL.
    let server = idemspec::reference::ReferenceServer::start(
        &crate::support::reference::reference(&["no-delete-replay"], None),
    )
    .await
    .expect("the reference starts");
    let mut uncovered = server.profile().expect("the bundled profile loads");
    uncovered.contract.value.covers = Some(vec![
        idemspec_scenarios::profile::Covered::Create,
        idemspec_scenarios::profile::Covered::Action,
    ]);
    let report = run_profile(uncovered, &["delete-doom-loop"]).await;
    server.shutdown().await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Info, "{}", table(&report));
    assert!(o.summary.contains("404"), "{}", o.summary);
    assert!(
        o.summary
            .contains("recorded, not judged: the contract does not cover DELETE (`contract.covers` lacks `delete`)"),
        "{}",
        o.summary
    );
}

/// fingerprint-mismatch's SHOULD comparison of the mismatch with an in-flight conflict is made
/// every run, not by chance: against an API whose creates take 1 ms, its in-flight request is
/// kept in flight by the profile's `slow` variant, the second same-key request leaves once the
/// first is on the wire, and whichever of the two the API refused is compared (once: the default
/// body had finished 50 ms later in some runs, and a WARN turned into a PASS).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_in_flight_comparison_is_arranged_not_left_to_chance() {
    let api = alt_api::start_with(alt_api::Options {
        create_latency: Some(std::time::Duration::from_millis(1)),
        ..alt_api::Options::default()
    })
    .await;
    for run in 0..3 {
        let report = run_profile(profile(&api, str::to_owned), &["fingerprint-mismatch"]).await;
        let o = &report.checks[0];
        assert_eq!(o.verdict, Verdict::Pass, "run {run}: {}", table(&report));
        assert!(
            o.summary.contains("conflicts are distinguishable"),
            "run {run}: {}",
            o.summary
        );
    }
    // Without a `slow` variant the comparison is made only by chance, and the sentence says so
    // when it was not.
    let no_slow = profile(&api, |t| {
        let start = t
            .find("      slow:")
            .expect("the fixture has a slow variant");
        let end = start + t[start..].find("      hangs:").expect("then hangs");
        format!("{}{}", &t[..start], &t[end..])
    });
    assert!(no_slow.operations.create.variants.slow.is_none());
    let report = run_profile(no_slow, &["fingerprint-mismatch"]).await;
    let o = &report.checks[0];
    let not_compared = o
        .notes
        .iter()
        .any(|n| n.contains("the conflicts could not be compared"));
    assert!(
        o.summary.contains("conflicts are distinguishable") || not_compared,
        "{}",
        table(&report)
    );
    // A comparison not made is never called held.
    assert!(
        !(not_compared && o.summary.contains("conflicts are distinguishable")),
        "{}",
        table(&report)
    );
}

/// A side-effect counter is read only while no handler another check started can move it: a
/// check whose client gives up on a hanging create leaves a handler that finishes 200 ms later and
/// allocates an IP, yet resumable-side-effects (which reads the global counters) sees its own
/// growth alone, run after run, because the checks that read the counters run before any other
/// starts a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_counter_moved_by_another_checks_handler_is_not_read() {
    // Without an arming crash hook, `hangs` is the hanging request itself.
    let no_crash = |t: &str| {
        let start = t.find("  crash:\n").expect("the fixture has a crash hook");
        let end = start + t[start..].find("  restart:\n").expect("then restart");
        format!("{}{}", &t[..start], &t[end..])
    };
    let hanger = "version: 1
id: hanger
title: gives up on a create whose handler goes on
level: MUST
reference: test
requires: [abandon]
steps:
  - {name: abandoned, op: create, key: K1, body: hangs, via: direct, timeout: 100ms}
assert:
  - no_response: {step: abandoned}
";
    // A fresh API per run: a handler one run left running can still move the next run's
    // counters (docs/profile-reference.md, `side_effects`).
    for round in 0..3 {
        let api = alt_api::start_with(alt_api::Options {
            hang_for: Some(std::time::Duration::from_millis(200)),
            ..alt_api::Options::default()
        })
        .await;
        let mut opts = RunOptions::new(Target::Profile(Box::new(profile(&api, no_crash))));
        opts.only = vec!["hanger".into(), "resumable-side-effects".into()];
        opts.scenarios = vec![
            idemspec_scenarios::scenario::Scenario::load("hanger.yaml", hanger)
                .expect("the scenario loads"),
        ];
        let report = run_with(opts).await;
        for id in ["resumable-side-effects", "hanger"] {
            let o = crate::support::reference::outcome(&report, id);
            assert_eq!(
                o.verdict,
                Verdict::Pass,
                "round {round}: {}",
                table(&report)
            );
        }
        // The abandoned handler did finish, allocating an IP, after its check ended.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let stats: serde_json::Value = reqwest::get(format!("{}/_admin/stats", api.admin_url()))
            .await
            .expect("stats")
            .json()
            .await
            .expect("json");
        assert_eq!(stats["ips"].as_u64(), Some(2), "round {round}: {stats}");
    }
}

/// A create's key sent to an action and refused as a mismatch is judged by the contract's scope:
/// where keys are scoped per endpoint (the article, or a profile's `per_endpoint: true`) the
/// action never ran, a SHOULD broken (WARN), and the sentence names who set the rule; where the
/// contract leaves scope to the server (stripe-v1) the refusal is right (once: PASS under both).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_action_with_the_creates_key_is_judged_by_the_contracts_scope() {
    let api = alt_api::start_with(alt_api::Options {
        keys_across_endpoints: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, str::to_owned), &["endpoint-scope"]).await;
    judged_once(&report, Verdict::Pass, "`action` answered 422");
    let article = profile(&api, |t| {
        t.replace("  preset: stripe-v1\n", "  preset: article\n")
    });
    let report = run_profile(article, &["endpoint-scope"]).await;
    judged_once(
        &report,
        Verdict::Warn,
        "no refusal: under the article contract the same key on another endpoint is an \
         operation of its own",
    );
    let per_endpoint = profile(&api, |t| {
        t.replace(
            "  preset: stripe-v1\n",
            "  preset: stripe-v1\n  per_endpoint: true\n",
        )
    });
    let report = run_profile(per_endpoint, &["endpoint-scope"]).await;
    judged_once(
        &report,
        Verdict::Warn,
        "under the profile's `per_endpoint: true` (over the stripe-v1 preset)",
    );
    // Where keys are per endpoint, the action runs and the scope holds under every contract.
    let scoped = alt_api::start().await;
    let report = run_profile(
        profile(&scoped, |t| {
            t.replace("  preset: stripe-v1\n", "  preset: article\n")
        }),
        &["endpoint-scope"],
    )
    .await;
    judged_once(&report, Verdict::Pass, "`action` answered 202");
}

/// Of two same-key requests, the one the API took up second is the one refused as in flight,
/// whichever was sent first: with the first held 300 ms on the way in by the proxy (after
/// `wait: {sent: first}` saw it leave), the second runs the slow handler and the first is
/// refused, and `distinct_problems` compares the mismatch with that refusal, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_in_flight_refusal_is_found_on_whichever_request_got_it() {
    let api = alt_api::start().await;
    let scenario = "version: 1
id: second-overtakes-first
title: the request held on the way in is the one refused
level: SHOULD
reference: test
requires: [body_variant, slow]
faults:
  - name: late
    match: {header: {name: x-idemspec-step, equals: first}}
    fault: {delay_request: {duration: 300ms}}
steps:
  - {name: original, op: create, key: K1}
  - {name: changed, op: create, key: K1, body: alt}
  - {name: first, op: create, key: K2, principal: B, background: true, body: slow}
  - {wait: {sent: first}}
  - {name: second, op: create, key: K2, principal: B, via: direct, body: slow}
assert:
  - status: {step: second, in: [2xx]}
    precondition: true
  - distinct_problems: {steps: [changed, [second, first]]}
";
    let report = run_scenario(profile(&api, str::to_owned), scenario).await;
    judged_once(&report, Verdict::Pass, "conflicts are distinguishable");
    let o = &report.checks[0];
    assert!(o.summary.contains("`first` 409"), "{}", o.summary);
    assert!(!o.summary.contains("`second` 409"), "{}", o.summary);
}

/// A `409` in flight and a `409` mismatch that differ by `Retry-After` and by their body's error
/// code are distinguishable (once: "both answered 409: a client cannot tell a retryable conflict
/// from a terminal one", from the status and problem type alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conflicts_told_apart_by_retry_after_and_error_code_are_distinguishable() {
    let api = alt_api::start_with(alt_api::Options {
        plain_conflicts: true,
        ..alt_api::Options::default()
    })
    .await;
    let both_409 = profile(&api, |t| {
        t.replace("  mismatch_status: [422]\n", "  mismatch_status: [409]\n")
    });
    let report = run_profile(both_409, &["fingerprint-mismatch"]).await;
    judged_once(&report, Verdict::Pass, "conflicts are distinguishable");
}

/// Refusals known by their body: both conflicts are a `409`, told apart only by `error.code`. With
/// the codes declared (`mismatch_body`, `in_flight_body`) each check reads each answer as the
/// refusal it is; with a mismatch code the API never sends, the reused key's `409` is not taken for
/// the mismatch (as an unrelated `400` under a status-only `stripe-v1` contract would be), and
/// fingerprint-mismatch FAILs naming the condition it looked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refusals_declared_by_their_body_are_read_by_their_body() {
    let api = alt_api::start_with(alt_api::Options {
        plain_conflicts: true,
        ..alt_api::Options::default()
    })
    .await;
    let declared = |mismatch_code: &str| {
        let mismatch_code = mismatch_code.to_owned();
        profile(&api, move |t| {
            t.replace(
                "  mismatch_status: [422]\n",
                &format!(
                    "  mismatch_status: [409]\n  mismatch_body: {{at: $.error.code, is: {mismatch_code}}}\n  \
                     in_flight_body: {{at: $.error.code, is: [request_in_progress, busy]}}\n"
                ),
            )
        })
    };
    let only = ["fingerprint-mismatch", "concurrent-same-key"];
    let right = run_profile(declared("idempotency_key_reused"), &only).await;
    for check in &right.checks {
        assert_eq!(check.verdict, Verdict::Pass, "{}", table(&right));
    }
    let wrong = run_profile(declared("key_mismatch"), &["fingerprint-mismatch"]).await;
    let o = &wrong.checks[0];
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&wrong));
    assert!(
        o.summary.contains("where $.error.code is key_mismatch"),
        "the sentence names what the mismatch's body must say: {}",
        o.summary
    );
}

/// An action the API refuses whatever its key (here: a path it does not serve) says nothing about
/// scope, even where its status is the one the contract declares for the mismatch: endpoint-scope
/// sends the action again with a key of its own, and when that control is refused too the check
/// is UNKNOWN naming it, not a PASS that took an unrelated refusal for the mismatch rejection.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_action_refused_whatever_its_key_leaves_endpoint_scope_unknown() {
    let api = alt_api::start().await;
    let broken_action = profile(&api, |t| {
        t.replace("  mismatch_status: [422]\n", "  mismatch_status: [404]\n")
            .replace(
                "/api/machines/{id}/restart",
                "/api/machines/{id}/no-such-action",
            )
    });
    let report = run_profile(broken_action, &["endpoint-scope"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        o.summary.contains("`control`") && o.summary.contains("404"),
        "the sentence names the control and its answer: {}",
        o.summary
    );
    // With the action the API serves, the control holds and the check judges scope.
    let report = run_profile(profile(&api, str::to_owned), &["endpoint-scope"]).await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
}

/// An API whose idempotency state is one record per principal (a layer that keeps the key in the
/// caller's session) cannot take two checks at once: side by side they erase each other's
/// records. Its profile says `checks_at_once: 1`, and then every check that keeps its records
/// passes, as each does alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_target_that_cannot_take_two_checks_at_once_is_judged_one_at_a_time() {
    let api = alt_api::start_with(alt_api::Options {
        one_record_per_principal: true,
        ..alt_api::Options::default()
    })
    .await;
    let only = [
        "lost-response",
        "never-processed",
        "concurrent-same-key",
        "replay-fidelity",
        "reboot-once",
        "create-response-shape",
    ];
    let serial = profile(&api, |t| {
        t.replace("name: alt-api\n", "name: alt-api\nchecks_at_once: 1\n")
    });
    let report = run_profile(serial, &only).await;
    for check in &report.checks {
        assert_eq!(check.verdict, Verdict::Pass, "{}", table(&report));
    }
    // Side by side, the same checks as one principal erase each other's records: at least one
    // retry finds its record gone (what `checks_at_once` is for). Reported, not asserted: which
    // check loses depends on the interleaving.
    let side_by_side = run_profile(profile(&api, str::to_owned), &only).await;
    println!("side by side:\n{}", table(&side_by_side));
}

/// A 5xx the profile declares for a refusal (a library whose duplicates get a 500) is accepted as
/// declared, and reported: the check's notes say a 5xx tells a client the server failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_declared_5xx_refusal_is_reported_not_silently_accepted() {
    let api = alt_api::start_with(alt_api::Options {
        in_flight_status: Some(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
        create_latency: Some(std::time::Duration::from_millis(800)),
        ..alt_api::Options::default()
    })
    .await;
    let declared = profile(&api, |t| {
        t.replace(
            "  mismatch_status: [422]\n",
            "  mismatch_status: [422]\n  in_flight_status: [500]\n",
        )
    });
    let report = run_profile(declared, &["client-timeout-in-flight"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
    assert!(
        o.notes.iter().any(|n| n.contains(
            "the contract declares 500 for a request still in flight (`contract.in_flight_status`)"
        )),
        "{:?}\n{}",
        o.notes,
        o.summary
    );
}

/// "Stored and replayed" only where the response says so: a retry that got the same 500 again
/// with the contract's replay marker was replayed; without it, the sentence says what was seen
/// (the same 500 again, the request not run again) and that it was not re-run, not how.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_500_again_is_called_a_replay_only_where_marked() {
    let article = |t: &str| {
        t.replace(
            "  preset: stripe-v1\n",
            "  preset: article\n  key_required: false\n",
        )
    };
    let api = alt_api::start().await;
    let report = run_profile(profile(&api, article), &["failed-not-cached"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary
            .contains("was stored and replayed (the retry carries `Idempotent-Replayed`)"),
        "{}",
        o.summary
    );
    let unmarked = alt_api::start_with(alt_api::Options {
        replayed_header: Some("X-Cached"),
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&unmarked, article), &["failed-not-cached"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary.contains("again, without `Idempotent-Replayed`")
            && !o.summary.contains("stored and replayed (the retry carries"),
        "{}",
        o.summary
    );
}

/// Too few resources where creates with as many different keys each succeeded is said as what it
/// is: different keys were merged (an API that cuts keys to their first characters).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merged_keys_are_named_as_such() {
    let api = alt_api::start_with(alt_api::Options {
        key_prefix: Some(12),
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, str::to_owned), &["concurrent-same-key"]).await;
    let o = &report.checks[0];
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary
            .contains("where 3 creates of alpha with different keys (")
            && o.summary.contains(
                "each succeeded: requests with different keys were merged into one resource"
            ),
        "{}",
        o.summary
    );
}

/// Each shape's test double with a defect planted in its idempotency layer, judged by its worked
/// profile: the check that owns the rule FAILs, and where the defect breaks one rule, no other
/// check FAILs or goes UNKNOWN. A key ignored breaks every rule (lost-response is named); keys
/// shared by principals are cross-tenant's; a mismatch answered with the original is
/// fingerprint-mismatch's where the contract says `reject` and correct where it says `original`
/// (Google documents it); a mismatch run as a request of its own is fingerprint-mismatch's under
/// either.
#[rstest::rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_planted_flaw_in_each_shape_fails_the_check_that_owns_it(
    #[values(Shape::Google, Shape::AwsJson, Shape::Stripe, Shape::AwsQuery)] shape: Shape,
    #[values(
        alt_api::Flaw::IgnoresKey,
        alt_api::Flaw::KeysNotPerPrincipal,
        alt_api::Flaw::MismatchNotRejected,
        alt_api::Flaw::MismatchRunsAgain
    )]
    flaw: alt_api::Flaw,
) {
    use alt_api::Flaw;
    let api = alt_api::start_with(alt_api::Options {
        flaw: Some(flaw),
        ..shape.options()
    })
    .await;
    let report = run_profile(profile(&api, |_| shape.profile().to_owned()), &[]).await;
    let broken: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail | Verdict::Unknown))
        .map(|c| c.id.as_str())
        .collect();
    let owner = match (flaw, shape) {
        (Flaw::IgnoresKey, _) => {
            let lost = crate::support::reference::outcome(&report, "lost-response");
            assert_eq!(lost.verdict, Verdict::Fail, "{}", table(&report));
            return;
        }
        (Flaw::MismatchNotRejected, Shape::Google) => None,
        (Flaw::KeysNotPerPrincipal, _) => Some("cross-tenant"),
        (Flaw::MismatchNotRejected | Flaw::MismatchRunsAgain, _) => Some("fingerprint-mismatch"),
        // Judged in contract_reading.rs, under a contract that re-runs a failure.
        (Flaw::SucceedsBehindFailure, _) => Some("failed-not-cached"),
        // Judged in contract_reading.rs, under a contract that declares a wait.
        (Flaw::WaiterRunsAgain | Flaw::WaitsUnbounded, _) => Some("concurrent-same-key"),
        // A SHOULD's (key-validation WARNs), judged in contract_reading.rs: nothing FAILs.
        (Flaw::BareRefusals, _) => None,
    };
    assert_eq!(broken, Vec::from_iter(owner), "{}", table(&report));
    if let Some(owner) = owner {
        let o = crate::support::reference::outcome(&report, owner);
        assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    }
}

/// The alt-api profile for its XML answers (`Options::xml_answers`): the id, the list's items, the
/// action's counter, a mismatch's body and every refusal's error shape (its problem document's
/// `type`, now under the root element) read through the XML-as-JSON mapping.
fn as_xml_profile(t: &str) -> String {
    let mut t = t.to_owned();
    for (json, xml) in [
        ("    id: $.data.uuid\n", "    id: $.Response.data.uuid\n"),
        (
            "    items: \"$.data[*]\"\n",
            "    items: \"$.Response.data.item[*]\"\n",
        ),
        (
            "effect: $.data.restarts}",
            "effect: $.Response.data.restarts}",
        ),
        (
            "  mismatch_status: [422]\n",
            "  mismatch_status: [400, 422]\n  mismatch_body: {at: $.Response.type, is: \
             \"https://alt-api.test/problems/key-reused-with-different-request\"}\n",
        ),
        (
            "  error_shape: problem",
            "  error_shape: {at: $.Response.type}",
        ),
    ] {
        assert!(t.contains(json), "the fixture's {json}");
        t = t.replace(json, xml);
    }
    t
}

/// An API that answers in XML (as EC2's Query protocol does) is read through the XML-as-JSON
/// mapping: the created id, the list's items, the action's counter and a refusal's body are all
/// JSONPaths over it, and the catalogue passes (its refusals' error shape declared where the XML
/// puts it); a key ignored still FAILs lost-response, so the verdicts are read from the XML, not
/// defaulted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_api_answering_xml_is_read_through_its_mapping() {
    let xml = as_xml_profile;
    let api = alt_api::start_with(alt_api::Options {
        xml_answers: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, xml), &[]).await;
    assert_passes(&report, 14);
    let flawed = alt_api::start_with(alt_api::Options {
        xml_answers: true,
        flaw: Some(alt_api::Flaw::IgnoresKey),
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&flawed, xml), &["lost-response"]).await;
    judged_once(&report, Verdict::Fail, "2 resources with marker");
}

/// An API that names the resource in the body of its get, delete and action (`POST` with
/// `Id=…`, as EC2's Query actions do) is driven by operations whose paths hold no `{id}`: the id
/// goes into each body, form-encoded, and the catalogue passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ids_in_operation_bodies_pass_the_catalogue() {
    let by_body = |t: &str| {
        let form = "headers: {Content-Type: application/x-www-form-urlencoded}";
        let mut t = t.to_owned();
        for (path, by_id) in [
            (
                "  get: {path: \"/api/machines/{id}\"}",
                format!("  get: {{method: POST, path: /api/machines/by-id/get, body: 'Id={{id}}', {form}}}"),
            ),
            (
                "  delete: {path: \"/api/machines/{id}\"}",
                format!("  delete: {{method: POST, path: /api/machines/by-id/delete, body: 'Id={{id}}', {form}}}"),
            ),
            (
                "  action: {path: \"/api/machines/{id}/restart\", effect: $.data.restarts}",
                format!("  action: {{path: /api/machines/by-id/restart, body: 'Id={{id}}', effect: $.data.restarts, {form}}}"),
            ),
        ] {
            assert!(t.contains(path), "the fixture's {path}");
            t = t.replace(path, &by_id);
        }
        t
    };
    let api = alt_api::start_with(alt_api::Options {
        ids_in_body: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(profile(&api, by_body), &[]).await;
    assert_passes(&report, 15);
    // Neither the path nor the body naming the id is refused at load, located.
    let text = by_body(alt_api::PROFILE).replace("body: 'Id={id}', ", "");
    let err = load(&api, &text).expect_err("an operation that names no id");
    assert!(
        err.to_string().contains("or the operation's body `{id}`"),
        "{err}"
    );
}

/// A replay that shows the resource as it stands now (a member added since) is a replay where
/// the contract says replays show the current state (the `aws-client-token` preset, as AWS
/// documents), and replay-fidelity's defect where the profile says replays are the stored
/// response.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_in_its_current_state_is_judged_by_the_contract() {
    let api = alt_api::start_with(alt_api::Options {
        rerender_replays: true,
        ..Shape::AwsJson.options()
    })
    .await;
    let report = run_profile(profile(&api, |_| AWS_JSON_SHAPED.to_owned()), &[]).await;
    assert_passes(&report, 14);
    let stored = |_: &str| {
        AWS_JSON_SHAPED.replace(
            "  preset: aws-client-token\n",
            "  preset: aws-client-token\n  replays: stored\n",
        )
    };
    let report = run_profile(profile(&api, stored), &["replay-fidelity"]).await;
    judged_once(&report, Verdict::Fail, "body differs at byte");
}
