//! A profile's `documented` deviations, end to end through the binary against the alt API with a
//! planted defect its "documentation" states (a reused key with another request gets the
//! original's answer, `Flaw::MismatchNotRejected`): the FAIL stays a FAIL in every report, marked
//! as documented, and the exit code follows `--fail-documented`; an entry whose statuses the
//! exchanges do not show marks nothing; a passing check under an entry says the entry is stale; a
//! misspelt check is refused at its line.

use idemspec::model::{CheckOutcome, RunReport, Verdict};

use crate::alt_api_cli::idemspec;
use crate::support::alt_api;
use crate::support::reference::outcome;

/// The alt API's profile with `documented` appended.
fn profile_with(documented: &str) -> String {
    format!("{}\ndocumented:\n{documented}", alt_api::PROFILE)
}

/// The deviation the flawed API's "documentation" states, with `answer` as given.
fn mismatch_entry(answer: &str) -> String {
    format!(
        "  - check: fingerprint-mismatch\n    says: \"A reused key with another request gets \
         the first request's answer.\"\n    source: https://alt-api.test/docs#keys\n{answer}"
    )
}

/// Runs `args` (after `run --target api.yaml`) with `profile` against a fresh alt API with
/// `flaw`; returns the exit code, stdout and stderr, the JUnit, Markdown and HTML reports (one
/// text, split by `--- markdown ---` and `--- html ---`) and the JSON report.
async fn run(
    profile: &str,
    flaw: Option<alt_api::Flaw>,
    args: &[&str],
) -> (i32, String, String, Option<RunReport>) {
    let api = alt_api::start_with(alt_api::Options {
        flaw,
        ..alt_api::Options::default()
    })
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("api.yaml"), profile).expect("write profile");
    let mut all = vec![
        "run",
        "--target",
        "api.yaml",
        "--report-json",
        "report.json",
        "--report-junit",
        "junit.xml",
        "--report-markdown",
        "summary.md",
        "--report-html",
        "report.html",
    ];
    all.extend_from_slice(args);
    let out = idemspec(dir.path(), &api, &all).await;
    let report = std::fs::read_to_string(dir.path().join("report.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).expect("the JSON report parses"));
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap_or_default();
    let markdown = std::fs::read_to_string(dir.path().join("summary.md")).unwrap_or_default();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap_or_default();
    let stdout = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap_or(-1),
        stdout,
        format!("{junit}\n--- markdown ---\n{markdown}\n--- html ---\n{html}"),
        report,
    )
}

/// fingerprint-mismatch alone under `profile`, against the alt API with `flaw`: the exit code,
/// the output, and the check's outcome.
async fn fingerprint_mismatch(
    profile: &str,
    flaw: Option<alt_api::Flaw>,
) -> (i32, String, CheckOutcome) {
    let (code, stdout, _, report) = run(profile, flaw, &["--only", "fingerprint-mismatch"]).await;
    let report = report.expect("a report");
    (
        code,
        stdout,
        outcome(&report, "fingerprint-mismatch").clone(),
    )
}

/// The documented FAIL: FAIL in the JSON report with the documentation quoted and the status the
/// exchanges got; "FAIL (as documented)" in the terminal table, its evidence and the Markdown; a
/// success with the evidence in JUnit's system-out; exit 0. Under `--fail-documented`, exit 1 and a
/// JUnit failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_documented_fail_is_shown_as_documented_and_fails_the_run_only_when_asked() {
    let profile = profile_with(&mismatch_entry(""));
    let only = ["--only", "fingerprint-mismatch", "--only", "lost-response"];
    let flaw = Some(alt_api::Flaw::MismatchNotRejected);
    let (code, stdout, files, report) = run(&profile, flaw, &only).await;
    let report = report.expect("a report");
    let fm = outcome(&report, "fingerprint-mismatch");
    assert_eq!(fm.verdict, Verdict::Fail, "{stdout}");
    let documented = fm.documented.as_ref().expect("marked as documented");
    assert_eq!(
        documented.says,
        "A reused key with another request gets the first request's answer."
    );
    assert_eq!(
        documented.source.as_deref(),
        Some("https://alt-api.test/docs#keys")
    );
    assert_eq!(documented.seen, Vec::<u16>::new());
    assert_eq!(outcome(&report, "lost-response").documented, None);
    assert_eq!(report.stats.fail, 1);
    assert_eq!(report.stats.documented_fail, 1);
    assert_eq!(
        code, 0,
        "a documented FAIL alone does not fail the run:\n{stdout}"
    );
    assert!(stdout.contains("FAIL (as documented)"), "{stdout}");
    assert!(
        stdout.contains(
            "as documented: \"A reused key with another request gets the first request's \
             answer.\" (https://alt-api.test/docs#keys) (a deviation from the article all the \
             same, at its level)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "1 failed, 0 warned, 0 info, 0 skipped, 0 unknown; 1 of the failures as documented"
        ) && stdout.contains("--fail-documented makes it"),
        "{stdout}"
    );
    let (junit, rest) = files.split_once("--- markdown ---").expect("the files");
    let (markdown, html) = rest.split_once("--- html ---").expect("the files");
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(
        junit.contains("as documented: &quot;A reused key"),
        "{junit}"
    );
    assert!(markdown.contains("FAIL (as documented)"), "{markdown}");
    assert!(
        html.contains(">FAIL (as documented)</span>")
            && html.contains("data-verdict=\"FAIL\"")
            && html.contains("<p class=\"documented\">as documented: &quot;A reused key"),
        "the HTML report marks it"
    );

    let (code, stdout, files, report) = run(
        &profile,
        flaw,
        &[only.as_slice(), &["--fail-documented"]].concat(),
    )
    .await;
    assert_eq!(code, 1, "--fail-documented counts it:\n{stdout}");
    assert!(
        files.contains("<failure "),
        "JUnit follows the exit code: {files}"
    );
    let report = report.expect("a report");
    assert!(outcome(&report, "fingerprint-mismatch")
        .documented
        .is_some());
}

