//! HTTPS and mutual TLS targets, over real sockets with a throwaway CA: checks judged through the
//! fault proxy over TLS, each TLS failure named before any check, the report saying how the target
//! was reached, and principals told apart by their client certificates alone.

use std::path::Path;

use idemspec::model::{ExitPolicy, RunReport, Verdict};
use idemspec::report::{html, json, junit, markdown, terminal, Palette, TerminalOptions};
use idemspec::runner::{run, RunError, RunOptions, Target, Unreachable};
use idemspec_scenarios::profile::TargetProfile;
use idemspec_tls::ThrowawayCa;

use crate::support::alt_api::{self, AltApi, Flaw, Options};
use crate::support::reference::table;
use crate::support::tls_edge::TlsEdge;

/// The alt API's profile with `tls` (a YAML flow mapping) at the top, written to `dir` and loaded
/// from there, so its relative paths name `dir`'s certificates.
fn profile(api: &AltApi, dir: &Path, tls: &str) -> TargetProfile {
    let text = format!("{}tls: {tls}\n", alt_api::PROFILE);
    let env = api.env();
    let file = dir.join("alt-api.yaml");
    std::fs::write(&file, &text).expect("write the profile");
    let vars = |name: &str| env.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    TargetProfile::load(&file.display().to_string(), &text, &vars).expect("the profile loads")
}

/// A temporary directory holding `ca`'s certificate as `ca.pem`.
fn pki(ca: &ThrowawayCa) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    ca.write_ca(dir.path()).expect("write the CA");
    dir
}

/// Runs `only` of the catalogue against `profile`, draining the progress events.
async fn run_checks(profile: TargetProfile, only: &[&str]) -> Result<RunReport, RunError> {
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.only = only.iter().map(|s| (*s).to_owned()).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let report = run(opts, tx).await;
    drain.await.expect("drain ends");
    report
}

/// The TLS cause a run stopped with before any check.
fn tls_cause(result: Result<RunReport, RunError>) -> String {
    match result {
        Err(RunError::TargetUnreachable {
            reason: Unreachable::Tls(cause),
            ..
        }) => cause,
        Err(other) => panic!("stopped for another reason: {other}"),
        Ok(report) => panic!("ran:\n{}", table(&report)),
    }
}

