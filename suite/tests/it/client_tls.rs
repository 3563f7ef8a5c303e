//! `idemspec client --tls`: the command served over HTTPS with a throwaway CA made for the run,
//! handed to it in the variables SDKs read. The example client with `--require-https` (refusing
//! `http://`, verifying the certificate against `$SSL_CERT_FILE`) is judged as it is over HTTP, a
//! flaw still FAILs its check, a client that does not trust the CA is UNKNOWN naming it, an
//! `--upstream` is forwarded to as given behind the TLS edge, and a
//! real SDK (hcloud-python, whose requests Session trusts `$REQUESTS_CA_BUNDLE`) gets the verdicts
//! over HTTPS it gets over HTTP. Real processes, real sockets.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use idemspec::client_check::tls_edge::CA_VARIABLES;
use idemspec::client_check::ClientOptions;
use idemspec::model::{RunReport, Verdict};
use idemspec_scenarios::client_profile::ClientProfile;
use idemspec_tls::ThrowawayCa;

use crate::client::{
    example_profile, idemspec, judged_as, root, run_client, text, verdicts, PROFILE,
};

/// The example client refusing anything but `https://`.
fn example_https() -> String {
    format!(
        "python3 '{}' --require-https",
        root().join("clients/example/create.py").display()
    )
}

/// `command` behind a line that writes what it was told (the base URL, then each CA variable)
/// to `seen`, one line per run.
fn recording(seen: &Path, command: &str) -> String {
    let vars: Vec<String> = CA_VARIABLES.iter().map(|v| format!("${v}")).collect();
    format!(
        "echo \"$IDEMSPEC_BASE_URL {}\" >> '{}'; {command}",
        vars.join(" "),
        seen.display()
    )
}

/// The lines `recording` wrote: each run's base URL and CA files.
fn seen_lines(seen: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(seen)
        .expect("the command ran")
        .lines()
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect()
}

/// Every check the example client PASSes over HTTP PASSes over HTTPS with `--require-https`
/// (restart-key INFO, as over HTTP): each run was told an `https://` base URL and one CA file in
/// all five variables, the report says the command was served over TLS, and the CA's file is
/// gone when the run is over.
#[tokio::test]
async fn the_example_client_requiring_https_passes_every_check_over_tls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let seen = dir.path().join("seen");
    let mut options = ClientOptions::new(example_profile(), recording(&seen, &example_https()));
    options.tls = true;
    let report = run_client(options).await;
    judged_as(report.clone(), None, &[]);
    let served = report.served_tls.as_ref().expect("the report says TLS");
    assert!(
        report
            .header_lines()
            .iter()
            .any(|l| l.starts_with("served the command over TLS at https://127.0.0.1")),
        "{:?}",
        report.header_lines()
    );
    assert_eq!(served.variables, CA_VARIABLES);
    let lines = seen_lines(&seen);
    assert!(lines.len() >= 9, "one line per run: {lines:?}");
    let files: BTreeSet<&String> = lines.iter().flat_map(|l| &l[1..]).collect();
    assert_eq!(
        files.len(),
        1,
        "one CA file per run, in every variable: {files:?}"
    );
    for line in &lines {
        assert!(line[0].starts_with("https://127.0.0.1:"), "{line:?}");
        assert_eq!(line.len(), 1 + CA_VARIABLES.len(), "{line:?}");
    }
    let file = PathBuf::from(files.into_iter().next().expect("a file"));
    assert!(
        !file.exists() && !file.parent().expect("its directory").exists(),
        "{} and its directory are removed when the run ends",
        file.display()
    );
}

/// A flaw is caught over TLS as over HTTP: a fresh key per attempt FAILs same-key, and only it.
#[tokio::test]
async fn a_flawed_client_fails_its_check_over_tls() {
    let command = format!("{} --flaw new-key-per-attempt", example_https());
    let mut options = ClientOptions::new(example_profile(), command);
    options.tls = true;
    options.only = vec!["same-key".into(), "key-present".into()];
    let report = run_client(options).await;
    let got = verdicts(&report);
    assert_eq!(got["same-key"], Verdict::Fail, "{:#?}", report.checks);
    assert_eq!(got["key-present"], Verdict::Pass, "{:#?}", report.checks);
}