/// A documented WARN with the status the documentation names: an invalid key refused with a
/// bare `400` (no error body, `Flaw::BareRefusals`) is key-validation's WARN, marked as documented
/// with the `400` its exchanges got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_documented_warn_names_the_documented_status_its_exchanges_got() {
    let profile = profile_with(
        "  - check: key-validation\n    says: \"An invalid key is refused with 400 and no \
         body.\"\n    answer: [400, 422]\n",
    );
    let flaw = Some(alt_api::Flaw::BareRefusals);
    let (code, stdout, _, report) = run(&profile, flaw, &["--only", "key-validation"]).await;
    let report = report.expect("a report");
    let kv = outcome(&report, "key-validation");
    assert_eq!(kv.verdict, Verdict::Warn, "{stdout}");
    assert_eq!(
        kv.documented.as_ref().map(|d| d.seen.clone()),
        Some(vec![400])
    );
    assert_eq!(
        (report.stats.documented, report.stats.documented_fail),
        (1, 0)
    );
    assert!(
        stdout.contains("WARN (as documented)")
            && stdout.contains("this check's exchanges got 400, the documented answer"),
        "{stdout}"
    );
    assert_eq!(code, 0, "{stdout}");
}

/// An entry naming statuses no exchange of the check got marks nothing: the FAIL counts as any
/// other, and its note says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deviation_whose_answer_the_exchanges_do_not_show_marks_nothing() {
    let profile = profile_with(&mismatch_entry("    answer: [418, 451]\n"));
    let flaw = Some(alt_api::Flaw::MismatchNotRejected);
    let (code, stdout, fm) = fingerprint_mismatch(&profile, flaw).await;
    assert_eq!(fm.verdict, Verdict::Fail, "{stdout}");
    assert_eq!(fm.documented, None);
    assert!(
        fm.notes.iter().any(|n| n.contains(
            "(\"A reused key with another request gets the first request's answer.\" \
             (https://alt-api.test/docs#keys)), answered 418 or 451, but none of this check's \
             exchanges got any of them: this FAIL is not that deviation"
        )),
        "{:?}",
        fm.notes
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(!stdout.contains("as documented)"), "{stdout}");
}

/// A check that passes under a documented deviation keeps its PASS, with a note that the entry
/// was not borne out (the API changed, or the entry is wrong).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_check_under_a_documented_deviation_says_the_entry_was_not_seen() {
    let profile = profile_with(&mismatch_entry(""));
    let (code, stdout, fm) = fingerprint_mismatch(&profile, None).await;
    assert_eq!(fm.verdict, Verdict::Pass, "{stdout}");
    assert_eq!(fm.documented, None);
    assert!(
        fm.notes
            .iter()
            .any(|n| n.contains("but this run did not show one: the check passed")),
        "{:?}",
        fm.notes
    );
    assert_eq!(code, 0, "{stdout}");
}

/// A `documented` entry naming no check is refused before anything runs, at its line, with the
/// ids there are; `validate` warns of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_documented_check_that_does_not_exist_is_refused_at_its_line() {
    let profile = profile_with(&mismatch_entry("").replace(
        "check: fingerprint-mismatch",
        "check: fingerprint-mismatched",
    ));
    let line = profile
        .lines()
        .position(|l| l.contains("fingerprint-mismatched"))
        .expect("the entry")
        + 1;
    let (code, stdout, _, report) = run(&profile, None, &[]).await;
    assert_eq!(code, 2, "{stdout}");
    assert!(report.is_none(), "nothing ran");
    assert!(
        stdout.contains(&format!("api.yaml:{line}:"))
            && stdout.contains("documented: no check is named `fingerprint-mismatched`")
            && stdout.contains("lost-response"),
        "{stdout}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("api.yaml"), &profile).expect("write profile");
    let api = alt_api::start().await;
    let out = idemspec(dir.path(), &api, &["validate", "api.yaml"]).await;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("no check is named `fingerprint-mismatched`"),
        "{text}"
    );
}