/// Checks whose faults the proxy applies to a TLS upstream PASS, and the report says the target
/// was reached over TLS with the certificate's subject.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulted_checks_pass_through_the_proxy_over_tls() {
    let ca = ThrowawayCa::new().expect("a CA");
    let api = alt_api::start_tls(Options::default(), TlsEdge::new(&ca, &[])).await;
    let dir = pki(&ca);
    let profile = profile(&api, dir.path(), "{ca_file: ca.pem}");
    let only = ["never-processed", "lost-response", "fingerprint-mismatch"];
    let report = run_checks(profile, &only).await.expect("the run starts");
    for check in &report.checks {
        assert_eq!(check.verdict, Verdict::Pass, "{}", table(&report));
    }
    assert_eq!(report.checks.len(), only.len(), "{}", table(&report));
    let [reached] = report.tls.as_slice() else {
        panic!("one TLS line: {:?}", report.tls);
    };
    assert_eq!(reached.url, api.base_url());
    assert!(reached.version.starts_with("TLS 1."), "{reached:?}");
    assert_eq!(reached.subject, "CN=localhost");
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// Each way a handshake fails stops the run before any check, the cause named with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tls_failure_is_named_before_any_check() {
    let ca = ThrowawayCa::new().expect("a CA");
    let dir = pki(&ca);
    // A check without faults: it needs no proxy, only the handshakes before it.
    let only = ["cross-tenant"];
    let trusted = TlsEdge::new(&ca, &[]);
    let api = alt_api::start_tls(Options::default(), trusted).await;
    let cause = tls_cause(run_checks(profile(&api, dir.path(), "{}"), &only).await);
    assert!(
        cause.contains("unknown issuer") && cause.contains("tls.ca_file"),
        "{cause}"
    );

    let other_name = ca.server_cert(&["api.internal"]).expect("a certificate");
    let api = alt_api::start_tls(
        Options::default(),
        TlsEdge::with_cert(&ca, &other_name, &[]),
    )
    .await;
    let p = profile(&api, dir.path(), "{ca_file: ca.pem}");
    let cause = tls_cause(run_checks(p, &only).await);
    assert!(
        cause.contains("name mismatch") && cause.contains("api.internal"),
        "{cause}"
    );

    let expired = ca
        .expired_server_cert(&["localhost", "127.0.0.1"])
        .expect("a certificate");
    let api = alt_api::start_tls(Options::default(), TlsEdge::with_cert(&ca, &expired, &[])).await;
    let p = profile(&api, dir.path(), "{ca_file: ca.pem}");
    let cause = tls_cause(run_checks(p, &only).await);
    assert!(cause.contains("expired"), "{cause}");

    let (alpha, _) = ca.client_cert("alpha").expect("a client certificate");
    let mutual = TlsEdge::new(&ca, &[(alpha, "alpha-key")]);
    let api = alt_api::start_tls(Options::default(), mutual).await;
    let p = profile(&api, dir.path(), "{ca_file: ca.pem}");
    let cause = tls_cause(run_checks(p, &only).await);
    assert!(
        cause.contains("client certificate") && cause.contains("tls:"),
        "{cause}"
    );

    let plain = alt_api::start().await;
    let https = plain.base_url().replace("http://", "https://");
    let mut p = profile(&plain, dir.path(), "{ca_file: ca.pem}");
    p.base_urls.value = vec![https];
    let cause = tls_cause(run_checks(p, &only).await);
    assert!(cause.contains("plain HTTP"), "{cause}");

    let tls_port = alt_api::start_tls(Options::default(), TlsEdge::new(&ca, &[])).await;
    let mut p = profile(&tls_port, dir.path(), "{ca_file: ca.pem}");
    p.base_urls.value = vec![tls_port.base_url().replace("https://", "http://")];
    let cause = tls_cause(run_checks(p, &only).await);
    assert!(cause.contains("speaks TLS: use an https:// URL"), "{cause}");

    // Nothing listening is no TLS cause: the target is not running there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = closed.local_addr().expect("its address").port();
    drop(closed);
    let mut p = profile(&tls_port, dir.path(), "{ca_file: ca.pem}");
    p.base_urls.value = vec![format!("https://127.0.0.1:{port}")];
    match run_checks(p, &only).await {
        Err(RunError::TargetUnreachable {
            reason: Unreachable::Silent(why),
            ..
        }) => assert!(why.contains("connect to"), "{why}"),
        Err(other) => panic!("stopped for another reason: {other}"),
        Ok(report) => panic!("ran:\n{}", table(&report)),
    }
}

/// `insecure_skip_verify` reaches a target no CA vouches for, and every report format says so,
/// beside the certificate's subject.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unverified_target_is_reached_and_said_loudly() {
    let ca = ThrowawayCa::new().expect("a CA");
    let api = alt_api::start_tls(Options::default(), TlsEdge::new(&ca, &[])).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let p = profile(&api, dir.path(), "{insecure_skip_verify: true}");
    let report = run_checks(p, &["cross-tenant"])
        .await
        .expect("the run starts");
    assert_eq!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
    assert_eq!(report.warnings, [RunReport::UNVERIFIED_WARNING]);
    let policy = ExitPolicy::default();
    let options = TerminalOptions {
        palette: Palette::PLAIN,
        policy,
    };
    for (format, text) in [
        ("terminal", terminal::render(&report, options)),
        ("markdown", markdown::render(&report, policy)),
        ("json", json::render(&report).expect("renders")),
        ("html", html::render(&report, policy)),
        (
            "junit",
            junit::render(&report, Default::default()).expect("renders"),
        ),
    ] {
        assert!(text.contains("NOT verified"), "{format}:\n{text}");
        assert!(text.contains("CN=localhost"), "{format}:\n{text}");
    }
}

/// A throwaway CA, and a temporary directory with its certificate in `pki/` (as the worked mTLS
/// profile reads it): the CA, the directory and the `pki` path.
fn pki_dir() -> (ThrowawayCa, tempfile::TempDir, std::path::PathBuf) {
    let ca = ThrowawayCa::new().expect("a CA");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pki = dir.path().join("pki");
    std::fs::create_dir(&pki).expect("pki");
    ca.write_ca(&pki).expect("write the CA");
    (ca, dir, pki)
}

/// The worked mTLS profile of docs/profiles/.
const MTLS_INTERNAL: &str = include_str!("../../../docs/profiles/mtls-internal.yaml");

