//! Signed requests and expiring tokens end to end: `idemspec run` against the alt API behind a
//! front that verifies AWS Signature Version 4 on every request, or bearer tokens that expire in
//! 2 s (support/sigv4_front.rs). Signed checks pass through the fault proxy (the worked profile
//! docs/profiles/sigv4-signed.yaml); a wrong secret, or a token command that prints nothing,
//! stops the run before any check; a run outlasting its tokens stays PASS; no secret, token or
//! signature appears in the output or any report.

use crate::support::{alt_api, sigv4_front};

/// The worked profile of docs/profiles/ for a SigV4-signed API, credentials from the environment.
const SIGNED: &str = include_str!("../../../docs/profiles/sigv4-signed.yaml");

/// The worked profile's credentials: the front's keys, `secret` for alpha's.
fn credentials(secret: &str) -> Vec<(&'static str, String)> {
    vec![
        ("ALPHA_ACCESS_KEY_ID", sigv4_front::KEYS[0].0.into()),
        ("ALPHA_SECRET_ACCESS_KEY", secret.into()),
        ("ALPHA_SESSION_TOKEN", "alpha-Session-Token0".into()),
        ("BETA_ACCESS_KEY_ID", sigv4_front::KEYS[1].0.into()),
        ("BETA_SECRET_ACCESS_KEY", sigv4_front::KEYS[1].1.into()),
    ]
}

/// Runs `idemspec run` on the worked SigV4 profile, alpha's secret `secret`, against the front.
async fn run(
    dir: &std::path::Path,
    secret: &str,
    api: &alt_api::AltApi,
    front: &sigv4_front::Front,
) -> std::process::Output {
    let checks = "lost-response,cross-tenant,replay-fidelity";
    let env = credentials(secret);
    run_checks(dir, SIGNED, checks, (api, front), &env).await
}

/// Runs `idemspec run` on `profile`'s `checks` with the alt API's environment and `env`, the
/// base URL (`ALT_API_URL`, `API_URL`) the front, writing every report into `dir`.
async fn run_checks(
    dir: &std::path::Path,
    profile: &str,
    checks: &str,
    (api, front): (&alt_api::AltApi, &sigv4_front::Front),
    env: &[(&str, String)],
) -> std::process::Output {
    std::fs::write(dir.join("signed.yaml"), profile).expect("write profile");
    tokio::process::Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["run", "--target", "signed.yaml", "--only", checks])
        .args([
            "--report-json",
            "report.json",
            "--report-junit",
            "junit.xml",
        ])
        .args([
            "--report-markdown",
            "summary.md",
            "--report-html",
            "report.html",
        ])
        .current_dir(dir)
        .envs(api.env())
        .env("ALT_API_URL", front.base_url())
        .env("API_URL", front.base_url())
        .envs(env.iter().cloned())
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("the idemspec binary runs")
}

/// Every signed request verifies, through the fault proxy too (a lost response is retried and
/// replayed): each arrived under the front's own name as `Host`, which the signature covers.
/// No secret, session token or signature is in the output or any report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_requests_verify_through_the_proxy_and_checks_pass() {
    let api = alt_api::start().await;
    let front = sigv4_front::start(api.base_url()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run(dir.path(), sigv4_front::KEYS[0].1, &api, &front).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.matches("PASS").count() >= 3, "{stdout}");
    let hosts = front.hosts();
    let own = front.base_url().trim_start_matches("http://").to_owned();
    assert!(hosts.len() > 6, "{hosts:?}");
    assert!(hosts.iter().all(|h| *h == own), "{own}: {hosts:?}");
    let shown = shown(dir.path(), &out);
    for secret in [
        sigv4_front::KEYS[0].1,
        sigv4_front::KEYS[1].1,
        "alpha-Session-Token0",
    ] {
        assert!(
            !shown.contains(secret),
            "a secret in the output or a report"
        );
    }
    assert!(
        !shown.contains("AWS4-HMAC-SHA256"),
        "a signature in the output or a report"
    );
}

/// The run's output and every report it wrote in `dir`, as one text.
fn shown(dir: &std::path::Path, out: &std::process::Output) -> String {
    let mut shown = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for report in ["report.json", "junit.xml", "summary.md", "report.html"] {
        shown += &std::fs::read_to_string(dir.join(report)).expect("report written");
    }
    shown
}

