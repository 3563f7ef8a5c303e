//! An answer sent before the whole request was read must reach a client that writes its whole
//! request before it reads (Python's `http.client` does; curl reads early). Closing at once
//! would leave the rest of the body unread, the kernel would answer it with a reset, and the
//! client would see a broken pipe where a permanent rejection was sent: one it retries.

use rstest::rstest;
use rstest_reuse::apply;
use std::net::SocketAddr;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use idemspec_proxy::{start, ProxyConfig};

use crate::malformed::assert_problem;
use crate::support::*;

/// How many times each case is tried: a reset is a race, so once proves little.
const REPEATS: usize = 20;

/// A request body larger than the control API accepts (its limit is 2 MiB), and larger than the
/// loopback socket buffers absorb (3 MiB fit on the project's machine): without a lingering close
/// its writer gets the reset every time.
const BIG: usize = 8 * 1024 * 1024;

/// Writes `head` and `body` on a fresh connection, all of it, and only then reads until the
/// connection ends; a write error (the reset) is returned as such.
async fn write_everything_then_read(
    addr: SocketAddr,
    head: &str,
    body: &[u8],
) -> std::io::Result<Raw> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    Ok(read_to_end(&mut stream).await)
}

/// Sends the request with a [`BIG`] body [`REPEATS`] times; each time the client must read a
/// problem with `status`.
async fn each_reads(what: &str, addr: SocketAddr, head: &str, status: u16) -> serde_json::Value {
    let body = vec![b'x'; BIG];
    let mut last = serde_json::Value::Null;
    for i in 0..REPEATS {
        let got = write_everything_then_read(addr, head, &body)
            .await
            .unwrap_or_else(|e| panic!("{what}, try {i}: the client could not even write: {e}"));
        last = assert_problem(&format!("{what}, try {i}"), &got, status);
    }
    last
}

fn post_head(path: &str, len: usize) -> String {
    format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n")
}

#[tokio::test]
async fn an_oversized_control_body_gets_a_413_problem_the_client_can_read() {
    let (proxy, _upstream) = proxied_with(with_control()).await;
    let control = proxy.control_addr().unwrap();
    for method in ["PUT", "POST"] {
        let head = format!("{method} /rules HTTP/1.1\r\nHost: t\r\nContent-Length: {BIG}\r\n\r\n");
        let problem = each_reads(&format!("{method} /rules"), control, &head, 413).await;
        assert!(
            problem["detail"].as_str().unwrap().contains("2097152"),
            "the limit is named: {problem}"
        );
    }
    // Chunked, so the size is only known while reading.
    let chunked = "PUT /rules HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut stream = TcpStream::connect(control).await.unwrap();
    stream.write_all(chunked.as_bytes()).await.unwrap();
    for chunk in vec![b'x'; BIG].chunks(64 * 1024) {
        let line = format!("{:x}\r\n", chunk.len());
        stream.write_all(line.as_bytes()).await.unwrap();
        stream.write_all(chunk).await.unwrap();
        stream.write_all(b"\r\n").await.unwrap();
    }
    stream.write_all(b"0\r\n\r\n").await.unwrap();
    assert_problem("chunked", &read_to_end(&mut stream).await, 413);
    assert!(proxy.rules().is_empty(), "nothing was applied");
    proxy.shutdown().await;
}

/// The proxy's own answers before the body is read: a `respond` fault, and the 502 when the
/// upstream is down. Each client writes 3 MiB, then reads.
#[apply(both_runtimes)]
async fn the_proxys_early_answers_reach_a_client_still_writing_its_body(threads: usize) {
    let (proxy, upstream) = proxied(
        threads,
        rules("- name: gw\n  match: {path: /gw}\n  fault: {respond: {status: 503, body: '{\"status\": 503, \"detail\": \"injected\"}', content_type: application/problem+json}}\n"),
    )
    .await;
    each_reads("respond", proxy.addr(), &post_head("/gw", BIG), 503).await;
    assert_eq!(upstream.count(), 0);
    proxy.shutdown().await;

    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = closed.local_addr().unwrap();
    drop(closed);
    let proxy = start(ProxyConfig {
        upstream: format!("http://{dead}"),
        io_threads: threads,
        ..ProxyConfig::default()
    })
    .await
    .unwrap();
    each_reads("upstream down", proxy.addr(), &post_head("/x", BIG), 502).await;
    proxy.shutdown().await;
}
