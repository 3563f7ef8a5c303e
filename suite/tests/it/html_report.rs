//! The HTML report in a real headless browser (Debian's `chromium`; `.ci/run` installs it): every
//! check and its timeline are on the page and no script failed, for a flawed reference run and for
//! a 1000-client retry storm (drawn as counts per time slice, not 5000 bars).

use std::path::{Path, PathBuf};
use std::time::Duration;

use idemspec::model::{AttemptEnd, ExitPolicy, RunReport};
use idemspec::report::html;
use idemspec::runner::{RunOptions, Target};
use idemspec_scenarios::scenario::Scenario;

use crate::support::reference::{reference, run_reference};

/// The browser, or `None` with a note outside CI (`CI=true` makes a missing browser a failure).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("IDEMSPEC_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{} is missing and CI=true: `apt-get install chromium`",
        path.display()
    );
    eprintln!(
        "note: skipping a browser test; {} is missing",
        path.display()
    );
    None
}

/// The page's DOM after its scripts ran, as headless Chromium serialises it.
async fn rendered(browser: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().expect("browser profile dir");
    let run = tokio::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), run)
        .await
        .expect("chromium renders within 90 s")
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the DOM is UTF-8")
}

/// Writes `report` as HTML, renders it and checks what every page must show.
async fn check_page(report: &RunReport) -> Option<String> {
    let browser = chromium()?;
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("report.html");
    std::fs::write(&page, html::render(report, ExitPolicy::default())).expect("write page");
    let dom = rendered(&browser, &page).await;
    assert!(
        dom.contains(&format!("data-ready=\"{}\"", report.checks.len())),
        "the page's script ran to its end and counted every check"
    );
    assert!(!dom.contains("data-errors"), "no script error");
    for check in &report.checks {
        let start = dom
            .find(&format!("id=\"check-{}\"", check.id))
            .unwrap_or_else(|| panic!("{} has a section", check.id));
        let section = &dom[start..];
        let section = &section[..section.find("</section>").expect("closed")];
        if check.timeline.attempts > 0 {
            assert!(
                section.contains("<svg class=\"timeline"),
                "{} has a timeline",
                check.id
            );
        }
    }
    Some(dom)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flawed_reference_run_renders_every_check_with_its_timeline() {
    let report = run_reference(&["no-fingerprint"], None, &[]).await;
    // The reference server's contract (the article's) answers 409 to both refusals: a 409 on a
    // timeline is "in flight or mismatch", never one of them by guess.
    let ends: Vec<(Option<u16>, AttemptEnd)> = report
        .checks
        .iter()
        .flat_map(|c| &c.timeline.lanes)
        .flat_map(|lane| &lane.attempts)
        .map(|a| (a.status, a.end))
        .collect();
    assert!(
        ends.contains(&(Some(409), AttemptEnd::Conflict)),
        "{ends:?}"
    );
    assert!(
        !ends
            .iter()
            .any(|(_, end)| matches!(end, AttemptEnd::InFlight | AttemptEnd::Mismatch)),
        "{ends:?}"
    );
    let Some(dom) = check_page(&report).await else {
        return;
    };
    assert!(dom.contains("FAILED"));
    assert!(
        dom.contains("<body class=\"only-open\"") && dom.contains("id=\"only-open\" checked"),
        "a failed run opens on the checks that did not pass"
    );
    let failing = &dom[dom
        .find("id=\"check-fingerprint-mismatch\"")
        .expect("section")..];
    assert!(
        failing.contains("<details open=\"\">"),
        "a FAIL's evidence is open"
    );
    assert!(
        dom.contains("drop_response, upstream answered 201"),
        "a lost response shows what the proxy saw the upstream do"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_1000_client_storm_renders_as_counts_not_thousands_of_bars() {
    let storm = Scenario::load("storm-1000.yaml", include_str!("fixtures/storm-1000.yaml"))
        .expect("the storm loads");
    let mut opts = RunOptions::new(Target::Reference(reference(&[], None)));
    opts.builtin = false;
    opts.scenarios = vec![storm];
    let report = crate::support::reference::run_options(opts).await;
    let timeline = &report.checks[0].timeline;
    assert_eq!(
        timeline.lanes_aggregated, 1000,
        "{:?}",
        report.checks[0].summary
    );
    assert!(timeline.attempts >= 1000);
    let Some(dom) = check_page(&report).await else {
        return;
    };
    assert!(dom.contains("<svg class=\"timeline aggregated\""));
    assert!(
        !dom.contains("<body class=\"only-open\""),
        "a passing run shows every check"
    );
    let bars = dom.matches("<rect").count();
    assert!(
        bars < 1000,
        "{bars} rectangles for {} requests",
        timeline.attempts
    );
}

/// A failed 100-client storm (a server that ignores the key): the page opens on it, and its
/// section leads with the totals and names a bounded number of keys, where it once was a
/// 34,000-character paragraph with the decisive sentence at its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_storm_opens_on_its_totals_not_a_paragraph_per_key() {
    let storm = Scenario::load(
        "storm-100.yaml",
        r#"version: 1
id: storm-100
title: 100 clients, one key each, through dropped responses
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 100, attempts: 20, seed: 7, within: 30s}
faults:
  - {name: drop, match: {probability: 0.3, seed: 11}, fault: {drop_response: {}}}
"#,
    )
    .expect("the storm loads");
    let mut opts = RunOptions::new(Target::Reference(reference(&["no-idempotency"], None)));
    opts.builtin = false;
    opts.scenarios = vec![storm];
    let report = crate::support::reference::run_options(opts).await;
    let Some(dom) = check_page(&report).await else {
        return;
    };
    assert!(
        dom.contains("<body class=\"only-open\""),
        "it opens on what failed"
    );
    let section = &dom[dom.find("id=\"check-storm-100\"").expect("its section")..];
    let summary = &section[section.find("class=\"summary\"").expect("its summary")..];
    let summary = &summary[..summary.find("</p>").expect("closed")];
    assert!(
        summary.contains("resources exist for 100 accepted keys")
            && summary.find("resources exist") < summary.find("did not keep one id"),
        "the totals lead: {summary}"
    );
    assert!(summary.contains("and 97 more"), "{summary}");
    assert!(
        summary.len() < 2000,
        "{} characters: {summary}",
        summary.len()
    );
}
