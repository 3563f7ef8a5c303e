//! `idemspec client` proven on clients whose defects are known: the bundled example client
//! (`clients/example/create.py`, Python standard library) passes every check, and each of its
//! deliberately wrong variants (`--flaw NAME`) FAILs exactly the check about its defect — every
//! other check PASSes, or is INFO where the defect leaves nothing to judge (no key to compare).
//! A command that cannot be judged is UNKNOWN with its cause, never a hang and never a PASS;
//! a client profile with errors is refused with file:line:column. Real processes, real sockets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use idemspec::client_check::{self, ClientOptions};
use idemspec::model::{RunReport, Verdict};
use idemspec_scenarios::client_profile::ClientProfile;
use rstest::rstest;

use crate::support::redact::redacted;

/// The repository root, where the README's commands run.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the suite is one folder below the root")
        .to_owned()
}

/// The example client's command line with `flags` (none where empty), as every check runs it.
fn example_command(flags: &str) -> String {
    python(&root().join("clients/example/create.py"), flags)
}

/// The command line that runs the Python client `script` with `flags` (none where empty).
fn python(script: &std::path::Path, flags: &str) -> String {
    match flags.trim() {
        "" => format!("python3 '{}'", script.display()),
        flags => format!("python3 '{}' {flags}", script.display()),
    }
}

pub(crate) const PROFILE: &str = "clients/example/client.yaml";

pub(crate) fn example_profile() -> ClientProfile {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile exists");
    ClientProfile::load(PROFILE, &text, &|_| None).expect("the example profile is valid")
}

/// Runs every client check on the example client with `flaw`.
async fn judge(flaw: Option<&str>) -> RunReport {
    judge_keyed(flaw, None).await
}

/// Runs every client check on the example client with `flaw`, its key where `key_in` says
/// (create.py's `--key-in`: `body`, `form`, `query` or `header:NAME`; `+gzip` compresses the
/// body), and the profile's
/// `contract.key_at` saying the same.
async fn judge_keyed(flaw: Option<&str>, key_in: Option<&str>) -> RunReport {
    let flags = flaw.map(|f| format!(" --flaw {f}")).unwrap_or_default();
    judge_with(flags, key_in).await
}

/// Runs every client check on the example client with `flags` (each after a space), its key
/// where `key_in` says, as [`judge_keyed`].
async fn judge_with(mut flags: String, key_in: Option<&str>) -> RunReport {
    let mut profile = example_profile();
    if let Some(place) = key_in {
        flags.push_str(&format!(" --key-in {place}"));
        let key_at = match place.trim_end_matches("+gzip") {
            "body" => "{json: clientToken}".to_owned(),
            "form" => "{form: ClientToken}".to_owned(),
            "query" => "{query: requestId}".to_owned(),
            header => format!("{{header: {}}}", header.trim_start_matches("header:")),
        };
        let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
        let text = text.replace(
            "  preset: article ",
            &format!("  key_at: {key_at}\n  preset: article "),
        );
        profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("a valid profile");
    }
    let options = ClientOptions::new(profile, example_command(&flags));
    run_client(options).await
}

/// Runs `options`, bounded at 120 s.
pub(crate) async fn run_client(options: ClientOptions) -> RunReport {
    let (sink, _events) = tokio::sync::mpsc::unbounded_channel();
    tokio::time::timeout(Duration::from_secs(120), client_check::run(options, sink))
        .await
        .expect("a client run is bounded")
        .expect("the client run starts")
}

pub(crate) fn verdicts(report: &RunReport) -> BTreeMap<String, Verdict> {
    report
        .checks
        .iter()
        .map(|c| (c.id.clone(), c.verdict))
        .collect()
}

/// The flaw matrix of the client side (its name puts it in CI's repeated `flaw_matrix` rounds):
/// each deliberately wrong client against every check. `expected` lists the checks that do not
/// PASS; every other check must.
#[rstest]
#[case::correct_client(None, &[])]
#[case::new_key_per_attempt(Some("new-key-per-attempt"), &[("same-key", Verdict::Fail)])]
#[case::retry_mismatch(Some("retry-mismatch"), &[("no-retry-4xx", Verdict::Fail)])]
// The permanent 4xx carries `Retry-After: 1`; the in-flight 409 (also with one) is still retried.
#[case::retries_4xx_with_retry_after(
    Some("retries-4xx-with-retry-after"),
    &[("no-retry-4xx", Verdict::Fail)]
)]
#[case::no_backoff(Some("no-backoff"), &[("backoff", Verdict::Fail)])]
#[case::unbounded(Some("unbounded"), &[("bounded-retries", Verdict::Fail)])]
#[case::no_key(
    Some("no-key"),
    &[
        ("key-present", Verdict::Fail),
        // Nothing to compare without a key: recorded, each naming key-present.
        ("same-key", Verdict::Info),
        ("distinct-keys", Verdict::Info),
        ("key-format", Verdict::Info),
    ]
)]
#[tokio::test]
async fn client_flaw_matrix(#[case] flaw: Option<&str>, #[case] expected: &[(&str, Verdict)]) {
    judged_as(judge(flaw).await, flaw, expected);
}

/// The client flaw matrix for a `Retry-After` of an hour (retry-after-bound, decided within its
/// 5 s bound): the example client's `--long-retry-after` policies, the ways the field handles
/// one. Giving up with the error and retrying after its own back-off (the header ignored) PASS;
/// sleeping the hour, and capping it at 60 s (which 5 s cannot tell from the hour), WARN; a cap
/// under the bound PASSes named as a cap; a 60 s cap the profile documents (`retry_after_cap`) is
/// recorded (INFO). Every other check keeps its verdict.
#[rstest]
#[case::gives_up("", "", &[], "gave up within the bound")]
#[case::ignores_it("--long-retry-after ignore", "", &[], "it ignores a wait this long")]
#[case::caps_it_under_the_bound(
    "--long-retry-after cap --retry-after-cap 2",
    "",
    &[],
    "it caps the wait near 2"
)]
#[case::sleeps_it(
    "--long-retry-after sleep",
    "",
    &[("retry-after-bound", Verdict::Warn)],
    "without a cap its caller (a CI job) waits the hour"
)]
#[case::caps_it_at_a_minute(
    "--long-retry-after cap",
    "",
    &[("retry-after-bound", Verdict::Warn)],
    "a cap above"
)]
#[case::caps_it_at_a_documented_minute(
    "--long-retry-after cap",
    "retry_after_cap: 60s\n",
    &[("retry-after-bound", Verdict::Info)],
    "as the profile's `retry_after_cap: 1m` allows"
)]
#[tokio::test]
async fn client_retry_after_flaw_matrix(
    #[case] flags: &str,
    #[case] profile_extra: &str,
    #[case] expected: &[(&str, Verdict)],
    #[case] said: &str,
) {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let profile = ClientProfile::load(PROFILE, &format!("{text}{profile_extra}"), &|_| None)
        .expect("a valid profile");
    let options = ClientOptions::new(profile, example_command(flags));
    let report = run_client(options).await;
    let bound = report
        .checks
        .iter()
        .find(|c| c.id == "retry-after-bound")
        .expect("retry-after-bound ran");
    let all = format!("{} | {:?}", bound.summary, bound.notes);
    assert!(all.contains(said), "{flags}: {all}");
    // Decided at its bound, 5 s after the answer, not by waiting the hour (or the 60 s cap).
    assert!(
        bound.duration_ms < 50_000,
        "{flags}: took {} ms",
        bound.duration_ms
    );
    judged_as(report, Some(flags), expected);
}

