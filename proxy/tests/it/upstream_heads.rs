//! An upstream that answers with a response head over the proxy's limits (more than 100 headers,
//! or a head longer than 417,792 bytes) answered: the client gets a `502` saying the proxy refused
//! the head and naming the limit, and the event says so (`upstream_head_refused`), on the fast
//! path, on hyper's path, and under `drop_response`, which reads the answer itself.

use rstest::rstest;

use idemspec_proxy::{start, ProxyConfig, ProxyEvent, ProxyHandle};

use crate::support::*;

/// A head of 200 headers.
fn many_headers() -> Vec<u8> {
    let mut head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".to_vec();
    for i in 0..200 {
        head.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    head.extend_from_slice(b"\r\n{}");
    head
}

/// A head with one header line of 1 MiB.
fn huge_line() -> Vec<u8> {
    let mut head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: ".to_vec();
    head.extend(std::iter::repeat_n(b'a', 1 << 20));
    head.extend_from_slice(b"\r\n\r\n{}");
    head
}

/// No rule, a rule that never applies (hyper's path), and `drop_response`.
fn rules_for(path: &str) -> Vec<idemspec_scenarios::rules::Rule> {
    match path {
        "fast" => vec![],
        "hyper" => rules(HYPER_PATH_RULE),
        _ => rules("- {name: drop, fault: {drop_response: {}}}"),
    }
}

async fn proxy(path: &str, head: Vec<u8>) -> ProxyHandle {
    let (up, _) = answering(move |_| Some(head.clone())).await;
    start(ProxyConfig {
        upstream: format!("http://{up}"),
        rules: rules_for(path),
        ..ProxyConfig::default()
    })
    .await
    .expect("proxy starts")
}

async fn event_of(proxy: &ProxyHandle) -> ProxyEvent {
    eventually("the exchange is recorded", || !proxy.events().is_empty()).await;
    proxy.events().remove(0)
}

#[rstest]
#[case::fast_200_headers("fast", many_headers(), "more than 100 headers")]
#[case::fast_1mib_line("fast", huge_line(), "more than 417792 bytes")]
#[case::hyper_200_headers(
    "hyper",
    many_headers(),
    "more than 100 headers or more than 417792 bytes"
)]
#[case::hyper_1mib_line(
    "hyper",
    huge_line(),
    "more than 100 headers or more than 417792 bytes"
)]
#[case::drop_200_headers(
    "drop",
    many_headers(),
    "more than 100 headers or more than 417792 bytes"
)]
#[tokio::test]
async fn a_head_over_the_limits_is_an_answer_refused_not_silence(
    #[case] path: &str,
    #[case] head: Vec<u8>,
    #[case] limit: &str,
) {
    let proxy = proxy(path, head).await;
    let got = raw(proxy.addr(), &post("/v1/things", "Idempotency-Key: k1\r\n")).await;
    let event = event_of(&proxy).await;
    assert_eq!(
        event.upstream_head_refused.as_deref(),
        Some(limit),
        "{event:?}"
    );
    assert_eq!(event.upstream_sends, 1, "{event:?}");
    assert_eq!(event.upstream_status, None, "{event:?}");
    let error = event.upstream_error.clone().unwrap_or_default();
    assert!(
        error.contains("answered, with a response head idemspec-proxy refuses")
            && error.contains(limit),
        "{error}"
    );
    if path == "drop" {
        assert!(!event.client_complete, "{event:?}");
        return;
    }
    let problem = crate::malformed::assert_problem(path, &got, 502);
    assert_eq!(
        problem["detail"].as_str(),
        Some(error.as_str()),
        "{problem}"
    );
}