/// A wrong secret is refused by the API before any check: exit 3, naming the signature and the
/// API's code, never the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_stops_the_run_naming_the_rejected_signature() {
    let api = alt_api::start().await;
    let front = sigv4_front::start(api.base_url()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run(dir.path(), "not/the-Secret9", &api, &front).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("rejected the request's signature (`SignatureDoesNotMatch`)")
            && said.contains("principal `alpha`"),
        "{said}"
    );
    assert!(!said.contains("not/the-Secret9"), "{said}");
}

/// Tokens from a command, each accepted for 2 s by the front, refreshed every second: a run
/// that outlasts several tokens stays PASS, no request is refused as expired, and no token is
/// in the output or any report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_outlasting_its_token_refreshes_it_and_stays_pass() {
    let api = alt_api::start().await;
    let front = sigv4_front::start(api.base_url()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let token = "token: {command: 'echo tok-$(date +%s%N)', every: 1s}";
    let principals = format!(
        "principals:\n  - name: alpha\n    headers: {{X-Api-Key: alpha-key}}\n    {token}\n  \
         - name: beta\n    headers: {{X-Api-Key: beta-key}}\n    {token}\n"
    );
    let original = "principals:\n  - name: alpha\n    headers: {X-Api-Key: alpha-key}\n  \
                    - name: beta\n    headers: {X-Api-Key: beta-key}\n";
    let profile = alt_api::PROFILE.replace(original, &principals);
    let out = run_checks(
        dir.path(),
        &profile,
        "lost-response,cross-tenant,slow-handler-outlives-ttl",
        (&api, &front),
        &[],
    )
    .await;
    let shown = shown(dir.path(), &out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let (tokens, expired) = front.tokens();
    assert_eq!(expired, 0, "no request carried an expired token");
    assert!(tokens >= 4, "tokens were refreshed mid-run: {tokens}");
    assert!(!shown.contains("tok-"), "a token in the output or a report");
}

/// A token command that prints nothing stops the run before any check: exit 3, naming the
/// principal and the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_command_that_prints_nothing_stops_the_run() {
    let api = alt_api::start().await;
    let front = sigv4_front::start(api.base_url()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let original = "headers: {X-Api-Key: alpha-key}\n";
    let profile = alt_api::PROFILE.replace(
        original,
        "headers: {X-Api-Key: alpha-key}\n    token: {command: 'true'}\n",
    );
    let checks = "lost-response";
    let out = run_checks(dir.path(), &profile, checks, (&api, &front), &[]).await;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("principal `alpha`'s `token.command` printed nothing"),
        "{said}"
    );
}

/// Tokens from an OAuth 2.0 client-credentials grant expiring in 2 s: refreshed before they
/// expire (three quarters of `expires_in`), the run stays PASS, no token or secret is shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_credentials_token_is_refreshed_before_it_expires() {
    let api = alt_api::start().await;
    let front = sigv4_front::start(api.base_url()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let token = "token: {oauth2_client_credentials: {token_url: \"${ALT_API_URL}/oauth/token\", \
                 client_id: client-a, client_secret: grant/Secret+1, scope: machines}}";
    let principals = format!(
        "principals:\n  - name: alpha\n    headers: {{X-Api-Key: alpha-key}}\n    {token}\n  \
         - name: beta\n    headers: {{X-Api-Key: beta-key}}\n    {token}\n"
    );
    let original = "principals:\n  - name: alpha\n    headers: {X-Api-Key: alpha-key}\n  \
                    - name: beta\n    headers: {X-Api-Key: beta-key}\n";
    let profile = alt_api::PROFILE.replace(original, &principals);
    let checks = "lost-response,cross-tenant,slow-handler-outlives-ttl";
    let out = run_checks(dir.path(), &profile, checks, (&api, &front), &[]).await;
    let shown = shown(dir.path(), &out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let (tokens, expired) = front.tokens();
    assert_eq!(expired, 0, "no request carried an expired token");
    assert!(tokens >= 4, "tokens were refreshed mid-run: {tokens}");
    assert!(
        !shown.contains("oat-") && !shown.contains("grant/Secret+1"),
        "a secret shown"
    );
}