/// retry-after-bound's 5 s count from the hour's answer, not from the command's start: a client
/// that takes 6 s to send its first attempt is still judged (it ignores the header); and a client
/// whose own back-off after a plain 503 (5–6 s) could itself pass the bound is UNKNOWN, not
/// called a client that waits the hour.
#[rstest]
#[case::a_slow_start(
    "sleep 6; python3 clients/example/create.py --long-retry-after ignore",
    Verdict::Pass,
    "it ignores a wait this long"
)]
#[case::an_own_back_off_past_the_bound(
    "python3 clients/example/create.py --long-retry-after sleep --backoff tenpct --base-delay 5.5",
    Verdict::Unknown,
    "too long for the bound to tell a client that ignores the header from one that waits it out"
)]
#[tokio::test]
async fn retry_after_bound_counts_from_the_answer_and_says_what_it_cannot_see(
    #[case] exec: &str,
    #[case] verdict: Verdict,
    #[case] said: &str,
) {
    let mut options = ClientOptions::new(
        example_profile(),
        format!("cd '{}' && {exec}", root().display()),
    );
    options.only = vec!["retry-after-bound".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    let all = format!("{} | {:?}", check.summary, check.notes);
    assert_eq!(check.verdict, verdict, "{all}");
    assert!(all.contains(said), "{all}");
}

/// The client flaw matrix for the retry strategies the field ships that idemspec must not pass:
/// each runs every check once, and `said` is in backoff's summary or notes (the situations its
/// verdict rests on). docs/BENCHMARKS.md has each verdict over 20 runs beside a loaded machine.
#[rstest]
// The AWS SDKs' "standard" mode: full jitter from 50 ms, three attempts (within the bound of
// four); in-flight and the waits are honoured as the example does. Its draws are as short as the
// delays a heavily loaded machine adds (0.1-0.4 s at a load average of 30 on two cores), where
// backoff WARNed it instead ("first retry at once", docs/BENCHMARKS.md): a WARN is accepted,
// a PASS never.
#[case::full_jitter_from_50ms(
    "--backoff standard",
    &[("backoff", Verdict::Fail)],
    Some(Verdict::Warn),
    "retried at once, or nearly: the median delay at every retry is under 100ms"
)]
// urllib3's Retry: the first retry at once, then 500 ms, 1 s, never drawn.
#[case::immediate_first_retry(
    "--backoff immediate-first",
    &[("backoff", Verdict::Warn)],
    None,
    "retried its first failure at once"
)]
// Never retries a 502 (nor any HTTP error): judged on the resets, lost responses and timeout it
// retried; the 409 in flight and the 429 are given up on (in-flight's and rate-limit's rules), and
// a 503 with an hour's Retry-After shows nothing of the wait (it retries no 503).
#[case::transport_only(
    "--retries transport",
    &[("in-flight", Verdict::Warn), ("rate-limit", Verdict::Warn), ("retry-after-bound", Verdict::Info)],
    None,
    "after a reset ["
)]
#[case::transport_only_fixed(
    "--retries transport --backoff fixed",
    &[
        ("backoff", Verdict::Warn),
        ("in-flight", Verdict::Warn),
        ("rate-limit", Verdict::Warn),
        ("retry-after-bound", Verdict::Info),
    ],
    None,
    "the delays after a reset do not grow"
)]
#[tokio::test]
async fn client_strategy_flaw_matrix(
    #[case] flags: &str,
    #[case] expected: &[(&str, Verdict)],
    #[case] loaded: Option<Verdict>,
    #[case] said: &str,
) {
    let report = judge_with(format!(" {flags}"), None).await;
    let backoff = report
        .checks
        .iter()
        .find(|c| c.id == "backoff")
        .expect("backoff ran");
    let all = format!("{} {}", backoff.summary, backoff.notes.join(" "));
    // The verdict a loaded machine may give instead, for backoff only.
    let mut want = expected.to_vec();
    if loaded.is_some_and(|v| v == backoff.verdict) {
        want.retain(|(id, _)| *id != "backoff");
        want.push(("backoff", backoff.verdict));
    } else {
        assert!(all.contains(said), "{flags}: {all}");
    }
    judged_as(report, Some(flags), &want);
}

/// The client flaw matrix for keys outside the `Idempotency-Key` header: a JSON body member, a
/// form field, a query parameter, another header. The proxy reads the key where the profile says,
/// and every check judges it as it judges a header.
#[rstest]
#[case::key_in_body(None, "body", &[])]
#[case::key_in_form(None, "form", &[])]
#[case::key_in_query(None, "query", &[])]
// A compressed body is read as sent: its key is found where an uncompressed one would be.
#[case::key_in_gzip_form(None, "form+gzip", &[])]
#[case::key_in_gzip_body(None, "body+gzip", &[])]
#[case::key_dropped_on_retry_in_gzip_form(
    Some("key-dropped-on-retry"),
    "form+gzip",
    &[("key-present", Verdict::Fail), ("same-key", Verdict::Info)]
)]
#[case::key_in_another_header(None, "header:X-Request-Token", &[])]
#[case::new_key_per_attempt_in_body(Some("new-key-per-attempt"), "body", &[("same-key", Verdict::Fail)])]
#[case::key_dropped_on_retry_in_body(
    Some("key-dropped-on-retry"),
    "body",
    // The retries' missing key is key-present's rule; same-key records it.
    &[("key-present", Verdict::Fail), ("same-key", Verdict::Info)]
)]
#[case::key_dropped_on_retry_in_query(
    Some("key-dropped-on-retry"),
    "query",
    &[("key-present", Verdict::Fail), ("same-key", Verdict::Info)]
)]
#[tokio::test]
async fn client_flaw_matrix_keyed(
    #[case] flaw: Option<&str>,
    #[case] key_in: &str,
    #[case] expected: &[(&str, Verdict)],
) {
    judged_as(judge_keyed(flaw, Some(key_in)).await, flaw, expected);
}

