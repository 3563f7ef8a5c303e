//! The proxy originating TLS to an `https://` upstream: every fault as over plain HTTP, a client
//! certificate per principal, and a refused handshake told in words.

use std::io::ErrorKind;

use idemspec_proxy::{start, ProxyConfig, ProxyHandle};

use crate::support::*;

/// An HTTPS upstream of `pki` (requiring a client certificate with `mtls`) and a proxy in front
/// of it that trusts `pki` and holds a certificate for each of `principals`.
async fn over_tls(
    pki: &Pki,
    mtls: bool,
    principals: &[&str],
    rules: Vec<idemspec_scenarios::rules::Rule>,
) -> (ProxyHandle, Upstream) {
    let upstream = Upstream::start_tls(pki.server(mtls)).await;
    let proxy = start(ProxyConfig {
        upstream: upstream.https_url(),
        upstream_tls: Some(pki.upstream_tls(principals)),
        rules,
        ..ProxyConfig::default()
    })
    .await
    .expect("proxy starts");
    (proxy, upstream)
}

/// What the event says of a request through a proxy trusting `pki` to `upstream`, which the
/// client got as a 502.
async fn upstream_error_of(upstream: String, pki: &Pki) -> String {
    let proxy = start(ProxyConfig {
        upstream,
        upstream_tls: Some(pki.upstream_tls(&[])),
        ..ProxyConfig::default()
    })
    .await
    .unwrap();
    let resp = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        http()
            .get(format!("http://{}/v1/workers", proxy.addr()))
            .send(),
    )
    .await
    .expect("answered before the test's bound")
    .unwrap();
    assert_eq!(resp.status(), 502);
    let error = proxy.events()[0].upstream_error.clone().unwrap_or_default();
    proxy.shutdown().await;
    error
}

#[tokio::test]
async fn pass_through_and_5xx_reach_the_client_as_the_upstream_sent_them() {
    let pki = Pki::new();
    let (proxy, upstream) = over_tls(&pki, false, &[], vec![]).await;
    let client = http();
    for (path, status) in [
        ("/v1/workers", 200),
        ("/status/503", 503),
        ("/v1/again", 200),
    ] {
        let resp = client
            .post(format!("http://{}{path}", proxy.addr()))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), status, "{path}");
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["path"], path);
    }
    assert_eq!(upstream.count(), 3);
    let statuses: Vec<_> = proxy.events().iter().map(|e| e.upstream_status).collect();
    assert_eq!(statuses, [Some(200), Some(503), Some(200)]);
    proxy.shutdown().await;
}

#[tokio::test]
async fn drop_response_does_the_work_over_tls_and_the_client_never_hears() {
    let pki = Pki::new();
    let rules = rules("- name: lose\n  fault: {drop_response: {}}\n");
    let (proxy, upstream) = over_tls(&pki, false, &[], rules).await;
    let got = raw(
        proxy.addr(),
        &post("/v1/workers", "Idempotency-Key: K1\r\n"),
    )
    .await;
    assert!(got.bytes.is_empty(), "no response: {:?}", got.text());
    assert_eq!(upstream.count(), 1, "the upstream did the work once");
    let e = &proxy.events()[0];
    assert_eq!((e.upstream_status, e.client_status), (Some(200), None));
    proxy.shutdown().await;
}

#[tokio::test]
async fn reset_mid_response_cuts_a_tls_upstreams_answer() {
    let pki = Pki::new();
    let rules = rules("- name: cut\n  fault: {reset_mid_response: {after_bytes: 1000}}\n");
    let (proxy, upstream) = over_tls(&pki, false, &[], rules).await;
    let got = raw(
        proxy.addr(),
        b"GET /stream/100000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(got.text().starts_with("HTTP/1.1 200"), "{:.80}", got.text());
    assert!(
        got.body().len() < 1100,
        "got {} body bytes",
        got.body().len()
    );
    assert_eq!(got.error, Some(ErrorKind::ConnectionReset));
    assert_eq!(upstream.count(), 1);
    assert_eq!(proxy.events()[0].client_bytes, 1000);
    proxy.shutdown().await;
}

#[tokio::test]
async fn duplicate_and_hang_forward_over_tls() {
    let pki = Pki::new();
    let rules = rules(
        "- name: twice\n  match: {path: /twice}\n  fault: {duplicate: {mode: sequential}}\n\
         - name: hold\n  match: {path: /held}\n  fault: {hang: {forward: true}}\n",
    );
    let (proxy, upstream) = over_tls(&pki, false, &[], rules).await;
    let resp = http()
        .post(format!("http://{}/twice", proxy.addr()))
        .body("payload")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(upstream.count(), 2, "both copies reached the upstream");
    let err = impatient(500)
        .post(format!("http://{}/held", proxy.addr()))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "the client gave up on the hung request");
    eventually("the hung request reached the upstream", || {
        upstream.count() == 3
    })
    .await;
    proxy.shutdown().await;
}

