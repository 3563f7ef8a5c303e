//! Without a matching rule the proxy is transparent: keep-alive, pipelining, chunked bodies both
//! ways, large bodies and many connections, all compared byte for byte.

use rstest::rstest;
use rstest_reuse::apply;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::*;

#[apply(both_runtimes)]
async fn keep_alive_serves_many_requests_on_one_connection(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();
    for i in 1..=5 {
        let body = format!("body-{i}");
        let req = format!(
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(req.as_bytes()).await.unwrap();
        let (head, got) = expect_response(&mut stream, &mut pending, false).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(got, body.as_bytes());
    }
    assert_eq!(upstream.count(), 5);
    let events = proxy.events();
    assert_eq!(events.len(), 5);
    assert!(events
        .iter()
        .all(|e| e.client_complete && e.upstream_sends == 1));
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn pipelined_requests_are_answered_in_order(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut all = Vec::new();
    for i in 1..=4 {
        let body = format!("p{i}");
        all.extend_from_slice(
            format!(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    }
    stream.write_all(&all).await.unwrap();
    let mut pending = Vec::new();
    for i in 1..=4 {
        let (_, got) = expect_response(&mut stream, &mut pending, false).await;
        assert_eq!(got, format!("p{i}").as_bytes());
    }
    assert_eq!(upstream.count(), 4);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn chunked_upload_and_download_pass_intact(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    // Upload: a chunked request body, re-framed by the proxy, arrives byte for byte.
    let data = pattern(300_000);
    let mut req = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for chunk in data.chunks(7_000) {
        req.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        req.extend_from_slice(chunk);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let got = raw(proxy.addr(), &req).await;
    assert!(got.text().starts_with("HTTP/1.1 200"));
    assert_eq!(
        &upstream.seen()[0].body[..],
        &data[..],
        "the upstream got the exact bytes"
    );
    // Download: a chunked (streamed) response arrives complete.
    let resp = http()
        .get(format!("http://{}/stream/1000003", proxy.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.bytes().await.unwrap(), pattern(1_000_003));
    let events = proxy.events();
    assert_eq!(events[1].client_bytes, 1_000_003);
    assert!(events[1].client_complete);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn ten_mib_body_round_trips(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    let data = pattern(10 * 1024 * 1024);
    let resp = http()
        .post(format!("http://{}/echo", proxy.addr()))
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let back = resp.bytes().await.unwrap();
    assert!(back[..] == data[..], "10 MiB echoed intact");
    assert!(upstream.seen()[0].body[..] == data[..]);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn two_hundred_concurrent_connections(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(200));
    let addr = proxy.addr();
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let body = format!("conn-{i}-").repeat(50);
                let mut stream = TcpStream::connect(addr).await.unwrap();
                let req = format!(
                    "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                barrier.wait().await;
                stream.write_all(req.as_bytes()).await.unwrap();
                let got = read_to_end(&mut stream).await;
                assert_eq!(got.body(), body.as_bytes(), "connection {i}");
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(upstream.count(), 200);
    eventually("200 events", || proxy.events().len() == 200).await;
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn the_upstream_finishes_after_the_client_gives_up(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    let client = impatient(200);
    let err = client
        .post(format!("http://{}/slow/800", proxy.addr()))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(upstream.count(), 1);
    // The server keeps working, as behind haproxy: its handler is not cancelled half-way.
    eventually("the upstream handler completes", || {
        upstream.completed() == 1
    })
    .await;
    eventually("the event", || !proxy.events().is_empty()).await;
    assert!(proxy.events()[0].client_disconnected);
    proxy.shutdown().await;
}

#[apply(both_runtimes)]
async fn shutdown_finishes_the_exchange_in_progress_and_closes_idle_connections(threads: usize) {
    let (proxy, upstream) = proxied(threads, vec![]).await;
    // An idle keep-alive connection: one exchange done, the connection left open.
    let mut idle = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut pending = Vec::new();
    idle.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let (head, _) = expect_response(&mut idle, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A busy connection: its request is at the upstream when the shutdown begins.
    let mut busy = TcpStream::connect(proxy.addr()).await.unwrap();
    busy.write_all(b"GET /slow/400 HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    eventually("the slow request at the upstream", || upstream.count() == 2).await;
    let shutdown = tokio::spawn({
        let proxy = proxy.clone();
        async move { proxy.shutdown().await }
    });
    // The idle connection is closed at once (EOF), well before the slow exchange ends.
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(std::time::Duration::from_millis(300), idle.read(&mut byte))
        .await
        .expect("the idle connection is closed before the busy one finishes");
    assert_eq!(read.unwrap(), 0, "EOF on the idle connection");
    // The busy one gets its whole response, then the close.
    let mut pending = Vec::new();
    let (head, body) = expect_response(&mut busy, &mut pending, false).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(upstream.completed(), 2);
    assert!(!body.is_empty());
    assert_eq!(busy.read(&mut byte).await.unwrap(), 0, "then EOF");
    tokio::time::timeout(PATIENCE, shutdown)
        .await
        .expect("shutdown returns")
        .unwrap();
    let events = proxy.events();
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| e.client_complete), "{events:?}");
}

#[tokio::test]
async fn too_many_io_threads_is_a_clear_error_not_a_panic() {
    let upstream = Upstream::start().await;
    for threads in [idemspec_proxy::ProxyConfig::MAX_IO_THREADS + 1, usize::MAX] {
        let started = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
            upstream: upstream.url(),
            io_threads: threads,
            ..idemspec_proxy::ProxyConfig::default()
        })
        .await;
        let Err(err) = started else {
            panic!("{threads} I/O threads were accepted");
        };
        let text = err.to_string();
        assert!(
            text.contains(&format!("start {threads} I/O threads")),
            "{text}"
        );
        assert!(text.contains("at most 1024"), "{text}");
    }
}

/// A burst of connections is not made to wait: each is accepted into the listen queue at once.
/// With a queue shorter than the burst (tokio's `bind` asks for 128), the kernel drops the
/// surplus SYNs and those clients retry after the 1 s retransmission timeout.
#[apply(both_runtimes)]
async fn a_burst_of_connections_is_queued_without_retransmission(threads: usize) {
    let (proxy, _upstream) = proxied(threads, vec![]).await;
    let addr = proxy.addr();
    let barrier = Arc::new(tokio::sync::Barrier::new(500));
    let connects: Vec<_> = (0..500)
        .map(|_| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let started = std::time::Instant::now();
                let stream = TcpStream::connect(addr).await.unwrap();
                (started.elapsed(), stream)
            })
        })
        .collect();
    let mut slowest = std::time::Duration::ZERO;
    let mut streams = Vec::new();
    for c in connects {
        let (took, stream) = c.await.unwrap();
        slowest = slowest.max(took);
        streams.push(stream);
    }
    assert!(
        slowest < std::time::Duration::from_millis(900),
        "a connection waited {slowest:?}: its SYN was dropped and retransmitted"
    );
    drop(streams);
    proxy.shutdown().await;
}