/// `report` gave the checks in `expected` their verdicts and every other check PASS; each FAIL
/// shows its attempts.
pub(crate) fn judged_as(report: RunReport, flaw: Option<&str>, expected: &[(&str, Verdict)]) {
    let got = verdicts(&report);
    let want: BTreeMap<String, Verdict> = client_check::checks::list()
        .iter()
        .map(|c| {
            // create.py keeps its key in memory unless told (`--persist-key`), and the profiles
            // here do not claim persistence: restart-key records the new key it sends.
            let default = if c.id == "restart-key" {
                Verdict::Info
            } else {
                Verdict::Pass
            };
            let v = expected
                .iter()
                .find(|(id, _)| *id == c.id)
                .map_or(default, |(_, v)| *v);
            (c.id.to_owned(), v)
        })
        .collect();
    let details: Vec<String> = report
        .checks
        .iter()
        .map(|c| format!("{} {}: {} | {:?}", c.verdict, c.id, c.summary, c.notes))
        .collect();
    assert_eq!(got, want, "flaw {flaw:?}:\n{}", details.join("\n"));
    for check in report.checks.iter().filter(|c| c.verdict == Verdict::Fail) {
        assert!(
            !check.evidence.is_empty(),
            "a FAIL shows the attempts behind it"
        );
        assert!(
            check.summary.contains(&check.reference),
            "a FAIL cites its source"
        );
    }
    for check in report.checks.iter().filter(|c| c.verdict == Verdict::Info) {
        // Its INFO records a cap the profile documents; the matrix that expects it says which.
        if check.id == "retry-after-bound" {
            continue;
        }
        if check.id == "restart-key" && flaw != Some("no-key") {
            assert!(
                check
                    .summary
                    .contains("a new key, so the server does the work again"),
                "{}",
                check.summary
            );
            continue;
        }
        assert!(
            check.summary.contains("key-present"),
            "INFO names the check that judges the missing key: {}",
            check.summary
        );
    }
}

/// Runs the binary from the repository root with `args`, colour off, and times it.
pub(crate) fn idemspec(args: &[&str]) -> (Output, Duration) {
    idemspec_in(&root(), args)
}

/// Runs the binary in `dir` with `args`, colour off, and times it.
fn idemspec_in(dir: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("the idemspec binary runs");
    (out, started.elapsed())
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The README's client command, with every report: exit 0, and each report holds the eleven
/// checks (restart-key records that the example client keeps its key in memory).
#[test]
fn the_readme_command_passes_the_example_client_and_writes_every_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = |name: &str| dir.path().join(name).display().to_string();
    let (json, junit, md, html) = (file("c.json"), file("c.xml"), file("c.md"), file("c.html"));
    let (out, _) = idemspec(&[
        "client",
        "--profile",
        PROFILE,
        "--exec",
        "python3 clients/example/create.py",
        "--report-json",
        &json,
        "--report-junit",
        &junit,
        "--report-markdown",
        &md,
        "--report-html",
        &html,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("result: ok. 10 passed, 0 failed, 0 warned, 1 info"),
        "{stdout}"
    );
    let report = crate::support::read_json_report(&json);
    assert_eq!(report.target, "example-client");
    assert_eq!(report.checks.len(), 11);
    assert!(report.checks.iter().all(|c| c.timeline.attempts > 0));
    let junit = std::fs::read_to_string(&junit).expect("junit");
    assert!(junit.contains(r#"<testcase name="same-key""#), "{junit}");
    assert!(std::fs::read_to_string(&md)
        .expect("md")
        .contains("`backoff`"));
    assert!(std::fs::read_to_string(&html)
        .expect("html")
        .contains("bounded-retries"));
}

/// Commands that cannot be judged: every check UNKNOWN naming the cause, the command's output
/// in the evidence, exit 1, and quickly (the preflight decides; no check runs the command again).
#[rstest]
#[case::not_found(
    "no-such-client-idemspec --create",
    "exit code 127 (command not found)"
)]
#[case::fails_before_any_request(
    "echo 'cannot load config' >&2; exit 3",
    "ended (exit code 3) before making a POST /v1/workers request"
)]
#[case::never_makes_a_request("echo done", "exited 0 without making a POST /v1/workers request")]
#[case::never_exits(
    "sleep 60",
    "made no POST /v1/workers request and did not exit within 5s"
)]
#[case::fails_although_answered(
    "python3 clients/example/create.py >/dev/null; echo 'parse error' >&2; exit 1",
    "although every POST /v1/workers request was answered with the profile's success"
)]
fn a_command_that_cannot_be_judged_is_unknown_with_its_cause(
    #[case] exec: &str,
    #[case] cause: &str,
) {
    let (out, took) = idemspec(&[
        "client",
        "--profile",
        PROFILE,
        "--exec",
        exec,
        // Generous: python3 starting on a loaded machine takes most of a second.
        "--command-timeout",
        "5s",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("0 passed, 0 failed, 0 warned, 0 info, 0 skipped, 11 unknown"),
        "{stdout}"
    );
    assert!(
        stdout.contains(cause),
        "names the cause `{cause}`:\n{stdout}"
    );
    if exec.contains(">&2") {
        let said = exec.split('\'').nth(1).unwrap_or_default();
        assert!(
            stdout.contains(said),
            "the command's output is in the evidence:\n{stdout}"
        );
    }
    assert!(took < Duration::from_secs(30), "bounded: took {took:?}");
}

/// Every configuration error `idemspec client` can meet before running, as the user sees it.
#[test]
fn client_configuration_errors_are_located() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("bad-client.yaml"),
        "version: 1\nname: x\noperation: {method: POST, path: v1/x}\nsuccess:\n  status: 302\n  \
         body: '{not json'\ngives_up: {after_attempts: 0}\nretry_after: 250ms\n",
    )
    .expect("write fixture");
    std::fs::write(
        dir.path().join("unknown.yaml"),
        "version: 1\nname: x\nsucces: {status: 201}\n",
    )
    .expect("fixture");
    let cases: [(&str, Vec<&str>); 4] = [
        ("every rule broken", vec!["--profile", "bad-client.yaml"]),
        ("unknown field", vec!["--profile", "unknown.yaml"]),
        ("missing file", vec!["--profile", "no/such/client.yaml"]),
        ("unknown check", vec!["--only", "same-keys"]),
    ];
    let mut all = String::new();
    for (what, args) in cases {
        let mut argv = vec!["client", "--exec", "true"];
        argv.extend(args);
        let (out, _) = idemspec_in(dir.path(), &argv);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "", "{what}: errors never go to stdout");
        all.push_str(&format!("--- {what}\n{}", text(&out.stderr)));
    }
    redacted!(insta::assert_snapshot!(all));
}

/// A client whose path differs from the profile's by a trailing slash still makes the operation's
/// requests: the faults land on them and every check judges them (the example client posts to
/// `/v1/workers`, the profile says `/v1/workers/`). The canned success's own `type` member is
/// not labelled a problem type: its content type is `application/json`.
#[tokio::test]
async fn a_trailing_slash_is_the_same_operation() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = text
        .replace("  path: /v1/workers\n", "  path: /v1/workers/\n")
        .replace(
            r#"body: '{"id":"wkr-1","state":"running"}'"#,
            r#"body: '{"id":"wkr-1","type":"worker"}'"#,
        );
    assert!(text.contains("/v1/workers/") && text.contains("\"type\""));
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("a valid profile");
    let mut options = ClientOptions::new(profile, example_command(""));
    options.only = vec!["key-present".into(), "same-key".into()];
    let report = run_client(options).await;
    for check in &report.checks {
        assert_eq!(
            check.verdict,
            Verdict::Pass,
            "{}: {}",
            check.id,
            check.summary
        );
        for e in &check.evidence {
            if let Some(r) = &e.response {
                assert_eq!(r.problem_type, None, "{}: {r:?}", check.id);
            }
        }
    }
}

