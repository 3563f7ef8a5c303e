//! The fast path (plain requests no rule can apply to) against an upstream that answers with raw
//! bytes: every framing a response can have, interim heads, an upstream that closes, requests
//! that no rule in force can apply to, and the hand-over to hyper's path when a rule's
//! conditions fit a request or a rule arrives mid-connection.

use std::net::SocketAddr;
use std::sync::Arc;

use idemspec_proxy::{start, ProxyConfig, ProxyHandle};
use idemspec_scenarios::rules::Rule;
use rstest::rstest;
use rstest_reuse::apply;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::support::*;

/// An upstream that reads each request and answers with the bytes `answer` gives for its path
/// (without the proxy's `/base` prefix), as [`answering`] does.
async fn raw_upstream(answer: fn(&str) -> Option<Vec<u8>>) -> (SocketAddr, Requests) {
    answering(move |got| {
        let target = got.target();
        answer(target.strip_prefix("/base").unwrap_or(target))
    })
    .await
}

fn script(path: &str) -> Option<Vec<u8>> {
    let bytes: &[u8] = match path {
        "/chunked" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n",
        "/until-close" => b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it\0",
        "/hints" => b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
        "/closes" => b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye\0",
        "/cut" => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part\0",
        "/garbage" => b"NOT HTTP AT ALL\r\n\r\n",
        "/vanish" => return None,
        "/head" => b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
        _ => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, x-hop\r\nX-Hop: gone\r\nKeep-Alive: timeout=5\r\n\r\nhi",
    };
    Some(bytes.to_vec())
}

async fn proxy_to(threads: usize, upstream: SocketAddr) -> ProxyHandle {
    proxy_ruled(threads, upstream, vec![]).await
}

async fn proxy_ruled(threads: usize, upstream: SocketAddr, rules: Vec<Rule>) -> ProxyHandle {
    start(ProxyConfig {
        upstream: format!("http://{upstream}/base"),
        io_threads: threads,
        rules,
        ..ProxyConfig::default()
    })
    .await
    .expect("proxy starts")
}

/// Reads one response (head and whole body, by its framing; chunked bodies as sent) from
/// `stream`; `pending` keeps what was read past it.
async fn response(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    head_request: bool,
) -> (String, Vec<u8>) {
    response_within(stream, pending, head_request, Chunks::AsSent, PATIENCE)
        .await
        .expect("a response in time")
        .expect("a whole response before the connection ended")
}

async fn send(stream: &mut TcpStream, request: &str) {
    stream.write_all(request.as_bytes()).await.unwrap();
}

