//! One test per fault verb: what the client saw, what the upstream saw, what the event says.

use rstest::rstest;
use rstest_reuse::apply;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use crate::support::*;

#[apply(both_runtimes)]
async fn refuse_closes_before_forwarding(threads: usize) {
    let (proxy, upstream) = proxied(threads, rules("- name: no\n  fault: refuse\n")).await;
    let got = raw(proxy.addr(), &post("/v1/workers", "")).await;
    assert!(
        got.bytes.is_empty(),
        "no byte of a response: {:?}",
        got.text()
    );
    assert_eq!(
        upstream.count(),
        0,
        "the upstream never sees a refused request"
    );
    let events = proxy.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].fault.as_deref(), Some("refuse"));
    assert_eq!(events[0].rule.as_deref(), Some("no"));
    assert_eq!(events[0].upstream_sends, 0);
    assert!(!events[0].client_complete);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn refuse_with_reset_sends_rst(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: rst\n  fault: {refuse: {reset: true}}\n"),
    )
    .await;
    let got = raw(proxy.addr(), &post("/v1/workers", "")).await;
    assert!(got.bytes.is_empty());
    assert_eq!(got.error, Some(ErrorKind::ConnectionReset), "RST, not FIN");
    assert_eq!(upstream.count(), 0);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn respond_answers_without_forwarding(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: gw\n  fault: {respond: {status: 503, body: \"try later\"}}\n"),
    )
    .await;
    let resp = http()
        .post(format!("http://{}/v1/workers", proxy.addr()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.text().await.unwrap(), "try later");
    assert_eq!(upstream.count(), 0);
    let e = &proxy.events()[0];
    assert_eq!(
        (e.client_status, e.upstream_sends, e.client_complete),
        (Some(503), 0, true)
    );
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn respond_sends_the_rules_headers(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules(
            "- name: slow-down\n  fault: {respond: {status: 429, headers: {Retry-After: \"2\"}}}\n",
        ),
    )
    .await;
    let resp = http()
        .post(format!("http://{}/v1/workers", proxy.addr()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    assert_eq!(upstream.count(), 0);
    assert_eq!(proxy.events()[0].client_status, Some(429));
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn drop_response_does_the_work_and_the_client_never_hears(threads: usize) {
    let (proxy, upstream) = proxied(threads, rules(
        "- name: lose\n  match: {method: POST, path: /v1/workers}\n  fault: {drop_response: {}}\n",
    ))
    .await;
    let got = raw(
        proxy.addr(),
        &post(
            "/v1/workers",
            "Idempotency-Key: K1\r\nX-Idemspec-Step: lost-1\r\n",
        ),
    )
    .await;
    assert!(
        got.bytes.is_empty(),
        "not a byte of the response: {:?}",
        got.text()
    );
    assert_eq!(
        upstream.count(),
        1,
        "the upstream did the work exactly once"
    );
    let e = &proxy.events()[0];
    assert_eq!(
        e.upstream_status,
        Some(200),
        "the event knows the work was done"
    );
    assert_eq!(e.client_status, None);
    assert!(!e.client_complete);
    assert!(!e.client_disconnected, "the proxy closed, not the client");
    assert_eq!(e.idempotency_key.as_deref(), Some("K1"));
    assert_eq!(e.step.as_deref(), Some("lost-1"));
    // Without the rule, a retry on a new connection passes through.
    proxy.clear_rules();
    let resp = http()
        .post(format!("http://{}/v1/workers", proxy.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(upstream.count(), 2);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn reset_mid_response_sends_head_and_some_body_then_rst(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: cut\n  fault: {reset_mid_response: {after_bytes: 1000}}\n"),
    )
    .await;
    let got = raw(
        proxy.addr(),
        b"GET /stream/100000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    let text = got.text();
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "status line arrived: {text:.80}"
    );
    assert_eq!(upstream.count(), 1);
    // The body is chunked: at most 1000 payload bytes plus chunk framing, never all 100000.
    assert!(
        got.body().len() < 1100,
        "got {} body bytes",
        got.body().len()
    );
    assert!(!text.ends_with("0\r\n\r\n"), "no terminating chunk");
    assert_eq!(got.error, Some(ErrorKind::ConnectionReset));
    let e = &proxy.events()[0];
    assert_eq!(e.client_bytes, 1000);
    assert!(!e.client_complete);
    // With a content length the client sees a short body, never the whole.
    let short = raw(proxy.addr(), &post("/x", "")).await;
    assert!(short.text().starts_with("HTTP/1.1 200"));
    let declared: usize = short
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("content-length");
    assert!(
        short.body().len() < declared,
        "the response is never complete"
    );
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn delay_request_holds_before_forwarding(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: slow\n  fault: {delay_request: {duration: 400ms}}\n"),
    )
    .await;
    let started = Instant::now();
    let client = http();
    let fut = client.get(format!("http://{}/a", proxy.addr())).send();
    let check = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        upstream.count()
    };
    let (resp, early) = tokio::join!(fut, check);
    assert_eq!(resp.unwrap().status(), 200);
    assert_eq!(early, 0, "not forwarded before the delay");
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(upstream.count(), 1);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn delay_response_forwards_at_once_and_answers_late(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: late\n  fault: {delay_response: {duration: 500ms}}\n"),
    )
    .await;
    let started = Instant::now();
    let client = http();
    let fut = client.get(format!("http://{}/a", proxy.addr())).send();
    let watch = async {
        eventually("the upstream got the request", || upstream.count() == 1).await;
        started.elapsed()
    };
    let (resp, forwarded_after) = tokio::join!(fut, watch);
    assert_eq!(resp.unwrap().status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(
        forwarded_after < Duration::from_millis(500),
        "forwarded before the delay ended"
    );
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn client_timeout_during_delay_is_recorded_as_a_disconnect(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: late\n  fault: {delay_response: {duration: 3s}}\n"),
    )
    .await;
    let client = impatient(300);
    let err = client
        .post(format!("http://{}/v1/workers", proxy.addr()))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    eventually("the disconnect is recorded", || !proxy.events().is_empty()).await;
    let e = &proxy.events()[0];
    assert!(e.client_disconnected);
    assert_eq!(
        e.upstream_status,
        Some(200),
        "the server still did the work"
    );
    assert_eq!(upstream.count(), 1);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn hang_holds_until_the_client_gives_up(threads: usize) {
    let (proxy, upstream) = proxied(threads, rules(
        "- name: hold\n  match: {path: /held}\n  fault: {hang: {forward: false}}\n- name: work\n  match: {path: /worked}\n  fault: {hang: {forward: true}}\n",
    ))
    .await;
    let client = impatient(500);
    for path in ["/held", "/worked"] {
        let err = client
            .post(format!("http://{}{path}", proxy.addr()))
            .body("x")
            .send()
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{path}: the client gave up");
    }
    eventually("both disconnects recorded", || proxy.events().len() == 2).await;
    let seen: Vec<String> = upstream.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(
        seen,
        ["/worked"],
        "only the forwarding hang reached the upstream"
    );
    for e in proxy.events() {
        assert!(e.client_disconnected, "{e:?}");
        assert_eq!(e.fault.as_deref(), Some("hang"));
    }
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn hang_is_released_by_shutdown(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: hold\n  fault: {hang: {forward: true}}\n"),
    )
    .await;
    let addr = proxy.addr();
    let waiting = tokio::spawn(async move { raw(addr, &post("/x", "")).await });
    eventually("the request reached the upstream", || upstream.count() == 1).await;
    let stopping = Instant::now();
    proxy.shutdown().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(4),
        "hung requests do not wait out the grace period"
    );
    let got = tokio::time::timeout(PATIENCE, waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(got.bytes.is_empty(), "a hung request never gets an answer");
    let e = &proxy.events()[0];
    assert!(!e.client_disconnected && !e.client_complete);
    assert_eq!(e.upstream_status, Some(200));
}

#[apply(both_runtimes)]
async fn duplicate_sends_twice_and_answers_with_the_first(threads: usize) {
    for mode in ["sequential", "concurrent"] {
        let (proxy, upstream) = proxied(
            threads,
            rules(&format!(
                "- name: twice\n  fault: {{duplicate: {{mode: {mode}}}}}\n"
            )),
        )
        .await;
        let resp = http()
            .post(format!("http://{}/v1/workers", proxy.addr()))
            .body("payload")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(upstream.count(), 2, "{mode}: the upstream got both copies");
        for seen in upstream.seen() {
            assert_eq!(&seen.body[..], b"payload", "{mode}: same bytes each time");
            assert_eq!(
                (seen.method.as_str(), seen.path.as_str()),
                ("POST", "/v1/workers")
            );
        }
        if mode == "sequential" {
            assert_eq!(body["n"], 1, "the first copy's response");
        }
        let e = &proxy.events()[0];
        assert_eq!(e.upstream_sends, 2);
        assert!(e.client_complete);
        proxy.shutdown().await;
    }
}

#[tokio::test]
async fn upstream_down_gets_502_problem_and_an_event() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = closed.local_addr().unwrap();
    drop(closed);
    let proxy = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
        upstream: format!("http://{dead}"),
        ..Default::default()
    })
    .await
    .unwrap();
    let resp = http()
        .post(format!("http://{}/v1/workers", proxy.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 502);
    assert_eq!(resp.headers()["content-type"], "application/problem+json");
    let problem: serde_json::Value = resp.json().await.unwrap();
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains(&dead.to_string()),
        "{problem}"
    );
    let e = &proxy.events()[0];
    assert_eq!(e.upstream_sends, 0);
    assert_eq!(e.error_side, Some(idemspec_proxy::Side::Upstream));
    assert!(e.upstream_error.is_some());
    proxy.shutdown().await;
}

/// A client that gives up while its request is still at the upstream (a slow server) leaves an
/// event that says the request was sent, and gets the upstream's status once it answers: the
/// runner's "did the server do the work" must not read "never reached" here.
#[apply(both_runtimes)]
async fn a_client_that_gives_up_before_the_upstream_answers_is_still_recorded_as_sent(
    threads: usize,
) {
    let cases = [
        ("pass-through", "[]", 1),
        ("hang", "[{name: h, fault: {hang: {forward: true}}}]", 1),
        (
            "late",
            "[{name: l, fault: {delay_response: {duration: 2s}}}]",
            1,
        ),
        (
            "dup",
            "[{name: d, fault: {duplicate: {mode: concurrent}}}]",
            2,
        ),
    ];
    for (name, yaml, sends) in cases {
        let (proxy, upstream) = proxied(threads, rules(yaml)).await;
        let client = impatient(150);
        let err = client
            .post(format!("http://{}/slow/600", proxy.addr()))
            .body("x")
            .send()
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{name}: {err}");
        eventually("the event", || !proxy.events().is_empty()).await;
        let e = &proxy.events()[0];
        assert!(e.client_disconnected, "{name}: {e:?}");
        assert_eq!(e.upstream_sends, sends, "{name}: {e:?}");
        eventually("the upstream's status, recorded after the fact", || {
            proxy.events()[0].upstream_status == Some(200)
        })
        .await;
        assert_eq!(upstream.count(), usize::from(sends), "{name}");
        assert_eq!(proxy.events().len(), 1, "{name}: one event per request");
        proxy.shutdown().await;
    }
}

#[tokio::test]
async fn the_key_header_recorded_is_the_one_configured() {
    let upstream = Upstream::start().await;
    let proxy = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
        upstream: upstream.url(),
        key_at: idemspec_scenarios::profile::KeyAt::Header("PayPal-Request-Id".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    let resp = http()
        .post(format!("http://{}/v1/orders", proxy.addr()))
        .header("PayPal-Request-Id", "order-7")
        .header("Idempotency-Key", "not-this-one")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        proxy.events()[0].idempotency_key.as_deref(),
        Some("order-7")
    );
    proxy.shutdown().await;
}

/// A key outside the headers is recorded, and matched by a rule's `idempotency_key`, where
/// `key_at` says: a query parameter, a form field, a JSON member (a nested one too). The body
/// reaches the upstream byte for byte, and its `Content-Length` with it.
#[tokio::test]
async fn a_key_in_the_query_or_the_body_is_recorded_and_matched() {
    use idemspec_scenarios::profile::KeyAt;
    let cases: [(KeyAt, &str, &str, &str); 4] = [
        (
            KeyAt::Query("requestId".into()),
            "/echo?zone=z&requestId=r-1",
            "",
            "r-1",
        ),
        (
            KeyAt::Form("ClientToken".into()),
            "/echo",
            "Action=RunInstances&ClientToken=tok%201",
            "tok 1",
        ),
        (
            KeyAt::Json("clientToken".into()),
            "/echo",
            r#"{"image":"debian","clientToken":"c-9"}"#,
            "c-9",
        ),
        (
            KeyAt::Json("params.token".into()),
            "/echo",
            r#"{"params":{"token":"p-2"}}"#,
            "p-2",
        ),
    ];
    for (key_at, path, body, key) in cases {
        let upstream = Upstream::start().await;
        let proxy = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
            upstream: upstream.url(),
            key_at: key_at.clone(),
            rules: rules(&format!(
                "- name: keyed\n  match: {{idempotency_key: {key:?}, path_prefix: /refused}}\n  fault: {{respond: {{status: 409}}}}\n"
            )),
            ..Default::default()
        })
        .await
        .unwrap();
        let resp = http()
            .post(format!("http://{}{path}", proxy.addr()))
            .header("Idempotency-Key", "not-this-one")
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{key_at:?}");
        assert_eq!(resp.bytes().await.unwrap(), body.as_bytes(), "{key_at:?}");
        assert_eq!(
            proxy.events()[0].idempotency_key.as_deref(),
            Some(key),
            "{key_at:?}"
        );
        let seen = &upstream.seen()[0];
        assert_eq!(seen.body, body.as_bytes(), "{key_at:?}");
        if !body.is_empty() {
            assert_eq!(
                seen.headers["content-length"].to_str().unwrap(),
                body.len().to_string(),
                "{key_at:?}"
            );
        }
        // The rule reads the same key.
        let refused_path = path.replacen("/echo", "/refused", 1);
        let refused = http()
            .post(format!("http://{}{refused_path}", proxy.addr()))
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 409, "{key_at:?}");
        proxy.shutdown().await;
    }
}

/// A body longer than the 64 KiB the proxy reads for a key goes upstream whole and unchanged,
/// sent as it came (chunked here); its key is not recorded. A short chunked body's key is.
#[tokio::test]
async fn a_body_past_the_key_limit_is_forwarded_whole_without_a_key() {
    use idemspec_scenarios::profile::KeyAt;
    let upstream = Upstream::start().await;
    let proxy = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
        upstream: upstream.url(),
        key_at: KeyAt::Json("clientToken".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    let filler = "x".repeat(200 * 1024);
    let long = format!(r#"{{"clientToken":"big","filler":"{filler}"}}"#);
    let short = r#"{"clientToken":"small"}"#.to_owned();
    for body in [long.clone(), short.clone()] {
        // Without a length: sent chunked, 10 000 bytes a chunk.
        let mut request = b"POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for chunk in body.as_bytes().chunks(10_000) {
            request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            request.extend_from_slice(chunk);
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"0\r\n\r\n");
        let answer = raw(proxy.addr(), &request).await;
        assert!(
            answer.text().starts_with("HTTP/1.1 200"),
            "{}",
            &answer.text()[..80]
        );
    }
    let seen = upstream.seen();
    assert_eq!(seen[0].body, long.as_bytes());
    assert_eq!(seen[1].body, short.as_bytes());
    let events = proxy.events();
    assert_eq!(events[0].idempotency_key, None, "past the limit: not read");
    assert!(
        events[0]
            .key_unread
            .as_deref()
            .is_some_and(|w| w.contains("64 KiB")),
        "{:?}",
        events[0].key_unread
    );
    assert_eq!(events[1].idempotency_key.as_deref(), Some("small"));
    proxy.shutdown().await;
}

/// A body sent compressed is read as sent: the key in a gzip form body is recorded (and the body
/// goes upstream compressed, as it came); a body that decodes to more than the proxy reads (a
/// decompression bomb) and a JSON body naming its key twice have no key, each with the reason.
#[tokio::test]
async fn a_compressed_body_is_read_as_sent_and_an_ambiguous_one_is_named() {
    use idemspec_scenarios::profile::KeyAt;
    use std::io::Write;
    let gzip = |data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let form = gzip(b"Action=RunInstances&ClientToken=tok-1");
    let bomb = gzip(&vec![b'a'; 8 * 1024 * 1024]);
    let twice = br#"{"clientToken":"first","image":"debian","clientToken":"second"}"#.to_vec();
    let cases: [(KeyAt, Vec<u8>, Option<&str>); 3] = [
        (KeyAt::Form("ClientToken".into()), form, Some("gzip")),
        (KeyAt::Form("ClientToken".into()), bomb, Some("gzip")),
        (KeyAt::Json("clientToken".into()), twice, None),
    ];
    let mut events = Vec::new();
    for (key_at, body, encoding) in cases {
        let upstream = Upstream::start().await;
        let proxy = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
            upstream: upstream.url(),
            key_at,
            ..Default::default()
        })
        .await
        .unwrap();
        let mut req = http()
            .post(format!("http://{}/echo", proxy.addr()))
            .body(body.clone());
        if let Some(encoding) = encoding {
            req = req.header("Content-Encoding", encoding);
        }
        assert_eq!(req.send().await.unwrap().status(), 200);
        assert_eq!(upstream.seen()[0].body, body, "forwarded as it came");
        events.push(proxy.events()[0].clone());
        proxy.shutdown().await;
    }
    assert_eq!(events[0].idempotency_key.as_deref(), Some("tok-1"));
    assert_eq!(events[1].idempotency_key, None);
    let why = events[1].key_unread.clone().unwrap_or_default();
    assert!(why.contains("decompression bomb"), "{why}");
    assert_eq!(events[2].idempotency_key, None);
    let why = events[2].key_unread.clone().unwrap_or_default();
    assert!(
        why.contains("names `clientToken` 2 times")
            && why.contains("\"first\"")
            && why.contains("\"second\""),
        "{why}"
    );
}

/// A key header that HTTP cannot carry is refused at start, by name.
#[tokio::test]
async fn a_key_header_http_cannot_carry_is_refused() {
    let err = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
        upstream: "http://127.0.0.1:9".into(),
        key_at: idemspec_scenarios::profile::KeyAt::Header("Bad Header".into()),
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`Bad Header` is not an HTTP header name"),
        "{err}"
    );
}