/// A client that never retries is not passed on retries it never made: bounded-retries and
/// backoff record that nothing was retried (INFO), and so does retry-after-bound (it gives up on
/// any 503, so nothing shows what it does with a long wait); a bound of one attempt is a valid
/// profile. The 429 it did not retry is rate-limit's to judge: WARN.
#[tokio::test]
async fn a_client_that_never_retries_is_recorded_not_passed() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = text.replace("  after_attempts: 4 ", "  after_attempts: 1 ");
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("a bound of 1 is valid");
    // One POST with a key; any failure ends it (exit 1).
    let once = "import json,os,sys,urllib.request,uuid\n\
        r=urllib.request.Request(os.environ['IDEMSPEC_BASE_URL']+'/v1/workers',data=b'{}',\
        headers={'Idempotency-Key':str(uuid.uuid4()),'Content-Type':'application/json'},method='POST')\n\
        try: urllib.request.urlopen(r,timeout=2)\n\
        except Exception as e: sys.exit(str(e))\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("once.py");
    std::fs::write(&script, once).expect("write the client");
    let mut options = ClientOptions::new(profile, python(&script, ""));
    options.only = [
        "bounded-retries",
        "backoff",
        "rate-limit",
        "retry-after-bound",
    ]
    .map(String::from)
    .to_vec();
    let report = run_client(options).await;
    for check in &report.checks {
        let (verdict, said) = match check.id.as_str() {
            "rate-limit" => (Verdict::Warn, "gave up on a 429 that said `Retry-After: 1`"),
            "retry-after-bound" => (Verdict::Info, "it retries no 503"),
            "backoff" => (Verdict::Info, "(rate-limit judges that)"),
            _ => (Verdict::Info, ""),
        };
        let all = format!("{} {}", check.summary, check.notes.join(" "));
        assert_eq!(check.verdict, verdict, "{}: {all}", check.id);
        assert!(all.contains(said), "{}: {all}", check.id);
    }
    let bounded = report
        .checks
        .iter()
        .find(|c| c.id == "bounded-retries")
        .expect("ran");
    assert!(
        bounded
            .summary
            .contains("gave up after its first attempt, without a retry"),
        "{}",
        bounded.summary
    );
}

/// A client that stops retrying as it should but whose process never exits is reported as
/// lingering (a CI job running it hangs), not as still retrying: create.py `--flaw lingers` gives
/// up after four attempts, prints its error and sleeps.
#[tokio::test]
async fn a_client_that_stopped_retrying_but_lingers_is_called_lingering() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = text.replace("  within: 20s ", "  within: 12s ");
    assert!(text.contains("within: 12s"));
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("a valid profile");
    let mut options = ClientOptions::new(profile, example_command("--flaw lingers"));
    options.only = vec!["bounded-retries".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Fail, "{}", check.summary);
    assert!(
        check.summary.contains("stopped retrying but did not exit")
            && !check.summary.contains("does not give up"),
        "{}",
        check.summary
    );
}

/// An SDK that first discovers its API (a version GET whose answer it checks) runs against the
/// canned upstream when the profile gives that request its own answer (`routes`); without it, the
/// GET gets the operation's success and the SDK stops before its create, and every check is
/// UNKNOWN with that cause.
#[tokio::test]
async fn a_client_that_discovers_its_api_first_is_answered_per_route() {
    let discovering = "import json,os,sys,urllib.request,uuid\n\
        base=os.environ['IDEMSPEC_BASE_URL']\n\
        v=json.load(urllib.request.urlopen(base+'/v1/version',timeout=2))\n\
        if v.get('version')!='1': sys.exit('not the API I know: '+json.dumps(v))\n\
        r=urllib.request.Request(base+'/v1/workers',data=b'{}',\
        headers={'Idempotency-Key':str(uuid.uuid4()),'Content-Type':'application/json'},method='POST')\n\
        print(urllib.request.urlopen(r,timeout=2).status)\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("discovering.py");
    std::fs::write(&script, discovering).expect("write the client");
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let routed = format!(
        "{text}routes:\n  - {{path: /v1/version, body: '{{\"version\":\"1\"}}', headers: {{X-Api: v1}}}}\n"
    );
    let command = python(&script, "");
    let run_with = |text: String| {
        let command = command.clone();
        async move {
            let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
            let mut options = ClientOptions::new(profile, command);
            options.only = vec!["key-present".into()];
            run_client(options).await
        }
    };
    let report = run_with(routed).await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        report.checks[0].summary
    );
    let report = run_with(text.clone()).await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Unknown,
        "{}",
        report.checks[0].summary
    );
    let check = &report.checks[0];
    assert!(
        check.summary.contains("it sent only GET /v1/version"),
        "{}",
        check.summary
    );
    assert!(
        check.notes.iter().any(|n| n.contains("not the API I know")),
        "the command's output is shown: {:?}",
        check.notes
    );
    // A route's answer is validated as the success is.
    let bad = format!("{text}routes:\n  - {{path: v1/version, status: 600, body: '{{nope'}}\n");
    let err = ClientProfile::load(PROFILE, &bad, &|_| None).expect_err("invalid routes");
    let all: Vec<String> = err.each().map(ToString::to_string).collect();
    let all = all.join("\n");
    for said in ["must start with `/`", "status 600", "body is not JSON"] {
        assert!(all.contains(said), "{said}: {all}");
    }
}

/// A key the proxy cannot read (in a JSON body longer than the 64 KiB it reads) is not called
/// missing: key-present is UNKNOWN, naming why, where it once FAILed "retried without the key".
#[tokio::test]
async fn a_key_the_proxy_cannot_read_is_not_called_missing() {
    let padded = "import json,os,sys,time,urllib.request,uuid\n\
        key=str(uuid.uuid4())\n\
        body=json.dumps({'clientToken':key,'pad':'x'*70000}).encode()\n\
        for attempt in range(4):\n\
        \x20   r=urllib.request.Request(os.environ['IDEMSPEC_BASE_URL']+'/v1/workers',data=body,\
        headers={'Content-Type':'application/json'},method='POST')\n\
        \x20   try:\n\
        \x20       urllib.request.urlopen(r,timeout=2); sys.exit(0)\n\
        \x20   except Exception as e: time.sleep(0.2)\n\
        sys.exit('gave up')\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("padded.py");
    std::fs::write(&script, padded).expect("write the client");
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = text.replace(
        "  preset: article ",
        "  key_at: {json: clientToken}\n  preset: article ",
    );
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
    let mut options = ClientOptions::new(profile, python(&script, ""));
    options.only = vec!["key-present".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Unknown, "{}", check.summary);
    assert!(
        check.summary.contains("could not be read") && check.summary.contains("64 KiB"),
        "{}",
        check.summary
    );
}