#[apply(both_runtimes)]
async fn every_response_framing_reaches_the_client_intact_on_one_connection(threads: usize) {
    let (up, heads) = raw_upstream(script).await;
    let proxy = proxy_to(threads, up).await;
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();

    send(&mut s, "GET /plain HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k1\r\nX-Idemspec-Step: s1\r\nConnection: keep-alive\r\n\r\n").await;
    let (head, body) = response(&mut s, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert_eq!(body, b"hi");
    let lower = head.to_ascii_lowercase();
    for hop in ["x-hop", "keep-alive", "connection"] {
        assert!(!lower.contains(hop), "{hop} is hop-by-hop: {head}");
    }

    send(&mut s, "GET /chunked HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let (head, body) = response(&mut s, &mut pending, false).await;
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    assert_eq!(
        body, b"5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n",
        "chunks and trailers pass as sent"
    );

    send(&mut s, "GET /hints HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let (interim, _) = response(&mut s, &mut pending, false).await;
    assert!(interim.starts_with("HTTP/1.1 103 Early Hints"), "{interim}");
    let (head, body) = response(&mut s, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 201 Created"), "{head}");
    assert_eq!(body, b"ok");

    send(&mut s, "HEAD /head HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let (head, body) = response(&mut s, &mut pending, true).await;
    assert!(head.contains("Content-Length: 1234"), "{head}");
    assert!(body.is_empty());

    // The upstream closes its connection after this one; the next request gets a new one.
    send(
        &mut s,
        "POST /closes HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nabcd",
    )
    .await;
    let (head, body) = response(&mut s, &mut pending, false).await;
    assert!(
        !head.to_ascii_lowercase().contains("connection: close"),
        "the client's connection stays: {head}"
    );
    assert_eq!(body, b"bye");
    send(&mut s, "GET /again HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let (_, body) = response(&mut s, &mut pending, false).await;
    assert_eq!(body, b"hi");

    // A body that runs to the upstream's close ends the client's connection too.
    send(&mut s, "GET /until-close HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let (head, body) = response(&mut s, &mut pending, false).await;
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(body, b"all of it");

    let heads: Vec<String> = heads
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.head.clone())
        .collect();
    assert_eq!(heads.len(), 7, "{heads:?}");
    assert!(
        heads[0].starts_with("GET /base/plain HTTP/1.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(heads[0].contains("Idempotency-Key: k1"), "{}", heads[0]);
    let lower = heads[0].to_ascii_lowercase();
    assert!(
        !lower.contains("x-idemspec-step") && !lower.contains("connection"),
        "{}",
        heads[0]
    );
    assert!(heads[4].ends_with("Content-Length: 4"), "{}", heads[4]);

    let events = proxy.events();
    assert_eq!(events.len(), 7, "{events:#?}");
    let first = &events[0];
    assert_eq!(
        (first.method.as_str(), first.path.as_str()),
        ("GET", "/plain")
    );
    assert_eq!(first.idempotency_key.as_deref(), Some("k1"));
    assert_eq!(first.step.as_deref(), Some("s1"));
    assert_eq!(
        (
            first.upstream_sends,
            first.upstream_status,
            first.client_status
        ),
        (1, Some(200), Some(200))
    );
    assert!(first.client_complete && !first.client_disconnected);
    assert_eq!(first.client_bytes, 2);
    assert_eq!(events[1].client_bytes, 11, "chunk data, not framing");
    assert_eq!(events[2].client_status, Some(201));
    assert!(events.iter().all(|e| e.client_complete), "{events:#?}");
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn an_upstream_that_fails_before_or_during_its_answer_is_named(threads: usize) {
    let (up, _) = raw_upstream(script).await;
    let proxy = proxy_to(threads, up).await;
    for (path, status) in [
        ("/vanish", Some(502)),
        ("/garbage", Some(502)),
        ("/cut", Some(200)),
    ] {
        let got = raw(
            proxy.addr(),
            format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await;
        let text = got.text();
        match status {
            Some(502) => {
                assert!(text.starts_with("HTTP/1.1 502"), "{path}: {text}");
                assert!(text.contains("application/problem+json"), "{path}: {text}");
                assert!(
                    text.contains(&format!("http://{up}/base")),
                    "{path} names the upstream: {text}"
                );
            }
            _ => {
                assert!(text.starts_with("HTTP/1.1 200"), "{path}: {text}");
                assert!(
                    text.ends_with("only part"),
                    "{path}: the cut body, then the end: {text}"
                );
            }
        }
    }
    eventually("three events", || proxy.events().len() == 3).await;
    let events = proxy.events();
    for e in &events[..2] {
        assert_eq!(e.error_side, Some(idemspec_proxy::Side::Upstream), "{e:?}");
        assert_eq!(e.client_status, Some(502), "{e:?}");
        assert_eq!(e.upstream_sends, 1, "sent, no answer: {e:?}");
    }
    let cut = &events[2];
    assert_eq!(cut.upstream_status, Some(200));
    assert!(!cut.client_complete, "{cut:?}");
    assert!(
        cut.upstream_error
            .as_deref()
            .unwrap_or("")
            .contains("upstream body failed"),
        "{cut:?}"
    );
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn a_rule_that_arrives_mid_connection_applies_to_the_next_request(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();
    send(&mut s, "GET /one HTTP/1.1\r\nHost: t\r\n\r\n").await;
    let (head, _) = response(&mut s, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    proxy
        .set_rules(rules(
            r#"[{"name": "teapot", "match": {"path": "/two"}, "fault": {"respond": {"status": 418}}}]"#,
        ))
        .unwrap();
    // Pipelined: the rule's request and a plain one behind it, on the same connection.
    send(
        &mut s,
        "GET /two HTTP/1.1\r\nHost: t\r\n\r\nGET /three HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .await;
    let (head, _) = response(&mut s, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 418"), "{head}");
    let (head, body) = response(&mut s, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        String::from_utf8_lossy(&body).contains("/three"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let events = proxy.events();
    assert_eq!(events.len(), 3, "{events:#?}");
    assert_eq!(events[1].rule.as_deref(), Some("teapot"));
    assert_eq!(
        upstream.count(),
        2,
        "the rule's request never reached the upstream"
    );
    proxy.shutdown().await;
}

/// Sends `GET path` with `extra` header lines and reads its response; `Some(interim)` when a 1xx
/// head came first: only the fast path forwards interim heads (hyper's path drops them), so it
/// tells which path served the request.
async fn get_hints(
    s: &mut TcpStream,
    pending: &mut Vec<u8>,
    path: &str,
    extra: &str,
) -> (Option<String>, String) {
    send(s, &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n")).await;
    let (first, _) = response(s, pending, false).await;
    if first.starts_with("HTTP/1.1 1") {
        let (last, _) = response(s, pending, false).await;
        (Some(first), last)
    } else {
        (None, first)
    }
}

#[apply(both_runtimes)]
async fn requests_no_rule_can_apply_to_stay_on_the_fast_path_while_rules_are_in_force(
    threads: usize,
) {
    let (up, _) = raw_upstream(|path| {
        script(if path.starts_with("/hints") {
            "/hints"
        } else {
            path
        })
    })
    .await;
    let proxy = proxy_ruled(
        threads,
        up,
        rules(
            r#"[{"name": "teapot", "match": {"path": "/hints/rule", "header": {"name": "x-flag", "equals": "on"}}, "fault": {"respond": {"status": 418}}},
                {"name": "second", "match": {"path_prefix": "/hints/nth", "nth": 2}, "fault": {"respond": {"status": 503}}}]"#,
        ),
    )
    .await;
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();
    // No rule's conditions fit: the fast path serves them (their interim heads come through).
    for (path, extra) in [
        ("/hints/a", ""),
        ("/hints/rule", ""),
        ("/hints/rule", "x-flag: off\r\n"),
        ("/hints/rule?x-flag=on", ""),
        ("/hints/other", "x-flag: on\r\n"),
    ] {
        let (interim, last) = get_hints(&mut s, &mut pending, path, extra).await;
        assert!(
            interim.is_some(),
            "{path} {extra:?} went to hyper's path: {last}"
        );
        assert!(last.starts_with("HTTP/1.1 201"), "{path} {extra:?}: {last}");
    }
    // A head the first rule's conditions fit: hyper's path takes the connection and applies it.
    let (interim, last) = get_hints(&mut s, &mut pending, "/hints/rule", "X-Flag: on\r\n").await;
    assert_eq!(interim, None);
    assert!(last.starts_with("HTTP/1.1 418"), "{last}");
    // The connection stays on hyper's path: the same plain request loses its interim head.
    let (interim, last) = get_hints(&mut s, &mut pending, "/hints/a", "").await;
    assert_eq!(interim, None, "{last}");
    assert!(last.starts_with("HTTP/1.1 201"), "{last}");
    // A new connection starts on the fast path again. Requests no rule fits move no counter:
    // the second rule's nth counts only the two requests under its prefix.
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();
    for _ in 0..3 {
        let (interim, _) = get_hints(&mut s, &mut pending, "/hints/b", "").await;
        assert!(interim.is_some());
    }
    let (_, first) = get_hints(&mut s, &mut pending, "/hints/nth", "").await;
    let (_, second) = get_hints(&mut s, &mut pending, "/hints/nth/x", "").await;
    assert!(first.starts_with("HTTP/1.1 201"), "{first}");
    assert!(second.starts_with("HTTP/1.1 503"), "{second}");
    let events = proxy.events();
    assert_eq!(events.len(), 12, "{events:#?}");
    let applied: Vec<_> = events.iter().map(|e| e.rule.as_deref()).collect();
    let mut expected = vec![None; 12];
    expected[5] = Some("teapot");
    expected[11] = Some("second");
    assert_eq!(applied, expected);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn an_upstream_closing_an_idle_connection_costs_the_next_request_nothing(threads: usize) {
    // Answers, then closes the connection a moment later, as servers with a short keep-alive do.
    let (up, _) = scripted(Arc::new(|mut stream, _| {
        Box::pin(async move {
            if read_head(&mut stream, &mut Vec::new()).await.is_none() {
                return;
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .await;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        })
    }))
    .await;
    let proxy = proxy_to(threads, up).await;
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();
    for _ in 0..3 {
        send(&mut s, "GET / HTTP/1.1\r\nHost: t\r\n\r\n").await;
        let (head, body) = response(&mut s, &mut pending, false).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, b"ok");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        proxy.events().iter().all(|e| e.client_status == Some(200)),
        "{:#?}",
        proxy.events()
    );
    proxy.shutdown().await;
}
