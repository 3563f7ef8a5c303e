//! Signing a request as its principal's `sign` says: AWS Signature Version 4 through the
//! `aws-sigv4` crate, over the request as the target receives it: its origin's URL (not the
//! proxy's), its `Host`, its body, and every header but idemspec's own `X-Idemspec-*`, which
//! the proxy strips before the target sees them.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use idemspec_scenarios::profile::Sign;

use super::RequestSpec;

/// The authority a request to `url` names as its `Host`: the host, and the port where it is not
/// the scheme's default (`api.example.com`, `127.0.0.1:8080`, `[::1]:8443`), as HTTP clients
/// write it; `None` for a URL without a host.
pub fn host_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// Signs `spec` at time `at` as `how` says: sets `Authorization`, `X-Amz-Date` and, with a
/// session token, `X-Amz-Security-Token` (replacing any earlier value, so a request signed
/// again carries one signature). Call it last, once the body and every other header are final.
///
/// # Errors
/// The request cannot be signed: its URL does not parse, or a header is no valid HTTP field.
pub fn sign_request(spec: &mut RequestSpec, how: &Sign, at: SystemTime) -> Result<(), String> {
    let v4 = &how.aws_sigv4;
    let identity: Identity = Credentials::new(
        &v4.access_key_id,
        &v4.secret_access_key,
        v4.session_token.clone(),
        None,
        "idemspec profile",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&v4.region)
        .name(&v4.service)
        .time(at)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("AWS SigV4 parameters: {e}"))?
        .into();
    // The URL as the HTTP client sends it (percent-encoded where the path needs it).
    let url = reqwest::Url::parse(&format!("{}{}", spec.origin, spec.path))
        .map_err(|e| format!("URL {}{}: {e}", spec.origin, spec.path))?;
    let headers = spec
        .headers
        .iter()
        .filter(|(name, _)| !name.to_ascii_lowercase().starts_with("x-idemspec-"))
        .map(|(name, value)| (name.as_str(), value.as_str()));
    let body = spec.body.as_deref().unwrap_or_default().as_bytes();
    let request = SignableRequest::new(
        &spec.method,
        url.as_str(),
        headers,
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("AWS SigV4: {}", chain(&e)))?;
    let (instructions, _) = sign(request, &params)
        .map_err(|e| format!("AWS SigV4: {}", chain(&e)))?
        .into_parts();
    let (set, _query) = instructions.into_parts();
    for header in set {
        spec.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case(header.name()));
        spec.headers
            .push((header.name().to_owned(), header.value().to_owned()));
    }
    Ok(())
}