/// backoff judged as the field writes it: each strategy of create.py's `--backoff` (and its
/// default, a doubling delay times 0.25–1.75), judged in three runs. Exponential with a random
/// factor, full, equal and decorrelated jitter and a ±10 % jitter PASS; a fixed delay WARNs (no
/// growth, no jitter), and so does a client that caps `Retry-After` below what the server asked.
/// The verdict must hold in at least two of the three: a random strategy's draws may, now and
/// then, fall where no growth shows (decorrelated jitter WARNed once in 20 loaded runs,
/// docs/BENCHMARKS.md "Client backoff verdicts"), and a check that judged the strategy wrongly
/// would miss in every run.
#[rstest]
#[case::jittered("--backoff jittered", Verdict::Pass)]
#[case::full_jitter("--backoff full", Verdict::Pass)]
#[case::equal_jitter("--backoff equal", Verdict::Pass)]
#[case::decorrelated_jitter("--backoff decorrelated", Verdict::Pass)]
#[case::ten_percent_jitter("--backoff tenpct", Verdict::Pass)]
#[case::fixed_delay("--backoff fixed", Verdict::Warn)]
#[case::retry_after_capped("--retry-after-cap 0.2", Verdict::Warn)]
#[tokio::test]
async fn backoff_strategies_flaw_matrix(#[case] flags: &str, #[case] expected: Verdict) {
    let mut missed = Vec::new();
    for round in 0..3 {
        let mut options = ClientOptions::new(example_profile(), example_command(flags));
        options.only = vec!["backoff".into()];
        let report = run_client(options).await;
        let check = &report.checks[0];
        if check.verdict != expected {
            missed.push(format!(
                "round {round}: {:?}: {} | {:?}",
                check.verdict, check.summary, check.notes
            ));
        }
    }
    assert!(
        missed.len() <= 1,
        "{flags}: {expected:?} expected in at least two of three runs:\n{}",
        missed.join("\n")
    );
}

/// A client that caps `Retry-After` as its documentation says (`retry_after_cap`) is recorded
/// with the number, not judged as ignoring the header; one that retries sooner than even its
/// documented cap WARNs naming the cap.
#[tokio::test]
async fn a_documented_retry_after_cap_is_recorded_with_its_number() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = format!("{text}retry_after: 3s\nretry_after_cap: 1s\n");
    for (cap, verdict, said) in [
        (
            "1",
            Verdict::Pass,
            "capping it as the profile's `retry_after_cap: 1s` documents",
        ),
        ("0.2", Verdict::Warn, "sooner than even its documented cap"),
    ] {
        let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
        let mut options = ClientOptions::new(
            profile,
            example_command(&format!("--retry-after-cap {cap}")),
        );
        options.only = vec!["backoff".into()];
        let report = run_client(options).await;
        let check = &report.checks[0];
        assert_eq!(
            check.verdict, verdict,
            "cap {cap}: {} | {:?}",
            check.summary, check.notes
        );
        let all = format!("{} {}", check.summary, check.notes.join(" "));
        assert!(all.contains(said), "cap {cap}: {all}");
    }
    // A cap no shorter than `retry_after` is valid (retry-after-bound reads it against an
    // hour's wait); a cap of nothing is not.
    let longer = text.replace("retry_after_cap: 1s", "retry_after_cap: 60s");
    ClientProfile::load(PROFILE, &longer, &|_| None).expect("a cap longer than retry_after");
    let bad = text.replace("retry_after_cap: 1s", "retry_after_cap: 0s");
    let err = ClientProfile::load(PROFILE, &bad, &|_| None).expect_err("a cap of nothing");
    assert!(
        err.to_string()
            .contains("must be more than 0 and at most 1h"),
        "{err}"
    );
}

/// `idemspec validate` knows a client profile by its keys (its `operations` is a count, not a
/// target's mapping) and checks it as `idemspec client` would, without running anything.
#[test]
fn validate_checks_a_client_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    std::fs::write(
        dir.path().join("good.yaml"),
        format!("{good}operations: 2\n"),
    )
    .expect("write");
    std::fs::write(
        dir.path().join("bad.yaml"),
        "version: 1\nname: x\nsuccess: {status: 404}\n",
    )
    .expect("write");
    let (out, _) = idemspec_in(dir.path(), &["validate", "good.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("client profile `example-client`"),
        "{}",
        text(&out.stdout)
    );
    let (out, _) = idemspec_in(dir.path(), &["validate", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.yaml:3:19: success.status 404 is not a 2xx"),
        "{}",
        text(&out.stderr)
    );
}

/// The example client profile in docs/client.md loads as it is written.
#[test]
fn the_documented_client_profile_loads() {
    let doc = std::fs::read_to_string(root().join("docs/client.md")).expect("docs/client.md");
    let start = doc.find("```yaml\n").expect("a YAML example") + "```yaml\n".len();
    let end = start + doc[start..].find("```").expect("its end");
    let profile = ClientProfile::load("docs/client.md", &doc[start..end], &|_| None)
        .unwrap_or_else(|e| panic!("the documented profile: {e}"));
    assert!(!profile.routes.is_empty(), "the example shows routes");
}

/// A client profile for create.py speaking `shape` (`--speaks`) under the contract preset
/// `contract`, its key where `key_at` says, the faults answering in the `answers` preset `answers`
/// and the success the preset's own.
fn vendor_profile(contract: &str, key_at: &str, answers: &str) -> ClientProfile {
    let text = format!(
        "version: 1\nname: vendor\ncontract: {{preset: {contract}, key_at: {key_at}}}\n\
         answers: {{preset: {answers}}}\noperation: {{method: POST, path: /v1/workers}}\n\
         timeout: 30s\ngives_up: {{after_attempts: 4, within: 20s}}\n"
    );
    ClientProfile::load("vendor.yaml", &text, &|_| None).expect("a valid vendor profile")
}

/// An SDK that understands only its vendor's answers (create.py `--speaks`: it reads its success
/// from the vendor's JSON or XML and decides to retry from the error's body alone) passes every
/// check against that vendor's answers preset, and FAILs no-retry-4xx when it retries the
/// vendor's mismatch. Every other check PASSes.
#[rstest]
#[case::stripe(
    "stripe-v1",
    "{header: Idempotency-Key}",
    "stripe-v1",
    "header:Idempotency-Key",
    None
)]
#[case::aws_json(
    "aws-client-token",
    "{json: clientToken}",
    "aws-client-token",
    "body",
    None
)]
#[case::aws_query("aws-client-token", "{form: ClientToken}", "aws-query", "form", None)]
#[case::gcp(
    "gcp-request-id",
    "{query: requestId}",
    "gcp-request-id",
    "query",
    None
)]
#[case::stripe_retries_mismatch(
    "stripe-v1",
    "{header: Idempotency-Key}",
    "stripe-v1",
    "header:Idempotency-Key",
    Some("retry-mismatch")
)]
#[case::aws_query_retries_mismatch(
    "aws-client-token",
    "{form: ClientToken}",
    "aws-query",
    "form",
    Some("retry-mismatch")
)]
#[case::aws_json_retries_mismatch(
    "aws-client-token",
    "{json: clientToken}",
    "aws-client-token",
    "body",
    Some("retry-mismatch")
)]
#[case::gcp_retries_mismatch(
    "gcp-request-id",
    "{query: requestId}",
    "gcp-request-id",
    "query",
    Some("retry-mismatch")
)]
#[tokio::test]
async fn a_vendor_sdk_is_judged_on_its_vendors_answers(
    #[case] contract: &str,
    #[case] key_at: &str,
    #[case] shape: &str,
    #[case] key_in: &str,
    #[case] flaw: Option<&str>,
) {
    let flags = flaw.map(|f| format!(" --flaw {f}")).unwrap_or_default();
    let options = ClientOptions::new(
        vendor_profile(contract, key_at, shape),
        example_command(&format!("--speaks {shape} --key-in {key_in}{flags}")),
    );
    let expected: &[(&str, Verdict)] = match flaw {
        Some(_) => &[("no-retry-4xx", Verdict::Fail)],
        None => &[],
    };
    judged_as(run_client(options).await, flaw, expected);
}

