//! A client's malformed HTTP is the client side's fault: whatever hyper rejects before a request
//! exists (bad header bytes, a huge URI, too many headers) and a request body that breaks its own
//! framing get a problem body from the proxy, never an empty answer or a 502, and the event blames
//! the downstream side.

use rstest::rstest;
use rstest_reuse::apply;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use idemspec_proxy::Side;

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
    let (proxy, _upstream) = proxied_with(with_control()).await;
    let control = proxy.control_addr().unwrap();
    for (what, request, status) in unparseable() {
        let got = raw(control, &request).await;
        assert_problem(what, &got, status);
    }
    proxy.shutdown().await;
}

/// The one event the proxy recorded, once it is there.
async fn only_event(proxy: &idemspec_proxy::ProxyHandle) -> idemspec_proxy::ProxyEvent {
    eventually("the event", || !proxy.events().is_empty()).await;
    let events = proxy.events();
    assert_eq!(events.len(), 1, "{events:?}");
    events.into_iter().next().unwrap()
}

/// A chunked body with a broken chunk-size line, through the pass-through and through faults that
/// forward: the client, still there, reads a 400 problem; the event says the client side failed.
#[apply(both_runtimes)]
async fn a_malformed_chunked_body_gets_400_and_blames_the_client(threads: usize) {
    for (name, yaml) in [
        ("pass-through", "[]"),
        (
            "delay_response",
            "[{name: late, fault: {delay_response: {duration: 10ms}}}]",
        ),
        ("duplicate", "[{name: twice, fault: duplicate}]"),
    ] {
        let (proxy, _upstream) = proxied(threads, rules(yaml)).await;
        let got = raw(
            proxy.addr(),
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz-not-hex\r\n\r\n",
        )
        .await;
        assert_problem(name, &got, 400);
        let e = only_event(&proxy).await;
        assert_eq!(e.error_side, Some(Side::Downstream), "{name}: {e:?}");
        assert_eq!(e.client_status, Some(400), "{name}: {e:?}");
        assert!(!e.client_disconnected, "{name}: the client stayed: {e:?}");
        proxy.shutdown().await;
    }
}

/// A body shorter than its `Content-Length`, then the client's sending side closed: the client
/// ended its request early, which the event says instead of blaming the upstream. One client
/// half-closes and reads the 400 problem; the other closes the whole connection.
#[apply(both_runtimes)]
async fn a_body_shorter_than_its_content_length_blames_the_client_that_left(threads: usize) {
    for half_close in [true, false] {
        let (proxy, upstream) = proxied(threads, vec![]).await;
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        stream
            .write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly ten b")
            .await
            .unwrap();
        if half_close {
            stream.shutdown().await.unwrap();
            let got = read_to_end(&mut stream).await;
            assert_problem("short body, half-closed", &got, 400);
        } else {
            drop(stream);
        }
        let e = only_event(&proxy).await;
        assert_eq!(e.error_side, Some(Side::Downstream), "{e:?}");
        assert!(e.client_disconnected, "half-closed {half_close}: {e:?}");
        assert_ne!(e.client_status, Some(502), "{e:?}");
        assert_eq!(
            upstream.count(),
            0,
            "the upstream never got a whole request"
        );
        proxy.shutdown().await;
    }
}