/// An error and its causes, joined by `: `.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::profile::AwsSigV4;
    use std::time::Duration;

    /// 2026-12-07T09:55:00Z, the fixed clock both signers use.
    const AT: u64 = 1_796_637_300;

    fn how(token: Option<&str>) -> Sign {
        Sign {
            aws_sigv4: AwsSigV4 {
                service: "ec2".into(),
                region: "eu-west-1".into(),
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
                session_token: token.map(str::to_owned),
            },
        }
    }

    fn spec(method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> RequestSpec {
        RequestSpec {
            step: "s".into(),
            base_url: "http://127.0.0.1:9".into(),
            origin: "http://127.0.0.1:8080".into(),
            method: method.into(),
            path: path.into(),
            principal: "A".into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            key: None,
            body: body.map(str::to_owned),
            timeout: Duration::from_secs(1),
            via_proxy: true,
            sent: None,
        }
    }

    /// The requests compared: several methods, query strings, form and JSON bodies, with and
    /// without a session token, with idemspec's `Host` for the origin.
    fn cases() -> Vec<(RequestSpec, Sign)> {
        let host = ("Host", "127.0.0.1:8080");
        let json = ("Content-Type", "application/json");
        let form = (
            "Content-Type",
            "application/x-www-form-urlencoded; charset=utf-8",
        );
        vec![
            (
                spec("GET", "/v1/instances?b=2&a=1&c=x%20y&d=", &[host], None),
                how(None),
            ),
            (
                spec(
                    "POST",
                    "/v1/instances",
                    &[host, json, ("Idempotency-Key", "m1-K1")],
                    Some(r#"{"name":"vm-1","size":2}"#),
                ),
                how(Some("FQoGZXIvYXdzEJr//////////wEaDO")),
            ),
            (
                spec(
                    "POST",
                    "/",
                    &[host, form],
                    Some("Action=RunInstances&ClientToken=m1-K1&MaxCount=1&Version=2016-11-15"),
                ),
                how(None),
            ),
            (
                spec(
                    "PUT",
                    "/v1/projects/p-1/instances:start?force=true",
                    &[host, json],
                    Some("{}"),
                ),
                how(Some("token-2")),
            ),
            (
                spec("DELETE", "/v1/instances/i-0123", &[host], None),
                how(Some("token-3")),
            ),
            (
                spec(
                    "PATCH",
                    "/v1/instances/i-0123",
                    &[json],
                    Some(r#"{"size":3}"#),
                ),
                how(None),
            ),
        ]
    }

    /// What botocore is asked to sign for `spec`.
    fn botocore_case(spec: &RequestSpec, how: &Sign) -> serde_json::Value {
        let v4 = &how.aws_sigv4;
        serde_json::json!({
            "method": spec.method, "url": format!("{}{}", spec.origin, spec.path),
            "headers": spec.headers, "body": spec.body,
            "access_key_id": v4.access_key_id, "secret_access_key": v4.secret_access_key,
            "session_token": v4.session_token, "service": v4.service, "region": v4.region,
            "time": "20261207T095500Z",
        })
    }

    /// botocore's headers for each case, or `None` where python3 with botocore is missing
    /// outside CI (in CI the test fails instead; `.ci/run` installs it with
    /// tests/fixtures/sigv4/install.sh).
    fn botocore_signs(cases: &[(RequestSpec, Sign)]) -> Option<Vec<serde_json::Value>> {
        use std::io::Write;
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sigv4/botocore_sign.py"
        );
        // The pinned botocore of tests/fixtures/sigv4/install.sh where it ran, else the machine's.
        let venv = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sigv4/venv/bin/python"
        );
        let python = if std::path::Path::new(venv).exists() {
            venv
        } else {
            "python3"
        };
        let input: Vec<_> = cases.iter().map(|(s, h)| botocore_case(s, h)).collect();
        let child = std::process::Command::new(python)
            .arg(script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let missing = |why: String| {
            assert!(
                std::env::var_os("CI").is_none(),
                "botocore comparison in CI: {why}"
            );
            eprintln!("SKIPPED: the botocore comparison needs python3 with botocore: {why}");
            None
        };
        let mut child = match child {
            Ok(child) => child,
            Err(e) => return missing(format!("python3: {e}")),
        };
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(&serde_json::to_vec(&input).unwrap())
            .unwrap();
        drop(stdin);
        let out = child.wait_with_output().expect("python3 ran");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && stderr.contains("No module named 'botocore'") {
            return missing(stderr.into_owned());
        }
        assert!(out.status.success(), "botocore_sign.py failed: {stderr}");
        Some(serde_json::from_slice(&out.stdout).expect("a JSON list"))
    }

    /// Every case is signed exactly as botocore's `SigV4Auth` signs it: the same
    /// `Authorization` (credential scope, signed headers, signature), `X-Amz-Date` and token.
    #[test]
    fn signatures_equal_botocores() {
        let cases = cases();
        let Some(expected) = botocore_signs(&cases) else {
            return;
        };
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AT);
        for ((mut spec, how), theirs) in cases.into_iter().zip(expected) {
            let before = spec.headers.len();
            sign_request(&mut spec, &how, at).expect("signed");
            let ours: serde_json::Map<String, serde_json::Value> = spec.headers[before..]
                .iter()
                .map(|(n, v)| (canonical(n), serde_json::Value::from(v.as_str())))
                .collect();
            assert_eq!(
                serde_json::Value::Object(ours),
                theirs,
                "{} {}",
                spec.method,
                spec.path
            );
        }
    }

    /// botocore's spelling of a header idemspec sets.
    fn canonical(name: &str) -> String {
        match name {
            "authorization" => "Authorization".into(),
            "x-amz-date" => "X-Amz-Date".into(),
            "x-amz-security-token" => "X-Amz-Security-Token".into(),
            other => other.into(),
        }
    }

    /// idemspec's own headers (stripped by the proxy) are not signed, and signing again replaces
    /// the signature rather than adding a second one.
    #[test]
    fn own_headers_are_not_signed_and_a_second_signing_replaces_the_first() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AT);
        let mut plain = spec("GET", "/v1/x", &[("Host", "127.0.0.1:8080")], None);
        let mut tagged = plain.clone();
        tagged
            .headers
            .push(("X-Idemspec-Step".into(), "first".into()));
        sign_request(&mut plain, &how(None), at).unwrap();
        sign_request(&mut tagged, &how(None), at).unwrap();
        let auth = |s: &RequestSpec| -> Vec<String> {
            s.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v.clone())
                .collect()
        };
        assert_eq!(auth(&plain), auth(&tagged));
        sign_request(&mut tagged, &how(None), at + Duration::from_secs(1)).unwrap();
        assert_eq!(auth(&tagged).len(), 1);
        assert_ne!(auth(&plain), auth(&tagged), "a new date, a new signature");
    }

    #[test]
    fn host_is_the_authority_without_a_default_port() {
        assert_eq!(
            host_of("http://127.0.0.1:8080/api").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            host_of("https://api.example.com:443").as_deref(),
            Some("api.example.com")
        );
        assert_eq!(host_of("http://[::1]:80").as_deref(), Some("[::1]"));
    }
}