/// The same SDK against answers it cannot read: with a JSON success, for an SDK that reads
/// EC2's XML, nothing is judged and the cause is named (preflight); with its own XML success but
/// RFC 9457 faults, the in-flight conflict it cannot read is not retried and in-flight WARNs.
/// The answers preset is what made the difference.
#[tokio::test]
async fn a_vendor_sdk_against_another_vendors_answers_is_not_passed() {
    let command = example_command("--speaks aws-query --key-in form");
    let all_problems = vendor_profile("aws-client-token", "{form: ClientToken}", "problem");
    let mut options = ClientOptions::new(all_problems, command.clone());
    options.only = vec!["in-flight".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Unknown, "{}", check.summary);
    assert!(
        check
            .summary
            .contains("answered with the profile's success")
            && check
                .notes
                .join(" ")
                .contains("could not read the aws-query success"),
        "{} | {:?}",
        check.summary,
        check.notes
    );
    let text = "version: 1\nname: vendor\ncontract: {preset: aws-client-token, key_at: {form: ClientToken}}\n\
         answers: {preset: problem}\noperation: {method: POST, path: /v1/workers}\n\
         success: {status: 200, content_type: text/xml, body: '<RunInstancesResponse><requestId>1</requestId></RunInstancesResponse>'}\n";
    let xml_success = ClientProfile::load("vendor.yaml", text, &|_| None).expect("valid");
    let mut options = ClientOptions::new(xml_success, command);
    options.only = vec!["in-flight".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert!(
        check.verdict == Verdict::Warn
            && check.summary.contains("gave up on a 409 in flight")
            && check
                .summary
                .contains("that this aws-query client cannot read"),
        "{} | {:?}",
        check.summary,
        check.notes
    );
}

/// backoff says what a client did with the wait an answer asked for: read it from the vendor's
/// own header (`retry_after_header`) or ignored that header; capped it where its documentation
/// says nothing; ignored or honoured a wait raised above its own back-off (measured in the same
/// run); or made no retry before a deadline that came before the wait ended.
#[rstest]
#[case::vendor_header_read(
    "retry_after_header: {name: X-Wait-Ms, unit: ms}\n",
    // Equal jitter: first back-offs of 125-250 ms, so the wait asked for (twice the longest, in
    // whole seconds) is 1000 ms even when a wake-up is late.
    "--speaks problem --wait-header X-Wait-Ms:ms --backoff equal",
    Some(Verdict::Pass),
    "after a 409 with X-Wait-Ms: 1000"
)]
#[case::vendor_header_ignored(
    "retry_after_header: {name: X-Wait-Ms, unit: ms}\n",
    "--speaks problem --backoff fixed",
    Some(Verdict::Warn),
    "as its own back-off does (its own first back-off without Retry-After is up to"
)]
#[case::capped_undocumented(
    "retry_after: 3s\n",
    "--retry-after-cap 1",
    Some(Verdict::Warn),
    "but short of the header: it caps the header near 1."
)]
#[case::own_backoff_longer_than_the_profiles_wait(
    "",
    "--base-delay 1.2 --backoff tenpct --retry-after-cap 0",
    Some(Verdict::Warn),
    "as its own back-off does (its own first back-off without Retry-After is up to 1."
)]
#[case::own_backoff_longer_and_the_header_honoured(
    "",
    "--base-delay 1.2 --backoff tenpct",
    Some(Verdict::Pass),
    "`retry-after-in-flight`: waited "
)]
#[case::longer_than_the_run(
    "retry_after: 60s\n",
    "",
    Some(Verdict::Pass),
    "made no retry before the run's deadline (5s) after a 409 that said Retry-After: 60"
)]
#[tokio::test]
async fn the_wait_an_answer_asks_for_is_judged_by_what_the_client_did(
    #[case] extra: &str,
    #[case] flags: &str,
    #[case] verdict: Option<Verdict>,
    #[case] said: &str,
) {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let mut text = format!("{text}{extra}");
    if extra.contains("retry_after: 60s") {
        // A run shorter than the wait.
        text = text
            .replace("timeout: 30s", "timeout: 5s")
            .replace("within: 20s", "within: 5s");
    }
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
    let mut options = ClientOptions::new(profile, example_command(flags));
    options.only = vec!["backoff".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    let all = format!("{} {}", check.summary, check.notes.join(" "));
    if let Some(verdict) = verdict {
        assert_eq!(check.verdict, verdict, "{all}");
    }
    assert!(all.contains(said), "{all}");
    if flags.contains("--base-delay 1.2") {
        // The profile's 1 s is no longer than the client's own first back-off (1.08-1.32 s), so
        // the answers asked for twice that, in whole seconds: 3 or 4.
        assert!(
            all.contains("Retry-After: 3") || all.contains("Retry-After: 4"),
            "{all}"
        );
        assert!(!all.contains("not shown"), "{all}");
    }
}

/// restart-key: killed after the server did the work and before it heard back, the example
/// client runs again. Keeping its key in memory it sends a new one: recorded (INFO) under a
/// profile that claims nothing, WARN under one that claims `persists_keys: true`; with its key
/// in a journal (`--persist-key`), the next run sends the crashed run's key and it PASSes. Who
/// made the key (`key_made_by`) decides whose code the INFO says would have to keep it: the
/// SDK's memory, or the caller's code that passed it in.
#[rstest]
#[case::in_memory_unclaimed(
    false,
    false,
    "sdk",
    Verdict::Info,
    "a new key, so the server does the work again"
)]
#[case::made_by_the_caller(
    false,
    false,
    "caller",
    Verdict::Info,
    "the caller makes the key (`key_made_by: caller`): the command's own code made a new one"
)]
#[case::in_memory_claimed(
    false,
    true,
    "sdk",
    Verdict::Warn,
    "although the profile says the client persists its keys"
)]
#[case::journaled(
    true,
    true,
    "sdk",
    Verdict::Pass,
    "the run after the crash sent the first run's key"
)]
#[tokio::test]
async fn a_key_kept_across_a_restart_is_judged_by_what_the_profile_claims(
    #[case] journal: bool,
    #[case] claimed: bool,
    #[case] made_by: &str,
    #[case] verdict: Verdict,
    #[case] said: &str,
) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = format!("{text}persists_keys: {claimed}\nkey_made_by: {made_by}\n");
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
    let flags = if journal {
        format!(" --persist-key '{}'", dir.path().join("key").display())
    } else {
        String::new()
    };
    let mut options = ClientOptions::new(profile, example_command(&flags));
    options.only = vec!["restart-key".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(
        check.verdict, verdict,
        "{} | {:?}",
        check.summary, check.notes
    );
    assert!(check.summary.contains(said), "{}", check.summary);
    assert_eq!(
        check.summary.contains("an SDK that keeps them in memory"),
        verdict == Verdict::Info && made_by == "sdk",
        "the SDK is blamed only where it made the key: {}",
        check.summary
    );
    assert!(
        !dir.path().join("key").exists(),
        "the journal is gone once the operation ended"
    );
}

