//! A client's malformed HTTP is the client side's fault: whatever hyper rejects before a request
//! exists (bad header bytes, a huge URI, too many headers) gets a problem body from the proxy and
//! from its control API, never an empty answer.

use rstest::rstest;
use rstest_reuse::apply;
use serde_json::Value;

use idemspec_proxy::{start, ProxyConfig};

use crate::support::*;

/// Requests hyper refuses to parse, and the status each must get.
fn unparseable() -> Vec<(&'static str, Vec<u8>, u16)> {
    let long_uri = format!(
        "GET /{} HTTP/1.1\r\nHost: t\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let mut many_headers = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..500 {
        many_headers.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    many_headers.extend_from_slice(b"\r\n");
    vec![
        (
            "bad header bytes",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-Bad\xffName: 1\r\n\r\n".to_vec(),
            400,
        ),
        ("a 100 KB URI", long_uri.into_bytes(), 414),
        ("500 headers", many_headers, 431),
        (
            "a control character in a header value",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-Ctl: a\x01b\r\n\r\n".to_vec(),
            400,
        ),
    ]
}

/// Asserts that `got` is a complete problem response with `status`, and returns its body.
pub fn assert_problem(what: &str, got: &Raw, status: u16) -> Value {
    let text = got.text();
    assert!(
        text.starts_with(&format!("HTTP/1.1 {status} ")),
        "{what}: expected {status}, got {:?}",
        &text[..text.len().min(200)]
    );
    let head = &text[..text.find("\r\n\r\n").expect("a complete head")].to_ascii_lowercase();
    assert!(
        head.contains("content-type: application/problem+json"),
        "{what}: {head}"
    );
    let problem: Value = serde_json::from_slice(got.body())
        .unwrap_or_else(|e| panic!("{what}: the body is a problem document ({e}): {text}"));
    assert_eq!(problem["status"], status, "{what}: {problem}");
    assert!(
        problem["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "{what}: {problem}"
    );
    problem
}

#[apply(both_runtimes)]
async fn unparseable_requests_get_a_problem_body_from_the_proxy(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    for (what, request, status) in unparseable() {
        let got = raw(proxy.addr(), &request).await;
        let problem = assert_problem(what, &got, status);
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("idemspec-proxy"),
            "{what}: the proxy says it answered: {problem}"
        );
    }
    assert_eq!(upstream.count(), 0, "garbage never reaches the upstream");
    proxy.shutdown().await;
}

#[tokio::test]
async fn unparseable_requests_get_a_problem_body_from_the_control_api() {
    let upstream = Upstream::start().await;
    let proxy = start(ProxyConfig {
        upstream: upstream.url(),
        control: Some("127.0.0.1:0".parse().unwrap()),
        ..ProxyConfig::default()
    })
    .await
    .unwrap();
    let control = proxy.control_addr().unwrap();
    for (what, request, status) in unparseable() {
        let got = raw(control, &request).await;
        assert_problem(what, &got, status);
    }
    proxy.shutdown().await;
}