/// A command that does not trust the run's CA (here the example client told another CA's file)
/// makes no request: every check UNKNOWN, the client's own words on the certificate in the
/// evidence, and the cause naming the variables to look at.
#[tokio::test]
async fn a_client_that_does_not_trust_the_ca_is_unknown_naming_the_variables() {
    let dir = tempfile::tempdir().expect("temp dir");
    let other = ThrowawayCa::new()
        .expect("a CA")
        .write_ca(dir.path())
        .expect("written");
    let command = format!("SSL_CERT_FILE='{}' {}", other.display(), example_https());
    let mut options = ClientOptions::new(example_profile(), command);
    options.tls = true;
    options.only = vec!["key-present".into()];
    let started = Instant::now();
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Unknown, "{check:#?}");
    assert!(
        check
            .summary
            .contains("it was served over TLS: does the client trust the CA in SSL_CERT_FILE"),
        "{}",
        check.summary
    );
    assert!(
        format!("{:?}", check.notes).contains("certificate did not verify"),
        "the client's error is in the evidence: {:?}",
        check.notes
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the preflight decides"
    );
}

/// Through the binary: `--tls` (or the profile's `tls: true`) serves the `--require-https` client
/// and the terminal report says so; without it the client refuses the `http://` base URL at the
/// preflight, and every check is UNKNOWN with the client's error.
#[test]
fn require_https_is_served_by_tls_and_refused_without_it() {
    let exec = "python3 clients/example/create.py --require-https";
    let only = ["--only", "no-retry-4xx"];
    let base = ["client", "--profile", PROFILE, "--exec", exec];
    let dir = tempfile::tempdir().expect("temp dir");
    let (json, junit) = (dir.path().join("c.json"), dir.path().join("c.xml"));
    let (json, junit) = (json.display().to_string(), junit.display().to_string());
    let reports = ["--report-json", &json, "--report-junit", &junit];
    let (out, _) = idemspec(&[&base[..], &only, &reports, &["--tls"]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("served the command over TLS at https://127.0.0.1"),
        "{stdout}"
    );
    let report = crate::support::read_json_report(&json);
    let served = report.served_tls.expect("served_tls in the JSON report");
    assert_eq!(served.names, ["127.0.0.1", "localhost"]);
    let junit = std::fs::read_to_string(&junit).expect("junit");
    assert!(junit.contains("served the command over TLS"), "{junit}");

    let profile = dir.path().join("client.yaml");
    let yaml = std::fs::read_to_string(root().join(PROFILE)).expect("the example profile");
    std::fs::write(&profile, format!("{yaml}tls: true\n")).expect("write profile");
    let profile = profile.display().to_string();
    let by_profile = ["client", "--profile", &profile, "--exec", exec];
    let (out, _) = idemspec(&[&by_profile[..], &only].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("served the command over TLS"), "{stdout}");

    let (out, took) = idemspec(&[&base[..], &only].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("1 unknown"), "{stdout}");
    assert!(
        stdout.contains("ended (exit code 2) before making a POST /v1/workers request"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--require-https: the base URL") && stdout.contains("is not https://"),
        "the client's error is shown: {stdout}"
    );
    assert!(!stdout.contains("served the command over TLS"), "{stdout}");
    assert!(
        took < Duration::from_secs(30),
        "the preflight decides: {took:?}"
    );
}

/// The hcloud-python installed by suite/tests/fixtures/hcloud/install.sh, if it is; missing, the
/// test is skipped with a note, and fails in CI (which installs it).
fn hcloud_python() -> Option<PathBuf> {
    let python = root().join("suite/tests/fixtures/hcloud/venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "hcloud-python is missing: run suite/tests/fixtures/hcloud/install.sh (CI runs it in .ci/run)"
    );
    eprintln!("skipped: hcloud-python is not installed (suite/tests/fixtures/hcloud/install.sh)");
    None
}

/// Runs hcloud-python's create (clients/sdks/drivers) under `key-present` and `no-retry-4xx`,
/// over TLS when `tls`, its command prefixed by `prefix`.
async fn judge_hcloud(python: &Path, tls: bool, prefix: &str) -> RunReport {
    let profile = "clients/sdks/profiles/hcloud.yaml";
    let text = std::fs::read_to_string(root().join(profile)).expect("the hcloud profile");
    let profile = ClientProfile::load(profile, &text, &|_| None).expect("a valid profile");
    let driver = root().join("clients/sdks/drivers/hcloud_python.py");
    let command = format!("{prefix}'{}' '{}'", python.display(), driver.display());
    let mut options = ClientOptions::new(profile, command);
    options.tls = tls;
    options.only = vec!["key-present".into(), "no-retry-4xx".into()];
    options.timeout = Some(Duration::from_secs(30));
    run_client(options).await
}

/// A real SDK over HTTPS: hcloud-python, whose requests Session verifies the certificate against
/// `$REQUESTS_CA_BUNDLE`, gets over TLS the verdicts it gets over HTTP (key-present FAILs: it
/// retries a create without a key, docs/client-matrix.md; no-retry-4xx PASSes), every run told
/// an `https://` base URL on the TLS-only edge; told another CA's file, it makes no request.
#[tokio::test]
async fn a_real_sdk_gets_the_same_verdicts_over_tls() {
    let Some(python) = hcloud_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let seen = dir.path().join("seen");
    let over_http = judge_hcloud(&python, false, "").await;
    let over_tls = judge_hcloud(&python, true, &recording(&seen, "")).await;
    let (http, tls) = (verdicts(&over_http), verdicts(&over_tls));
    assert_eq!(http, tls, "{:#?}", over_tls.checks);
    assert_eq!(tls["key-present"], Verdict::Fail, "{:#?}", over_tls.checks);
    assert_eq!(tls["no-retry-4xx"], Verdict::Pass, "{:#?}", over_tls.checks);
    assert!(over_tls.served_tls.is_some());
    assert!(over_tls.checks.iter().all(|c| c.timeline.attempts > 0));
    let lines = seen_lines(&seen);
    assert!(
        lines.iter().all(|l| l[0].starts_with("https://")),
        "{lines:?}"
    );

    let other = ThrowawayCa::new()
        .expect("a CA")
        .write_ca(dir.path())
        .expect("written");
    let distrust = format!("REQUESTS_CA_BUNDLE='{}' ", other.display());
    let refused = judge_hcloud(&python, true, &distrust).await;
    for check in &refused.checks {
        assert_eq!(check.verdict, Verdict::Unknown, "{check:#?}");
        assert!(
            format!("{:?}", check.notes).contains("CERTIFICATE_VERIFY_FAILED"),
            "hcloud verifies, against the variable: {:?}",
            check.notes
        );
    }
}

/// `--upstream` with `--tls`: the command's edge is TLS, and the proxy forwards to the upstream as
/// given (plain HTTP here), which receives the operation's requests.
#[tokio::test]
async fn an_upstream_is_forwarded_to_as_given_behind_the_tls_edge() {
    let upstream = idemspec::client_check::canned::CannedUpstream::start(&example_profile())
        .await
        .expect("an upstream");
    let mut options = ClientOptions::new(example_profile(), example_https());
    options.tls = true;
    options.upstream = Some(upstream.url());
    options.only = vec!["no-retry-4xx".into()];
    let report = run_client(options).await;
    assert_eq!(
        verdicts(&report)["no-retry-4xx"],
        Verdict::Pass,
        "{:#?}",
        report.checks
    );
    assert!(report.served_tls.is_some());
    assert!(upstream.url().starts_with("http://"), "{}", upstream.url());
    assert!(
        !upstream.received().is_empty(),
        "the preflight's create reached the upstream"
    );
}

/// A command that fails on what an `--upstream` answered is told what that was (here: the proxy's
/// 502 for an upstream that refuses connections), not that "the profile's success" was refused.
#[tokio::test]
async fn a_command_failing_on_the_upstreams_answer_is_told_that_answer() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let mut options = ClientOptions::new(example_profile(), example_https());
    options.tls = true;
    options.upstream = Some(format!("http://127.0.0.1:{port}"));
    options.only = vec!["no-retry-4xx".into()];
    let report = run_client(options).await;
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Unknown, "{check:#?}");
    assert!(
        check.summary.contains("got 502") && check.summary.contains("`--upstream`"),
        "{}",
        check.summary
    );
    assert!(
        !check.summary.contains("the profile's success"),
        "{}",
        check.summary
    );
}