/// `--discover` names where the example client puts its key, wherever `--key-in` puts it (a value
/// fresh per operation, kept on the retry), and exits 1 naming no place for a client that sends
/// none or a new one on each attempt.
#[rstest]
#[case::header("", Some("key_at: {header: idempotency-key}"))]
#[case::json_body("--key-in body", Some("key_at: {json: clientToken}"))]
#[case::form_body("--key-in form", Some("key_at: {form: ClientToken}"))]
#[case::query("--key-in query", Some("key_at: {query: requestId}"))]
#[case::another_header(
    "--key-in header:X-Retry-Token",
    Some("key_at: {header: x-retry-token}")
)]
#[case::no_key("--flaw no-key", None)]
#[case::new_key_per_attempt("--flaw new-key-per-attempt", None)]
fn discover_names_where_the_key_is(#[case] flags: &str, #[case] found: Option<&str>) {
    let exec = format!("python3 clients/example/create.py {flags}");
    let stdout = discovered(&exec, None, if found.is_some() { 0 } else { 1 });
    match found {
        Some(place) => {
            assert!(
                stdout.contains(&format!("  1. {place}  ")) && stdout.contains("kept on the retry"),
                "{stdout}"
            );
            assert_eq!(
                stdout.matches(". key_at:").count(),
                1,
                "one place: {stdout}"
            );
        }
        None => {
            assert!(
                stdout.contains("no place carried a value fresh per operation"),
                "{stdout}"
            );
        }
    }
}

/// A client (Python) that makes one create with `headers` and `body` (Python expressions over
/// `tok`, a fresh uuid per operation) and retries it once with the same ones after a failure.
fn retrying_client(dir: &Path, headers: &str, body: &str) -> String {
    let script = format!(
        "import os,sys,uuid,urllib.request\n\
         base=os.environ['IDEMSPEC_BASE_URL']\n\
         tok=str(uuid.uuid4())\n\
         headers={headers}\n\
         body={body}\n\
         for attempt in range(2):\n\
         \x20   try:\n\
         \x20       r=urllib.request.Request(base+'/v1/workers',data=body,headers=headers,method='POST')\n\
         \x20       print(urllib.request.urlopen(r,timeout=5).status); sys.exit(0)\n\
         \x20   except Exception as e: err=e\n\
         sys.exit(str(err))\n"
    );
    let path = dir.join("client.py");
    std::fs::write(&path, script).expect("write the client");
    format!("python3 '{}'", path.display())
}

/// `idemspec client --discover` of `exec` (with the client profile at `profile`, else none),
/// asserted to exit `code`; its standard output.
fn discovered(exec: &str, profile: Option<&str>, code: i32) -> String {
    let profile: Vec<&str> = profile.map_or(Vec::new(), |p| vec!["--profile", p]);
    let (out, _) = idemspec(&[&["client"][..], &profile, &["--exec", exec, "--discover"]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}{}",
        text(&out.stderr)
    );
    stdout
}

/// `--discover` never proposes a request id or a trace header as the key (`discover::NOT_KEYS`):
/// a client that sends only a fresh `X-Request-Id` and `traceparent` per operation, kept on its
/// retry, exits 1 with both listed as "seen, not a key"; beside a real key they are listed after
/// it; a profile whose `contract.key_at` names `X-Request-Id` gets it as the place (exit 0).
#[test]
fn discover_labels_request_ids_and_traces_and_never_proposes_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ids = "{'X-Request-Id': tok, 'Content-Type': 'application/json', \
               'traceparent': '00-' + tok.replace('-', '') + '-00f067aa0ba902b7-01'}";
    let exec = retrying_client(dir.path(), ids, "b'{}'");
    let stdout = discovered(&exec, None, 1);
    assert!(
        stdout.contains("discover: no key found: only headers that carry something else")
            && stdout.contains("  seen, not a key: {header: x-request-id}  ")
            && stdout.contains("  seen, not a key: {header: traceparent}  ")
            && !stdout.contains(". key_at:"),
        "{stdout}"
    );
    let keyed = ids.replace(
        "{'X-Request-Id'",
        "{'Idempotency-Key': tok[::-1], 'X-Request-Id'",
    );
    let exec = retrying_client(dir.path(), &keyed, "b'{}'");
    let stdout = discovered(&exec, None, 0);
    assert!(
        stdout.contains("  1. key_at: {header: idempotency-key}  ")
            && stdout.matches(". key_at:").count() == 1
            && stdout.contains("  seen, not a key: {header: x-request-id}  "),
        "{stdout}"
    );
    let profile = std::fs::read_to_string(root().join(PROFILE))
        .expect("the example profile")
        .replace(
            "  preset: article ",
            "  key_at: {header: X-Request-Id}\n  preset: article ",
        );
    let path = dir.path().join("client.yaml");
    std::fs::write(&path, profile).expect("write the profile");
    let exec = retrying_client(dir.path(), ids, "b'{}'");
    let path = path.display().to_string();
    let stdout = discovered(&exec, Some(&path), 0);
    assert!(
        stdout.contains("  1. key_at: {header: x-request-id}  ")
            && stdout.contains("listed because `contract.key_at` names it")
            && stdout.contains("  seen, not a key: {header: traceparent}  "),
        "{stdout}"
    );
}

/// `--discover` prints at most 20 places, most key-like first, and counts the rest; a client
/// whose bodies idemspec cannot read (over 1 MiB) is told so, not that it sends no key.
#[test]
fn discover_caps_its_list_and_names_bodies_it_could_not_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let many = "dict([('X-Tok-%d' % i, tok + str(i)) for i in range(30)], \
                **{'Content-Type': 'application/json', 'X-Idempotency-Token': tok})";
    let exec = retrying_client(dir.path(), many, "b'{}'");
    let stdout = discovered(&exec, None, 0);
    assert_eq!(stdout.matches(". key_at:").count(), 20, "{stdout}");
    assert!(
        stdout.contains("  1. key_at: {header: x-idempotency-token}"),
        "{stdout}"
    );
    let more: usize = stdout
        .split("… and ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the rest are counted: {stdout}"));
    assert!(more >= 11, "31 places or more, 20 shown: {stdout}");
    let huge =
        "('{\"clientToken\": \"' + tok + '\", \"pad\": \"' + 'x' * (1 << 20) + '\"}').encode()";
    let exec = retrying_client(dir.path(), "{'Content-Type': 'application/json'}", huge);
    let stdout = discovered(&exec, None, 1);
    assert!(
        stdout.contains("idemspec could not read the bodies of")
            && stdout.contains("the body is over 1024 KiB")
            && !stdout.contains("the client sends no key"),
        "{stdout}"
    );
}

