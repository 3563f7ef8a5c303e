//! The whole binary against the alt API (support/alt_api.rs): a provisioning API with other paths,
//! `X-Api-Key` auth, ids under `data.uuid`, `422` for a mismatch and `500`s replayed, judged by its
//! own `stripe-v1` profile. Nothing in the runner may assume leasebroker's shape; this proves it
//! end to end, reports included.

use idemspec::model::{RunReport, Verdict};

use crate::support::alt_api;
use crate::support::redact::redacted;

/// Runs `idemspec` with `args` in `dir` against `api`, colour off.
pub(crate) async fn idemspec(
    dir: &std::path::Path,
    api: &alt_api::AltApi,
    args: &[&str],
) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(args)
        .current_dir(dir)
        .envs(api.env())
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("the idemspec binary runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalogue_passes_a_correct_api_of_another_shape() {
    let api = alt_api::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("alt-api.yaml"), alt_api::PROFILE).expect("write profile");
    std::fs::create_dir(dir.path().join("out")).expect("create the report directory");
    let out = idemspec(
        dir.path(),
        &api,
        &[
            "run",
            "--target",
            "alt-api.yaml",
            "--report-json",
            "out/report.json",
            "--report-junit",
            "out/junit.xml",
            "--report-markdown",
            "out/summary.md",
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: RunReport = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/report.json"))
            .expect("the JSON report was written"),
    )
    .expect("the JSON report parses");
    let not_passed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| format!("{} {}: {}", c.verdict, c.id, c.summary))
        .collect();
    assert!(
        not_passed.is_empty(),
        "every check should PASS a correct API:\n{}\n\n{stdout}\n{stderr}",
        not_passed.join("\n")
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        (report.target.as_str(), report.contract.as_str()),
        ("alt-api", "stripe-v1")
    );
    assert_eq!(report.checks.len(), idemspec::runner::catalogue().len());
    assert!(
        stdout.contains("contract stripe-v1"),
        "the report names the contract assumed:\n{stdout}"
    );
    let junit = std::fs::read_to_string(dir.path().join("out/junit.xml")).expect("junit written");
    let checks = idemspec::runner::catalogue().len();
    assert_eq!(junit.matches("<testcase ").count(), checks);
    assert_eq!(junit.matches(r#"classname="alt-api""#).count(), checks);
    let markdown =
        std::fs::read_to_string(dir.path().join("out/summary.md")).expect("markdown written");
    assert!(
        markdown.starts_with("## idemspec: `alt-api` passed"),
        "{markdown}"
    );
    // The terminal report of a real run, as a user sees it (timings redacted).
    redacted!(insta::assert_snapshot!(stdout));
}

/// The alt API itself must be right, or the test above proves nothing: N simultaneous creates with
/// one key, released at one barrier, make exactly one machine, repeatedly; the others conflict
/// (409 + Retry-After) or replay the same 201.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alt_api_creates_once_per_key_under_concurrency() {
    const CLIENTS: usize = 12;
    const ROUNDS: usize = 5;
    let api = alt_api::start().await;
    let client = reqwest::Client::new();
    for round in 0..ROUNDS {
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(CLIENTS));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CLIENTS {
            let (client, barrier, url) = (client.clone(), barrier.clone(), api.base_url());
            tasks.spawn(async move {
                barrier.wait().await;
                let response = client
                    .post(format!("{url}/api/machines"))
                    .header("X-Api-Key", "alpha-key")
                    .header("Idempotency-Key", format!("round-{round}"))
                    .body(r#"{"flavor":"small-1","tag":"t"}"#)
                    .send()
                    .await
                    .expect("the alt API answers");
                let retry_after = response.headers().contains_key("retry-after");
                (
                    response.status().as_u16(),
                    retry_after,
                    response.text().await.unwrap_or_default(),
                )
            });
        }
        let mut created_bodies = std::collections::HashSet::new();
        while let Some(result) = tasks.join_next().await {
            let (status, retry_after, body) = result.expect("client task");
            match status {
                201 => {
                    created_bodies.insert(body);
                }
                409 => assert!(retry_after, "a 409 in flight carries Retry-After"),
                other => panic!("unexpected status {other}: {body}"),
            }
        }
        assert_eq!(
            created_bodies.len(),
            1,
            "every 201 is the same replayed response"
        );
        assert_eq!(api.machines(), round + 1, "one machine per key");
    }
}

/// `-q` leaves only the summary line on stdout; `-v` without a terminal prints one line per finished
/// check on stderr (CI logs), and stdout still carries the whole report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_and_verbose_change_only_what_is_printed() {
    let api = alt_api::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("alt-api.yaml"), alt_api::PROFILE).expect("write profile");
    let only = [
        "run",
        "--target",
        "alt-api.yaml",
        "--only",
        "never-processed",
        "--only",
        "replay-fidelity",
    ];

    let quiet = idemspec(dir.path(), &api, &[&only[..], &["-q"]].concat()).await;
    assert_eq!(quiet.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&quiet.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("result: ok. 2 passed"), "{stdout}");
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");

    let verbose = idemspec(dir.path(), &api, &[&only[..], &["-v"]].concat()).await;
    assert_eq!(verbose.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    for id in ["never-processed", "replay-fidelity"] {
        assert!(
            stderr.lines().any(|l| l.contains("PASS") && l.contains(id)),
            "a progress line for {id}:\n{stderr}"
        );
    }
    let stdout = String::from_utf8_lossy(&verbose.stdout);
    assert!(stdout.contains("│ replay-fidelity"), "{stdout}");
}

/// A run in which no check judged anything (every selected check SKIP) does not look like success:
/// it says so and exits 4, unless `--allow-nothing-judged`; the SKIP reasons are under the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_judged_nothing_exits_4_and_says_why() {
    let api = alt_api::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cut = |text: &str, from: &str, to: &str| {
        let start = text.find(from).expect("the fixture has the section");
        let end = text.find(to).expect("and what follows it");
        format!("{}{}", &text[..start], &text[end..])
    };
    // Neither hooks nor request variants: every selected check lacks what it needs.
    let bare = cut(
        &cut(alt_api::PROFILE, "hooks:", "side_effects:"),
        "    variants:",
        "  list:",
    );
    std::fs::write(dir.path().join("alt-api.yaml"), bare).expect("write profile");
    let args = [
        "run",
        "--target",
        "alt-api.yaml",
        "--only",
        "stuck-in-flight",
        "--only",
        "failed-not-cached",
    ];
    let out = idemspec(dir.path(), &api, &args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(stdout.contains("result: NOTHING JUDGED."), "{stdout}");
    assert!(
        stdout.contains("skipped: the profile can neither crash the target")
            && stdout.contains("skipped: the profile has neither `hooks.fail_next`"),
        "each SKIP's reason is under the table:\n{stdout}"
    );
    let allowed = idemspec(
        dir.path(),
        &api,
        &[&args[..], &["--allow-nothing-judged"]].concat(),
    )
    .await;
    assert_eq!(allowed.status.code(), Some(0));
}
