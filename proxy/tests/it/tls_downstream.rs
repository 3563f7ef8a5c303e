//! TLS on the proxy's own port: clients handshake with the proxy's certificate, faults act as on
//! plain HTTP, and plain HTTP sent to the port is answered with what to do.

use idemspec_proxy::ProxyConfig;

use crate::support::*;

/// A reqwest client that trusts `pki`'s CA (and only speaks rustls).
fn trusting(pki: &Pki) -> reqwest::Client {
    trusting_file(pki.ca_file())
}

/// A reqwest client that trusts the CA certificates of `ca_file`.
fn trusting_file(ca_file: std::path::PathBuf) -> reqwest::Client {
    let trust = idemspec_tls::TrustOptions {
        ca_file: Some(ca_file),
        ..Default::default()
    };
    let config = idemspec_tls::client_config(&trust, None).unwrap();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(PATIENCE)
        .use_preconfigured_tls((*config).clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_client_that_trusts_the_ca_is_served_and_faulted_over_tls() {
    let pki = Pki::new();
    let (proxy, upstream) = proxied_with(ProxyConfig {
        listen_tls: Some(pki.server(false)),
        rules: rules("- name: gw\n  match: {path: /busy}\n  fault: {respond: {status: 503}}\n"),
        ..ProxyConfig::default()
    })
    .await;
    let base = format!("https://localhost:{}", proxy.addr().port());
    let client = trusting(&pki);
    let ok = client
        .post(format!("{base}/v1/workers"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let busy = client.post(format!("{base}/busy")).send().await.unwrap();
    assert_eq!(busy.status(), 503);
    assert_eq!(
        upstream.count(),
        1,
        "the faulted request never reached the upstream"
    );
    let faults: Vec<_> = proxy.events().iter().map(|e| e.fault.clone()).collect();
    assert_eq!(faults, [None, Some("respond".to_string())]);
    proxy.shutdown().await;
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_told_to_use_https() {
    let pki = Pki::new();
    let (proxy, upstream) = proxied_with(ProxyConfig {
        listen_tls: Some(pki.server(false)),
        ..ProxyConfig::default()
    })
    .await;
    let got = raw(proxy.addr(), &post("/v1/workers", "")).await;
    assert!(got.text().starts_with("HTTP/1.1 400"), "{}", got.text());
    let words = idemspec_tls::explain_plain_answer(&got.bytes).expect("named as plain HTTP");
    assert!(words.contains("https://"), "{words}");
    assert_eq!(upstream.count(), 0);
    proxy.shutdown().await;
}

#[tokio::test]
async fn the_cli_flags_serve_tls_and_reach_an_https_upstream() {
    use idemspec_proxy::cli::{self, ProxyArgs, TlsArgs};
    let pki = Pki::new();
    let upstream = Upstream::start_tls(pki.server(false)).await;
    let args = ProxyArgs {
        upstream: Some(upstream.https_url()),
        threads: Some(0),
        tls: TlsArgs {
            tls_self_signed: true,
            tls_ca_file: Some(pki.ca_file()),
            ..TlsArgs::default()
        },
        ..ProxyArgs::default()
    };
    let configured = cli::config(&args).unwrap();
    let ca = configured.self_signed_ca.expect("a CA certificate written");
    let proxy = idemspec_proxy::start(configured.config).await.unwrap();
    let client = trusting_file(ca.ca_file().to_path_buf());
    let url = format!("https://localhost:{}/v1/workers", proxy.addr().port());
    let resp = client.post(url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(upstream.count(), 1);
    proxy.shutdown().await;
}