/// From a hostile read: a `--command-timeout` shorter than the profile's bound leaves
/// bounded-retries UNKNOWN naming both (not a FAIL of a client killed before its bound); a
/// `Retry-After` longer than the run leaves in-flight nothing to judge (INFO, not "gave up");
/// `validate` knows a client profile made only of the newer fields, or of `version` and `name`.
#[test]
fn overrides_and_odd_profiles_are_refused_or_read_for_what_they_are() {
    let (out, _) = idemspec(&[
        "client",
        "--profile",
        PROFILE,
        "--exec",
        // A client that never gives up is always ended by the timeout, and 5 s leave its
        // preflight run (python3 starting on a loaded machine) time to finish.
        "python3 clients/example/create.py --flaw unbounded",
        "--command-timeout",
        "5s",
        "--only",
        "bounded-retries",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("UNKNOWN bounded-retries")
            && stdout.contains("before the profile's bound `gives_up.within: 20s`"),
        "{stdout}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    for (file, body) in [
        ("bare.yaml", "version: 1\nname: x\n"),
        (
            "answers.yaml",
            "version: 1\nname: x\nanswers: {preset: stripe-v1}\n",
        ),
        ("keys.yaml", "version: 1\nname: x\npersists_keys: true\n"),
    ] {
        std::fs::write(dir.path().join(file), body).expect("write");
        let (out, _) = idemspec_in(dir.path(), &["validate", file]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("client profile `x`"), "{file}");
    }
}

#[tokio::test]
async fn a_retry_after_longer_than_the_run_leaves_in_flight_unjudged() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = format!("{text}retry_after: 40s\n")
        .replace("timeout: 30s", "timeout: 4s")
        .replace("within: 20s", "within: 4s");
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
    let mut options = ClientOptions::new(profile, example_command(""));
    options.only = vec!["in-flight".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Info, "{}", check.summary);
    assert!(
        check
            .summary
            .contains("whether it waits it out and retries is not seen"),
        "{}",
        check.summary
    );
}

/// in-flight says whether its retry kept the 409's `Retry-After` (the example client waits it
/// out; `--flaw no-backoff` retries at once, which is backoff's to judge, so in-flight still
/// PASSes); a profile that says the API keeps no in-flight state (`in_flight_state: false`) gets
/// INFO naming that, whatever the client would do with a 409 it is never sent.
#[rstest]
#[case::waited_out("", "", Verdict::Pass, "the `Retry-After: 1` waited out")]
#[case::sooner(
    "--flaw no-backoff",
    "",
    Verdict::Pass,
    "sooner than its `Retry-After: 1` asked (backoff judges the wait)"
)]
#[case::no_in_flight_state(
    "",
    "in_flight_state: false\n",
    Verdict::Info,
    "the API keeps no in-flight state (`in_flight_state: false`)"
)]
#[tokio::test]
async fn in_flight_says_whether_the_wait_was_kept_or_that_the_api_has_no_in_flight_state(
    #[case] flags: &str,
    #[case] profile_extra: &str,
    #[case] verdict: Verdict,
    #[case] said: &str,
) {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let profile =
        ClientProfile::load(PROFILE, &format!("{text}{profile_extra}"), &|_| None).expect("valid");
    let mut options = ClientOptions::new(profile, example_command(flags));
    options.only = vec!["in-flight".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, verdict, "{}", check.summary);
    assert!(check.summary.contains(said), "{}", check.summary);
}

/// Under `in_flight_state: false` no check sends the 409 in flight the API never answers:
/// same-key and backoff run without their in-flight situations and keep their verdicts; with the
/// default, same-key has one.
#[tokio::test]
async fn an_api_without_in_flight_state_is_never_answered_in_flight() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let in_flight_steps = |report: &RunReport, id: &str| -> Vec<String> {
        let check = report.checks.iter().find(|c| c.id == id).expect("ran");
        check
            .timeline
            .lanes
            .iter()
            .map(|l| l.name.clone())
            .filter(|n| n.contains("in-flight"))
            .collect()
    };
    let profile = ClientProfile::load(PROFILE, &format!("{text}in_flight_state: false\n"), &|_| {
        None
    })
    .expect("valid");
    let mut options = ClientOptions::new(profile, example_command(""));
    options.only = vec!["same-key".into(), "backoff".into()];
    let report = run_client(options).await;
    for id in ["same-key", "backoff"] {
        assert_eq!(in_flight_steps(&report, id), Vec::<String>::new(), "{id}");
    }
    let got = verdicts(&report);
    assert!(got.values().all(|v| *v == Verdict::Pass), "{got:?}");

    let mut options = ClientOptions::new(example_profile(), example_command(""));
    options.only = vec!["same-key".into()];
    let report = run_client(options).await;
    assert_eq!(in_flight_steps(&report, "same-key"), vec!["in-flight"]);
}

/// restart-key against `--upstream` is SKIP (idemspec cannot tell when a real server did the
/// work), not UNKNOWN; and a client that persists its keys, with every check run, PASSes it while
/// the other checks (run one at a time, as its journal is shared) keep their verdicts.
#[tokio::test]
async fn restart_key_skips_a_real_upstream_and_a_persisting_client_passes_every_check() {
    let upstream = idemspec::client_check::canned::CannedUpstream::start(&example_profile())
        .await
        .expect("an upstream");
    let mut options = ClientOptions::new(example_profile(), example_command(""));
    options.upstream = Some(upstream.url());
    options.only = vec!["restart-key".into()];
    let report = run_client(options).await;
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Skip,
        "{}",
        report.checks[0].summary
    );

    let dir = tempfile::tempdir().expect("a temp dir");
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let profile = ClientProfile::load(PROFILE, &format!("{text}persists_keys: true\n"), &|_| None)
        .expect("valid");
    let options = ClientOptions::new(
        profile,
        example_command(&format!(
            "--persist-key '{}'",
            dir.path().join("key").display()
        )),
    );
    let report = run_client(options).await;
    let got = verdicts(&report);
    assert!(
        got.values().all(|v| *v == Verdict::Pass),
        "{got:?}: {:?}",
        report.checks.iter().map(|c| &c.summary).collect::<Vec<_>>()
    );
}

/// A header named by a pattern (`key_at: {header_matching: …}`), for an SDK whose header name
/// carries a vendor or a version: the proxy finds the key in whichever header matches, and every
/// check judges it as it judges a named header (a target profile, whose checks send keys, refuses
/// a pattern: `profile::target`'s tests).
#[tokio::test]
async fn a_key_header_named_by_a_pattern_is_found_and_judged() {
    let text = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    let text = text.replace(
        "  preset: article ",
        "  key_at: {header_matching: \"x-*-idempotency-key\"}\n  preset: article ",
    );
    let profile = ClientProfile::load(PROFILE, &text, &|_| None).expect("valid");
    let options = ClientOptions::new(
        profile,
        example_command("--key-in header:X-Acme-Idempotency-Key"),
    );
    judged_as(run_client(options).await, None, &[]);
}