#[tokio::test]
async fn each_principal_shows_its_own_certificate_and_the_header_is_stripped() {
    let pki = Pki::new();
    let (proxy, upstream) = over_tls(&pki, true, &["alice", "bob"], vec![]).await;
    // One client, one keep-alive downstream connection: the principals alternate on it.
    let client = http();
    for principal in ["alice", "bob", "alice", "bob"] {
        let resp = client
            .post(format!("http://{}/v1/workers", proxy.addr()))
            .header("x-idemspec-principal", principal)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{principal}");
    }
    let shown: Vec<_> = upstream
        .seen()
        .iter()
        .map(|s| {
            assert!(!s.headers.contains_key("x-idemspec-principal"));
            s.headers["x-peer-certificate"].to_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(shown, ["CN=alice", "CN=bob", "CN=alice", "CN=bob"]);
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_principal_without_a_certificate_is_told_the_upstream_demanded_one() {
    let pki = Pki::new();
    let (proxy, upstream) = over_tls(&pki, true, &["alice"], vec![]).await;
    for principal in [Some("carol"), None] {
        let mut req = http().post(format!("http://{}/v1/workers", proxy.addr()));
        if let Some(principal) = principal {
            req = req.header("x-idemspec-principal", principal);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 502, "{principal:?}");
        let body = resp.text().await.unwrap();
        assert!(
            body.contains("the upstream demanded a client certificate"),
            "{body}"
        );
    }
    assert_eq!(upstream.count(), 0);
    for e in proxy.events() {
        let error = e.upstream_error.as_deref().unwrap_or_default();
        assert!(
            error.contains("the upstream demanded a client certificate"),
            "{error}"
        );
    }
    proxy.shutdown().await;
}

#[tokio::test]
async fn an_untrusted_upstream_certificate_is_named_in_the_event() {
    let pki = Pki::new();
    let stranger = Pki::new();
    let upstream = Upstream::start_tls(stranger.server(false)).await;
    let error = upstream_error_of(upstream.https_url(), &pki).await;
    assert!(error.contains("unknown issuer"), "{error}");
}

#[tokio::test]
async fn an_unreadable_identity_fails_the_start_naming_the_file() {
    let pki = Pki::new();
    let mut tls = pki.upstream_tls(&["alice"]);
    let missing = pki.dir.path().join("missing-key.pem");
    tls.identities.get_mut("alice").unwrap().key_file = missing;
    let err = start(ProxyConfig {
        upstream: "https://localhost:1".into(),
        upstream_tls: Some(tls),
        ..ProxyConfig::default()
    })
    .await
    .unwrap_err();
    let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(chain.contains("missing-key.pem"), "{chain}");
}

#[tokio::test]
async fn an_https_upstream_that_speaks_plain_http_is_told_to_use_http() {
    let pki = Pki::new();
    let upstream = Upstream::start().await;
    let url = format!("https://localhost:{}", upstream.addr.port());
    let error = upstream_error_of(url, &pki).await;
    assert!(
        error.contains("plain HTTP") && error.contains("http://"),
        "{error}"
    );
    assert_eq!(upstream.count(), 0);
}

/// An upstream that accepts the connection and never finishes the handshake gets the request a
/// 502 naming the stall within the handshake bound (10 s), not a request held forever.
#[tokio::test]
async fn an_upstream_that_stalls_the_handshake_is_a_named_502() {
    let pki = Pki::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            conns.push(conn);
        }
    });
    let error = upstream_error_of(format!("https://localhost:{port}"), &pki).await;
    assert!(
        error.contains("did not finish the TLS handshake"),
        "{error}"
    );
    held.abort();
}

/// `idemspec proxy` in front of an upstream that demands a client certificate: with
/// `--tls-client-cert`/`--tls-client-key` its certificate is shown (no principal header needed);
/// without, the 502 names the missing certificate and the flags that give one, not a profile's
/// fields.
#[tokio::test]
async fn the_standalone_proxy_shows_its_client_certificate_to_an_mtls_upstream() {
    use idemspec_proxy::cli::{self, ProxyArgs, TlsArgs};
    let pki = Pki::new();
    let upstream = Upstream::start_tls(pki.server(true)).await;
    let identity = pki.client("standalone");
    let with = TlsArgs {
        tls_ca_file: Some(pki.ca_file()),
        tls_client_cert: Some(identity.cert_file.clone()),
        tls_client_key: Some(identity.key_file.clone()),
        ..TlsArgs::default()
    };
    let without = TlsArgs {
        tls_ca_file: Some(pki.ca_file()),
        ..TlsArgs::default()
    };
    for (tls, status) in [(with, 200), (without, 502)] {
        let args = ProxyArgs {
            upstream: Some(upstream.https_url()),
            threads: Some(0),
            tls,
            ..ProxyArgs::default()
        };
        let proxy = start(cli::config(&args).unwrap().config).await.unwrap();
        let resp = http()
            .post(format!("http://{}/v1/workers", proxy.addr()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), status);
        let body = resp.text().await.unwrap();
        if status == 502 {
            assert!(
                body.contains("the upstream demanded a client certificate")
                    && body.contains("--tls-client-cert")
                    && !body.contains("cert_file"),
                "{body}"
            );
        }
        proxy.shutdown().await;
    }
    let shown: Vec<_> = upstream
        .seen()
        .iter()
        .map(|s| s.headers["x-peer-certificate"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        shown,
        ["CN=standalone"],
        "only the request with the certificate arrived"
    );
}