/// Principals named by their client certificates alone (no header; the worked mTLS profile):
/// cross-tenant PASSes on a correct API and FAILs where keys are not scoped per principal, and
/// lost-response PASSes through the proxy, so each principal's own certificate went with its
/// requests, direct and through the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_named_by_client_certificates_and_a_cross_tenant_leak_caught() {
    let (ca, dir, pki) = pki_dir();
    let mut certs = Vec::new();
    for (name, key) in [("alpha", "alpha-key"), ("beta", "beta-key")] {
        let pair = ca.client_cert(name).expect("a client certificate");
        idemspec_tls::write_identity(&pki, name, &pair).expect("write the identity");
        certs.push((pair.0, key));
    }
    let file = dir.path().join("mtls-internal.yaml");
    let leak = Some(Flaw::KeysNotPerPrincipal);
    for (flaw, verdict) in [(None, Verdict::Pass), (leak, Verdict::Fail)] {
        let options = Options {
            flaw,
            ..Options::default()
        };
        let api = alt_api::start_tls(options, TlsEdge::new(&ca, &certs)).await;
        let url = api.base_url();
        let vars = |name: &str| (name == "API_URL").then(|| url.clone());
        let p = TargetProfile::load(&file.display().to_string(), MTLS_INTERNAL, &vars)
            .expect("the worked profile loads");
        let report = run_checks(p, &["cross-tenant", "lost-response"])
            .await
            .expect("runs");
        let verdict_of = |id: &str| report.checks.iter().find(|c| c.id == id).map(|c| c.verdict);
        assert_eq!(
            verdict_of("cross-tenant"),
            Some(verdict),
            "{}",
            table(&report)
        );
        assert_eq!(
            verdict_of("lost-response"),
            Some(Verdict::Pass),
            "{}",
            table(&report)
        );
    }
}

/// Two principals that present one client certificate are one identity to a server that names
/// principals by certificate: cross-tenant sees a response "leak" between them on a correct API,
/// and is UNKNOWN with that cause, not FAIL; the profile loads with a warning naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_sharing_one_certificate_make_cross_tenant_unknown() {
    let (ca, dir, pki) = pki_dir();
    let pair = ca.client_cert("alpha").expect("a client certificate");
    for name in ["alpha", "beta"] {
        idemspec_tls::write_identity(&pki, name, &pair).expect("write the identity");
    }
    let api = alt_api::start_tls(
        Options::default(),
        TlsEdge::new(&ca, &[(pair.0, "alpha-key")]),
    )
    .await;
    let url = api.base_url();
    let vars = |name: &str| (name == "API_URL").then(|| url.clone());
    let file = dir.path().join("mtls-internal.yaml").display().to_string();
    let p = TargetProfile::load(&file, MTLS_INTERNAL, &vars).expect("the profile loads");
    let warnings = p.warnings(&file);
    assert!(
        warnings.len() == 1 && warnings[0].contains("principals `alpha` and `beta`"),
        "{warnings:?}"
    );
    let report = run_checks(p, &["cross-tenant"]).await.expect("runs");
    let check = &report.checks[0];
    assert_eq!(check.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(
        check
            .summary
            .contains("present the same client certificate"),
        "{}",
        check.summary
    );
}

/// `tls.server_name` is the base URLs' name: a request to another host (an OAuth2 `token_url`,
/// a hook) is checked for that host's own name, so a token endpoint with its own certificate is
/// reached, while the target at its IP is still checked for the configured name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_name_is_only_the_base_urls() {
    let ca = ThrowawayCa::new().expect("a CA");
    let dir = pki(&ca);
    let named = ca.server_cert(&["api.internal"]).expect("a certificate");
    let api = alt_api::start_tls(Options::default(), TlsEdge::with_cert(&ca, &named, &[])).await;
    let elsewhere = alt_api::start_tls(Options::default(), TlsEdge::new(&ca, &[])).await;
    let p = profile(
        &api,
        dir.path(),
        "{ca_file: ca.pem, server_name: api.internal}",
    );
    let tls = idemspec::http_client::TlsSettings::of_profile(&p);
    let client = idemspec::http_client::client_builder(&tls, None)
        .expect("a client")
        .build()
        .expect("built");
    let token_url = elsewhere.base_url().replace("127.0.0.1", "localhost");
    for url in [api.base_url(), token_url] {
        let answered = client.get(format!("{url}/oauth/token")).send().await;
        assert!(answered.is_ok(), "{url}: {answered:?}");
    }
}
