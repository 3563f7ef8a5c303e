//! Hostile tests of the fast path (plain requests that no rule's conditions fit), each also run
//! against hyper's path (a rule every request satisfies but that never applies is in force)
//! where the two should agree.
//! Where the two paths differ by design (docs/design/proxy.md, "The pass-through path"), the
//! fast path's own behaviour is asserted (`mod differences`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use idemspec_proxy::{start, ProxyConfig, ProxyHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::*;

/// An upstream answering every request with its target as the body, keep-alive.
async fn echo_target_upstream() -> (SocketAddr, Requests) {
    answering(|got| {
        let body = got.target();
        Some(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        )
    })
    .await
}

/// Which of the proxy's two paths serves the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Fast,
    /// [`HYPER_PATH_RULE`] is in force: every request goes through hyper's path.
    Hyper,
}

async fn proxy(path: Path, up: SocketAddr) -> ProxyHandle {
    proxy_with(path, up, ProxyConfig::default()).await
}

async fn proxy_with(path: Path, up: SocketAddr, config: ProxyConfig) -> ProxyHandle {
    let rules = match path {
        Path::Fast => vec![],
        Path::Hyper => rules(HYPER_PATH_RULE),
    };
    start(ProxyConfig {
        upstream: format!("http://{up}/base"),
        io_threads: 2,
        rules,
        ..config
    })
    .await
    .expect("proxy starts")
}

/// The chunk data at the front of a cut or malformed chunked body.
fn dechunk_prefix(bytes: &[u8]) -> Vec<u8> {
    let mut at = 0;
    let mut data = Vec::new();
    while let Some(line_end) = bytes[at..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| p + at)
    {
        let Some(size) = std::str::from_utf8(&bytes[at..line_end])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next()?.trim(), 16).ok())
        else {
            break;
        };
        at = line_end + 2;
        let take = size.min(bytes.len() - at);
        data.extend_from_slice(&bytes[at..at + take]);
        at += take;
        if take < size || size == 0 || bytes.len() < at + 2 {
            break;
        }
        at += 2;
    }
    data
}

async fn connect(proxy: &ProxyHandle) -> TcpStream {
    let s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

// ---------------------------------------------------------------------------------------------
// Request smuggling and client garbage: the upstream never sees a request hidden in another's
// body, and the client never gets a 5xx for its own garbage.
// ---------------------------------------------------------------------------------------------

/// Requests in which `/smuggled` is hidden in a body (by the reading RFC 9112 mandates) or that
/// must be rejected outright.
const SMUGGLING: &[(&str, &str)] = &[
    (
        "CL.TE",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    ),
    (
        "TE.CL",
        "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    ),
    (
        "duplicate CL, different",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "duplicate CL, different, reversed",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL list",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 37, 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL with plus",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: +37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL negative",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL hex",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 0x25\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL leading zeros",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 00037\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL inner space",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3 7\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CL overflow",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551653\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "space before colon",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length : 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "tab before colon",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length\t: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "header name with space",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent Length: 0\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "obs-fold CL",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "obs-fold TE",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nX-Foo: bar\r\n Transfer-Encoding: chunked\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    ),
    (
        "bare LF head",
        "POST /a HTTP/1.1\nHost: t\nContent-Length: 37\n\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "bare CR",
        "POST /a HTTP/1.1\r\nHost: t\rContent-Length: 0\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "NUL in value",
        "POST /a HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "TE chunked, xchunked",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: xchunked\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    ),
    (
        "TE mixed case",
        "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\ntRaNsFeR-eNcOdInG: chunked\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    ),
    (
        "HTTP/1.0 with TE",
        "POST /a HTTP/1.0\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n25\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n",
    ),
    (
        "Connection names Content-Length",
        "POST /a HTTP/1.1\r\nHost: t\r\nConnection: content-length\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "absolute-form",
        "POST http://t/a HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "version garbage",
        "POST /a HTTP/1.10\r\nHost: t\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "two spaces in request line",
        "POST  /a HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "leading empty lines",
        "\r\n\r\nPOST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "fragment in target",
        "POST /a#x HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
    (
        "CR in target",
        "POST /a\r HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
    ),
];

async fn smuggling_battery(path: Path) {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy(path, up).await;
    let mut failures = Vec::new();
    for (name, request) in SMUGGLING {
        seen.lock().unwrap().clear();
        let mut s = connect(&proxy).await;
        s.write_all(request.as_bytes()).await.unwrap();
        // The client waits for the answers, then leaves.
        let got = tokio::time::timeout(Duration::from_secs(3), read_to_end(&mut s)).await;
        let text = match &got {
            Ok(raw) => raw.text(),
            Err(_) => String::new(),
        };
        let _ = got.is_err();
        drop(s);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let targets: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|g| g.target().to_owned())
            .collect();
        // A request the proxy forwarded carries the upstream's prefix; a bare `/smuggled` is
        // this naive upstream misreading a chunked body (it only knows Content-Length).
        if targets.iter().any(|t| t == "/base/smuggled") {
            failures.push(format!("{name}: smuggled, upstream saw {targets:?}"));
        }
        for resp in text.split("HTTP/1.1 ").skip(1) {
            if resp.starts_with('5') {
                failures.push(format!("{name}: a 5xx for client garbage: {text:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{path:?}: {failures:#?}");
    proxy.shutdown().await;
}

#[tokio::test]
async fn smuggling_attempts_never_reach_the_upstream_as_requests_fast() {
    smuggling_battery(Path::Fast).await;
}

#[tokio::test]
async fn smuggling_attempts_never_reach_the_upstream_as_requests_hyper() {
    smuggling_battery(Path::Hyper).await;
}

// ---------------------------------------------------------------------------------------------
// Pipelining and splitting: many requests in one write, one request in 1-byte writes.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_hundred_pipelined_requests_in_one_write_are_answered_in_order() {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy(Path::Fast, up).await;
    let mut s = connect(&proxy).await;
    let mut all = String::new();
    for i in 0..100 {
        if i % 3 == 0 {
            all.push_str(&format!(
                "POST /p{i} HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nbody{}",
                i % 10
            ));
        } else {
            all.push_str(&format!("GET /p{i} HTTP/1.1\r\nHost: t\r\n\r\n"));
        }
    }
    s.write_all(all.as_bytes()).await.unwrap();
    let mut pending = Vec::new();
    for i in 0..100 {
        let (head, body) = response(&mut s, &mut pending, false)
            .await
            .unwrap_or_else(|| panic!("response {i}"));
        assert_eq!(status_of(&head), 200, "{head}");
        assert_eq!(body, format!("/base/p{i}").as_bytes());
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 100);
    for (i, g) in seen.iter().enumerate() {
        if i % 3 == 0 {
            assert_eq!(g.body, format!("body{}", i % 10).as_bytes());
        }
    }
    eventually("100 events", || proxy.events().len() == 100).await;
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_request_in_one_byte_writes_is_forwarded_whole() {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy(Path::Fast, up).await;
    let mut s = connect(&proxy).await;
    let req = b"POST /slow?q=1 HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k\r\nContent-Length: 3\r\n\r\nabcGET /next HTTP/1.1\r\nHost: t\r\n\r\n";
    for b in req {
        s.write_all(&[*b]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut pending = Vec::new();
    let (_, body) = response(&mut s, &mut pending, false).await.expect("first");
    assert_eq!(body, b"/base/slow?q=1");
    let (_, body) = response(&mut s, &mut pending, false).await.expect("second");
    assert_eq!(body, b"/base/next");
    assert_eq!(seen.lock().unwrap()[0].body, b"abc");
    let events = proxy.events();
    assert_eq!(events[0].path, "/slow?q=1");
    assert_eq!(events[0].idempotency_key.as_deref(), Some("k"));
    proxy.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// A full-duplex upstream: it answers while it reads the request body (an echo).
// ---------------------------------------------------------------------------------------------

/// Answers each request with a head at once, then echoes its body as it is read.
async fn streaming_echo_upstream() -> SocketAddr {
    scripted(Arc::new(|mut s, _| {
        Box::pin(async move {
            let mut pending = Vec::new();
            let mut buf = vec![0u8; 65536];
            let Some(end) = read_head(&mut s, &mut pending).await else {
                return;
            };
            let len = content_length(&String::from_utf8_lossy(&pending[..end])).unwrap_or(0);
            let resp = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
            if s.write_all(resp.as_bytes()).await.is_err() {
                return;
            }
            let mut left = len;
            let first = pending[end + 4..].to_vec();
            left -= first.len();
            if s.write_all(&first).await.is_err() {
                return;
            }
            while left > 0 {
                match s.read(&mut buf).await {
                    Ok(n) if n > 0 => {
                        left -= n;
                        if s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        })
    }))
    .await
    .0
}

async fn full_duplex(path: Path) {
    const LEN: usize = 96 << 20;
    let up = streaming_echo_upstream().await;
    let proxy = proxy(path, up).await;
    let s = connect(&proxy).await;
    let (mut r, mut w) = s.into_split();
    let writer = tokio::spawn(async move {
        w.write_all(
            format!("PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {LEN}\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..(LEN >> 20) {
            if w.write_all(&chunk).await.is_err() {
                return;
            }
        }
        // Keep the write side open until the test ends.
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let mut stalled = false;
    while got < LEN + 38 {
        match tokio::time::timeout(Duration::from_secs(5), r.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got += n,
            Ok(_) => break,
            Err(_) => {
                stalled = true;
                break;
            }
        }
    }
    writer.abort();
    assert!(
        !stalled,
        "{path:?}: the exchange stalled (deadlock) after {got} bytes of the echo"
    );
    assert!(got >= LEN, "{path:?}: got {got}");
    proxy.shutdown().await;
}

// Guards against this failure: the fast path writes the whole request body before it reads any of the response, so
// an upstream that answers as it reads (an echo, a streaming transform) fills the buffers and
// both sides wait forever; hyper's path reads the response while it sends the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_duplex_upstream_does_not_deadlock_the_fast_path() {
    full_duplex(Path::Fast).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_duplex_upstream_does_not_deadlock_hyper_path() {
    full_duplex(Path::Hyper).await;
}

// ---------------------------------------------------------------------------------------------
// An upstream that answers before the request body is all there.
// ---------------------------------------------------------------------------------------------

/// Reads a request head only, answers 413 at once, then keeps the connection open (`close`:
/// closes it instead, with the body unread, which resets it).
async fn early_answer_upstream(close: bool) -> SocketAddr {
    let handler: Handler = Arc::new(move |mut s, _| {
        Box::pin(async move {
            if read_head(&mut s, &mut Vec::new()).await.is_none() {
                return;
            }
            let _ = s
                .write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbig!")
                .await;
            if close {
                tokio::time::sleep(Duration::from_millis(20)).await;
                return;
            }
            tokio::time::sleep(Duration::from_secs(30)).await;
        })
    });
    scripted(handler).await.0
}

async fn early_answer_kept_open(path: Path) {
    let up = early_answer_upstream(false).await;
    let proxy = proxy(path, up).await;
    let mut s = connect(&proxy).await;
    // Part of the body; the rest would come after the client sees the answer (it never will).
    s.write_all(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n0123456789")
        .await
        .unwrap();
    let mut pending = Vec::new();
    let got = response_within(
        &mut s,
        &mut pending,
        false,
        Chunks::Decoded,
        Duration::from_secs(5),
    )
    .await;
    let (head, body) = got
        .unwrap_or_else(|_| {
            panic!("{path:?}: no answer in 5 s while the upstream answered at once")
        })
        .expect("a response");
    assert_eq!(status_of(&head), 413, "{path:?}: {head}");
    assert_eq!(body, b"big!");
    proxy.shutdown().await;
}

// Guards against this failure: the fast path reads the upstream only once the whole request body is sent: the
// upstream's early 413 waits behind a body the client will never send (hyper's path forwards it
// at once). A hang for the client.
#[tokio::test]
async fn an_early_answer_reaches_a_client_that_paused_its_body_fast() {
    early_answer_kept_open(Path::Fast).await;
}

#[tokio::test]
async fn an_early_answer_reaches_a_client_that_paused_its_body_hyper() {
    early_answer_kept_open(Path::Hyper).await;
}

async fn early_answer_then_close(path: Path) -> (u16, Vec<idemspec_proxy::ProxyEvent>) {
    let up = early_answer_upstream(true).await;
    let proxy = proxy(path, up).await;
    let s = connect(&proxy).await;
    let (mut r, mut w) = s.into_split();
    let writer = tokio::spawn(async move {
        let _ = w
            .write_all(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 16777216\r\n\r\n")
            .await;
        let chunk = vec![b'x'; 65536];
        for _ in 0..256 {
            if w.write_all(&chunk).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match r.read(&mut buf).await {
                Ok(n) if n > 0 => bytes.extend_from_slice(&buf[..n]),
                _ => return,
            }
        }
    })
    .await;
    writer.abort();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    eventually("an event", || !proxy.events().is_empty()).await;
    let events = proxy.events();
    proxy.shutdown().await;
    (status_of(&text), events)
}

// Guards against this failure: the upstream answered 413 and closed while the body was still coming: the fast path
// only notices the write failing and answers 502 (blaming the upstream), where hyper's path
// forwards the upstream's 413.
#[tokio::test]
async fn an_early_answer_then_close_is_forwarded_not_a_502_fast() {
    let (fast, events) = early_answer_then_close(Path::Fast).await;
    let (hyper, hyper_events) = early_answer_then_close(Path::Hyper).await;
    assert_eq!(
        fast, hyper,
        "fast path answered {fast}, hyper's path {hyper}\nfast: {events:#?}\nhyper: {hyper_events:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The reused upstream connection: it closed, or sent bytes nobody asked for, while the next
// request head was coming in pieces.
// ---------------------------------------------------------------------------------------------

/// Answers each request with `ok`; `then` is written `after` later (extra bytes, or nothing and
/// a close when `None`).
async fn after_answer_upstream(
    then: Option<&'static [u8]>,
    after: Duration,
) -> (SocketAddr, Requests) {
    let handler: Handler = Arc::new(move |mut s, seen| {
        Box::pin(async move {
            let mut pending = Vec::new();
            let mut first = true;
            while let Some(got) = read_request(&mut s, &mut pending).await {
                seen.lock().unwrap().push(got);
                let body: &[u8] = if first { b"ok" } else { b"GOOD" };
                let resp = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.write_all(body).await;
                if first {
                    first = false;
                    tokio::time::sleep(after).await;
                    match then {
                        None => return,
                        Some(extra) => {
                            let _ = s.write_all(extra).await;
                        }
                    }
                }
            }
        })
    });
    scripted(handler).await
}

/// One request; then the next head in two parts, the second after the upstream acted.
async fn split_next_head(path: Path, then: Option<&'static [u8]>) -> Option<(String, Vec<u8>)> {
    let (up, _) = after_answer_upstream(then, Duration::from_millis(30)).await;
    let proxy = proxy(path, up).await;
    let mut s = connect(&proxy).await;
    let mut pending = Vec::new();
    s.write_all(b"GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let (_, body) = response(&mut s, &mut pending, false).await.expect("first");
    assert_eq!(body, b"ok");
    s.write_all(b"GET /two HTTP/1.1\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.write_all(b"Host: t\r\n\r\n").await.unwrap();
    let got = response(&mut s, &mut pending, false).await;
    proxy.shutdown().await;
    got
}

// Guards against this failure: the upstream closed its idle connection while the next head was half in: the fast path
// watches the idle upstream only while no byte of the next head is buffered, so it sends the
// request on the dead connection and answers 502 (hyper's pool noticed the close: 200).
#[tokio::test]
async fn an_upstream_close_during_a_split_head_costs_nothing_fast() {
    let got = split_next_head(Path::Fast, None).await;
    let (head, body) = got.expect("a response");
    assert_eq!(
        status_of(&head),
        200,
        "{head} {}",
        String::from_utf8_lossy(&body)
    );
    // A new upstream connection answers its first request `ok`.
    assert_eq!(body, b"ok");
}

#[tokio::test]
async fn an_upstream_close_during_a_split_head_costs_nothing_hyper() {
    let (head, body) = split_next_head(Path::Hyper, None)
        .await
        .expect("a response");
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(body, b"ok");
}

const EXTRA: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL";

// Guards against this failure: bytes the upstream sent after its response (nobody asked for them) arrive while the
// next head is half in: the fast path reuses the connection and hands them to the client as the
// response to its next request (desync: "EVIL" instead of the upstream's answer).
#[tokio::test]
async fn unasked_upstream_bytes_never_become_the_next_response_fast() {
    let got = split_next_head(Path::Fast, Some(EXTRA)).await;
    if let Some((head, body)) = got {
        assert_ne!(body, b"EVIL", "desync: {head}");
        // A new upstream connection (its first answer is `ok`), or the old one's real answer.
        assert!(body == b"ok" || body == b"GOOD", "{head}");
    }
}

#[tokio::test]
async fn unasked_upstream_bytes_never_become_the_next_response_hyper() {
    let got = split_next_head(Path::Hyper, Some(EXTRA)).await;
    if let Some((head, body)) = got {
        assert_ne!(body, b"EVIL", "desync: {head}");
        // A new upstream connection (its first answer is `ok`), or the old one's real answer.
        assert!(body == b"ok" || body == b"GOOD", "{head}");
    }
}

/// The same with the extra bytes arriving before any of the next head (watched while idle).
#[tokio::test]
async fn unasked_upstream_bytes_while_idle_are_noticed_fast() {
    let (up, _) = after_answer_upstream(Some(EXTRA), Duration::from_millis(30)).await;
    let proxy = proxy(Path::Fast, up).await;
    let mut s = connect(&proxy).await;
    let mut pending = Vec::new();
    s.write_all(b"GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let _ = response(&mut s, &mut pending, false).await.expect("first");
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.write_all(b"GET /two HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let (head, body) = response(&mut s, &mut pending, false).await.expect("second");
    assert_eq!(body, b"ok", "a new upstream connection: {head}");
    proxy.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Parity: the same exchange on the fast path and on hyper's path gives the client the same
// response (status line, headers but `date` and framing, decoded body), the upstream the same
// request head, and the event log the same entry.
// ---------------------------------------------------------------------------------------------

/// What the scripted upstream answers for a path (after `/base`); `\0` at the end: close after.
fn parity_script(path: &str) -> Option<Vec<u8>> {
    let bytes: &[u8] = match path.split('?').next().unwrap_or("") {
        "/hints" => b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
        "/continue" => b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        "/cl-list" => b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
        "/cl-dup" => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
        "/cl-conflict" => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!",
        "/reason" => b"HTTP/1.1 200 Fine Thanks\r\nContent-Length: 2\r\n\r\nok",
        "/no-reason" => b"HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok",
        "/http10" => b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        "/http10-close" => b"HTTP/1.0 200 OK\r\n\r\nuntil close\0",
        "/head-body" => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        "/204-body" => b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
        "/304-body" => b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello",
        "/bad-chunk" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        "/huge-chunk" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nhello\0",
        "/chunk-ext-lf" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a\nb\r\nhello\r\n0\r\n\r\n",
        "/chunk-no-crlf" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        "/chunk-lf-only" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
        "/trailers" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 2\r\n\r\n",
        "/te-gzip" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc\0",
        "/te-and-cl" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        "/cut" => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part\0",
        "/cut-chunked" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel\0",
        "/garbage" => b"NOT HTTP AT ALL\r\n\r\n",
        "/switch" => b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n",
        "/obs-fold" => b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
        "/space-colon" => b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
        "/status-999" => b"HTTP/1.1 999 Weird\r\nContent-Length: 2\r\n\r\nok",
        "/status-099" => b"HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok",
        "/hop" => b"HTTP/1.1 200 OK\r\nConnection: x-hop\r\nX-Hop: 1\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nTrailer: X-Sum\r\nContent-Length: 2\r\n\r\nok",
        "/obs-text" => b"HTTP/1.1 200 OK\r\nX-A: caf\xc3\xa9 \xff\r\nContent-Length: 2\r\n\r\nok",
        "/conn-cl" => b"HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\nok",
        "/conn-te" => b"HTTP/1.1 200 OK\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        "/extra" => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL",
        "/head-extra" => b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL",
        "/vanish" => return None,
        _ => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    };
    Some(bytes.to_vec())
}

/// An upstream answering by [`parity_script`] (its `/slow` paths after 400 ms).
async fn parity_upstream() -> (SocketAddr, Requests) {
    let path = |got: &RawRequest| {
        let target = got.target();
        target.strip_prefix("/base").unwrap_or(target).to_owned()
    };
    answering_after(
        move |got| {
            if path(got).starts_with("/slow") {
                Duration::from_millis(400)
            } else {
                Duration::ZERO
            }
        },
        move |got| parity_script(&path(got)),
    )
    .await
}

#[derive(Debug, Clone, Copy)]
enum Client {
    /// Writes the request, reads until the proxy closes (or 2 s of silence).
    Normal,
    /// Writes the request, shuts its write side, reads.
    HalfClose,
    /// Writes the request and leaves after 100 ms.
    Leave,
}

/// The responses in `bytes`, one line each: status line, headers (lowercased names, sorted,
/// without `date` and framing headers), decoded body.
fn normalize(bytes: &[u8], head_request: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let Some(end) = head_end(rest) else {
            out.push(format!(
                "trailing bytes: {:?}",
                String::from_utf8_lossy(rest)
            ));
            break;
        };
        let head = String::from_utf8_lossy(&rest[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("").to_owned();
        let status = status_of(&status_line);
        let mut headers: Vec<String> = Vec::new();
        let (mut chunked, mut length) = (false, None);
        for l in lines {
            let (n, v) = l.split_once(':').unwrap_or((l, ""));
            let n = n.to_ascii_lowercase();
            let v = v.trim().to_owned();
            match n.as_str() {
                "date" => {}
                "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                "content-length" => length = v.parse::<usize>().ok(),
                _ => headers.push(format!("{n}: {v}")),
            }
        }
        headers.sort();
        let start = end + 4;
        let (body, used): (Vec<u8>, usize) =
            if (100..200).contains(&status) || status == 204 || status == 304 || head_request {
                (Vec::new(), start)
            } else if chunked {
                match dechunk(&rest[start..]) {
                    Some((b, n)) => (b, start + n),
                    None => {
                        // Cut or malformed: the data decoded before it (chunk boundaries may
                        // differ between the paths), then a mark.
                        let mut b = dechunk_prefix(&rest[start..]);
                        b.extend_from_slice(b"<cut>");
                        (b, rest.len())
                    }
                }
            } else if let Some(len) = length {
                let take = len.min(rest.len() - start);
                (rest[start..start + take].to_vec(), start + take)
            } else {
                (rest[start..].to_vec(), rest.len())
            };
        // A problem body names a port that differs from run to run: keep its shape.
        let body = String::from_utf8_lossy(&body).into_owned();
        let body = if body.contains("\"status\"") {
            body.split("\"status\"").nth(1).unwrap_or("").to_owned()
        } else {
            body
        };
        out.push(format!("{status_line} | {} | {body:?}", headers.join(", ")));
        at += used;
    }
    out
}

/// An event without what differs from run to run.
fn event_shape(e: &idemspec_proxy::ProxyEvent) -> String {
    format!(
        "{} {} key={:?} step={:?} rule={:?} sends={} up={:?} err={:?}/{} client={:?} bytes={} complete={} disconnected={}",
        e.method,
        e.path,
        e.idempotency_key,
        e.step,
        e.rule,
        e.upstream_sends,
        e.upstream_status,
        e.error_side,
        e.upstream_error.is_some(),
        e.client_status,
        // The proxy's own problem bodies name the error in each parser's words.
        if e.upstream_error.is_some() && matches!(e.client_status, Some(400 | 502)) {
            "problem".to_owned()
        } else {
            e.client_bytes.to_string()
        },
        e.client_complete,
        e.client_disconnected
    )
}

/// Normalized upstream request heads: request line, sorted lowercased headers.
fn head_shape(g: &RawRequest) -> String {
    let mut lines = g.head.split("\r\n");
    let first = lines.next().unwrap_or("").to_owned();
    let mut headers: Vec<String> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap_or((l, ""));
            format!("{}: {}", n.to_ascii_lowercase(), v.trim())
        })
        .collect();
    headers.sort();
    format!(
        "{first} | {} | body={:?}",
        headers.join(", "),
        String::from_utf8_lossy(&g.body)
    )
}

#[derive(Debug, PartialEq, Eq)]
struct Observed {
    client: Vec<String>,
    upstream: Vec<String>,
    events: Vec<String>,
}

async fn observe(path: Path, request: &[u8], client: Client) -> Observed {
    let (up, seen) = parity_upstream().await;
    let proxy = proxy(path, up).await;
    let mut s = connect(&proxy).await;
    s.write_all(request).await.unwrap();
    let mut bytes = Vec::new();
    match client {
        Client::Leave => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            drop(s);
        }
        Client::Normal | Client::HalfClose => {
            if matches!(client, Client::HalfClose) {
                s.shutdown().await.unwrap();
            }
            let mut buf = [0u8; 8192];
            loop {
                match tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => bytes.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
        }
    }
    // Late fill-ins (a departed client's upstream status) come within the slow answer's delay.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let head_request = request.starts_with(b"HEAD ");
    let observed = Observed {
        client: normalize(&bytes, head_request),
        upstream: seen.lock().unwrap().iter().map(head_shape).collect(),
        events: proxy.events().iter().map(event_shape).collect(),
    };
    proxy.shutdown().await;
    observed
}

async fn parity(request: &str, client: Client) {
    let request = request.as_bytes();
    let (fast, hyper) = tokio::join!(
        observe(Path::Fast, request, client),
        observe(Path::Hyper, request, client)
    );
    let mut diff = String::new();
    for (what, f, h) in [
        ("client", &fast.client, &hyper.client),
        ("upstream", &fast.upstream, &hyper.upstream),
        ("events", &fast.events, &hyper.events),
    ] {
        if f != h {
            diff.push_str(&format!("{what}:\n  fast:  {f:?}\n  hyper: {h:?}\n"));
        }
    }
    assert!(diff.is_empty(), "the paths differ\n{diff}");
}

macro_rules! parity {
    ($($(#[doc = $fails:literal])? $name:ident: $request:expr, $client:ident;)*) => {
        $(
            $(#[doc = $fails])?
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                parity($request, Client::$client).await;
            }
        )*
    };
}

mod parity {
    use super::*;

    fn get(path: &str) -> String {
        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    }

    async fn run(path: &str) {
        parity(&get(path), Client::Normal).await;
    }

    macro_rules! upstream_cases {
        ($($name:ident: $path:literal;)*) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    run($path).await;
                }
            )*
        };
    }

    upstream_cases! {
        plain_ok: "/ok";
        content_length_list: "/cl-list";
        content_length_repeated: "/cl-dup";
        content_length_conflict: "/cl-conflict";
        reason_phrase: "/reason";
        empty_reason_phrase: "/no-reason";
        no_content_with_a_body: "/204-body";
        not_modified_with_a_body: "/304-body";
        chunk_data_without_crlf: "/chunk-no-crlf";
        transfer_coding_not_chunked: "/te-gzip";
        chunked_and_content_length: "/te-and-cl";
        cut_body: "/cut";
        cut_chunked_body: "/cut-chunked";
        garbage_response: "/garbage";
        obs_fold_in_response: "/obs-fold";
        space_before_colon_in_response: "/space-colon";
        status_999: "/status-999";
        status_099: "/status-099";
        obs_text_in_response_header: "/obs-text";
        upstream_vanishes: "/vanish";
        root_target: "/";
        double_slash_target: "//x";
        query_target: "/q?a=1&b=%20";
    }

    parity! {
        head_with_a_body_from_upstream: "HEAD /head-body HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", Normal;
        control_and_hop_headers_removed: "GET /ok?x=1 HTTP/1.1\r\nHost: t\r\nX-Idemspec-Step: s\r\nX-IDEMSPEC-Other: 1\r\nIdempotency-Key: k\r\nKeep-Alive: 5\r\nConnection: keep-alive, close\r\n\r\n", Normal;
        two_host_headers: "GET /ok HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n", Normal;
        empty_host: "GET /ok HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n", Normal;
        obs_text_in_request_header: "GET /ok HTTP/1.1\r\nHost: t\r\nX-A: caf\u{e9}\r\nConnection: close\r\n\r\n", Normal;
        lowercase_method: "get /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", Normal;
        extension_method: "PURGE /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", Normal;
        head_of_chunked: "HEAD /trailers HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", Normal;
        bare_lf_request: "GET /ok HTTP/1.1\nHost: t\nConnection: close\n\n", Normal;
        key_header_twice: "GET /ok HTTP/1.1\r\nHost: t\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\nConnection: close\r\n\r\n", Normal;
        step_header_twice: "GET /ok HTTP/1.1\r\nHost: t\r\nX-Idemspec-Step: a\r\nX-Idemspec-Step: b\r\nConnection: close\r\n\r\n", Normal;
        // FAILS (timing-dependent, most runs): a client that half-closes after its request: the fast path sends it upstream (sends=1, upstream status filled in later); hyper's path never sends it (sends=0)
        // FAILS (timing-dependent, most runs): a half-closed client: the fast path answers it (200, complete), hyper's path closes without an answer (disconnected); and the fast path itself answers a quick upstream but gives up on a slow one
        client_leaves_mid_body: "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc", Leave;
        client_half_closes_mid_body: "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc", HalfClose;
        client_leaves_while_waiting: "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n", Leave;
        pipelined_then_close: "GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: t\r\n\r\n", Normal;
        http10_client: "GET /ok HTTP/1.0\r\nHost: t\r\n\r\n", Normal;
        http10_client_keep_alive: "GET /ok HTTP/1.0\r\nHost: t\r\nConnection: keep-alive\r\n\r\n", Normal;
        zero_length_post: "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", Normal;
        leading_zero_length: "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: 003\r\nConnection: close\r\n\r\nabc", Normal;
    }
}

// ---------------------------------------------------------------------------------------------
// Load, limits, slow clients, shutdown.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_at_once_each_get_their_own_answers() {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy(Path::Fast, up).await;
    const CONNS: usize = 64;
    const PER: usize = 10;
    for round in 0..3 {
        let barrier = Arc::new(tokio::sync::Barrier::new(CONNS));
        let mut tasks = Vec::new();
        for c in 0..CONNS {
            let barrier = barrier.clone();
            let addr = proxy.addr();
            tasks.push(tokio::spawn(async move {
                let mut s = TcpStream::connect(addr).await.unwrap();
                barrier.wait().await;
                let mut pending = Vec::new();
                for i in (0..PER).step_by(2) {
                    // Two at a time, pipelined, one with a body.
                    let req = format!(
                        "POST /r{round}/c{c}/{i} HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /r{round}/c{c}/{} HTTP/1.1\r\nHost: t\r\n\r\n",
                        i + 1
                    );
                    s.write_all(req.as_bytes()).await.unwrap();
                    for j in [i, i + 1] {
                        let (head, body) = response(&mut s, &mut pending, false)
                            .await
                            .unwrap_or_else(|| panic!("conn {c} request {j}: no response"));
                        assert_eq!(status_of(&head), 200, "{head}");
                        assert_eq!(
                            String::from_utf8_lossy(&body),
                            format!("/base/r{round}/c{c}/{j}"),
                            "conn {c} request {j}"
                        );
                    }
                }
            }));
        }
        for t in tasks {
            tokio::time::timeout(PATIENCE, t)
                .await
                .expect("bounded")
                .expect("no panic");
        }
    }
    let total = 3 * CONNS * PER;
    eventually("every event", || proxy.events().len() == total).await;
    assert_eq!(seen.lock().unwrap().len(), total);
    assert!(proxy
        .events()
        .iter()
        .all(|e| e.client_complete && e.client_status == Some(200)));
    proxy.shutdown().await;
}

/// Heads around the fast path's 16 KiB limit, and past hyper's header count.
#[tokio::test]
async fn heads_around_the_limits_are_answered_not_5xx() {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy(Path::Fast, up).await;
    for size in [
        16usize * 1024 - 40,
        16 * 1024 - 1,
        16 * 1024,
        16 * 1024 + 1,
        20 * 1024,
        64 * 1024,
    ] {
        let base = "GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Pad: \r\n\r\n".len();
        let pad = "p".repeat(size.saturating_sub(base));
        let req =
            format!("GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Pad: {pad}\r\n\r\n");
        assert_eq!(req.len(), size.max(base));
        let got = raw(proxy.addr(), req.as_bytes()).await;
        let status = status_of(&got.text());
        assert_eq!(
            status,
            200,
            "{size}-byte head: {}",
            &got.text()[..got.text().len().min(300)]
        );
    }
    // 101 headers: hyper's limit (431).
    let mut req = String::from("GET /many HTTP/1.1\r\nHost: t\r\n");
    for i in 0..100 {
        req.push_str(&format!("X-{i}: v\r\n"));
    }
    req.push_str("\r\n");
    let got = raw(proxy.addr(), req.as_bytes()).await;
    assert_eq!(status_of(&got.text()), 431, "{}", got.text());
    assert!(
        got.text().contains("application/problem+json"),
        "{}",
        got.text()
    );
    // A head in one-byte writes past 16 KiB.
    let pad = "q".repeat(17 * 1024);
    let req = format!("GET /drip HTTP/1.1\r\nHost: t\r\nX-Pad: {pad}\r\nConnection: close\r\n\r\n");
    let mut s = connect(&proxy).await;
    for chunk in req.as_bytes().chunks(512) {
        s.write_all(chunk).await.unwrap();
    }
    let got = read_to_end(&mut s).await;
    assert_eq!(status_of(&got.text()), 200);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|g| g.target() == "/base/drip"));
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_slowloris_head_gets_a_408_in_time() {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy_with(
        Path::Fast,
        up,
        ProxyConfig {
            header_read_timeout: Some(Duration::from_millis(300)),
            ..ProxyConfig::default()
        },
    )
    .await;
    let mut s = connect(&proxy).await;
    let started = std::time::Instant::now();
    let (mut r, mut w) = s.split();
    let drip = async {
        for b in b"GET /slowloris HTTP/1.1\r\nHost: t\r\nX-A: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if w.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        std::future::pending::<()>().await;
    };
    let mut bytes = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf).await {
                Ok(n) if n > 0 => bytes.extend_from_slice(&buf[..n]),
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::select! { () = drip => {}, () = read => {} }
    })
    .await;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_eq!(status_of(&text), 408, "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(seen.lock().unwrap().is_empty());
    proxy.shutdown().await;
}

async fn shutdown_mid_exchange(path: Path) -> (String, Vec<String>) {
    let (up, _) = parity_upstream().await;
    let proxy = Arc::new(proxy(path, up).await);
    let mut s = connect(&proxy).await;
    s.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let p = proxy.clone();
    let stopping = tokio::spawn(async move { p.shutdown().await });
    let got = read_to_end(&mut s).await;
    tokio::time::timeout(PATIENCE, stopping)
        .await
        .expect("shutdown in time")
        .unwrap();
    (
        normalize(&got.bytes, false).join("\n"),
        proxy.events().iter().map(event_shape).collect(),
    )
}

// Guards against this failure: a shutdown that begins while the request waits for the upstream: the fast path decided
// `connection: close` before the wait, so the response goes down without it and the connection
// closes after it anyway (hyper's path says `connection: close`); a client may send its next
// request onto a connection that is closing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_mid_exchange_lets_it_finish_like_hyper_path() {
    let fast = shutdown_mid_exchange(Path::Fast).await;
    let hyper = shutdown_mid_exchange(Path::Hyper).await;
    assert!(fast.0.starts_with("HTTP/1.1 200 OK"), "{fast:?}");
    assert_eq!(fast, hyper);
}

/// A client that sends part of a head and then closes its write side: hyper's path judges it.
#[tokio::test]
async fn a_half_head_then_eof_is_not_a_5xx() {
    let (up, seen) = echo_target_upstream().await;
    let proxy = proxy(Path::Fast, up).await;
    let mut s = connect(&proxy).await;
    s.write_all(b"GET /half HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    s.shutdown().await.unwrap();
    let got = read_to_end(&mut s).await;
    let status = status_of(&got.text());
    assert!(
        status == 0 || (400..500).contains(&status),
        "{}",
        got.text()
    );
    assert!(seen.lock().unwrap().is_empty());
    proxy.shutdown().await;
}

/// A client that leaves at every point of an exchange: no hang, one event per request that began,
/// and the proxy still serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_at_every_byte_never_wedges_the_proxy() {
    let (up, _) = echo_target_upstream().await;
    let proxy = proxy(Path::Fast, up).await;
    let req = b"POST /leave HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello";
    for cut in 0..=req.len() {
        let mut s = connect(&proxy).await;
        s.write_all(&req[..cut]).await.unwrap();
        drop(s);
    }
    let got = raw(
        proxy.addr(),
        b"GET /after HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status_of(&got.text()), 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    for e in proxy.events() {
        assert!(e.client_status.is_none_or(|s| s < 500), "{e:?}");
    }
    proxy.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// An upstream `Connection` header that names a framing header.
// ---------------------------------------------------------------------------------------------

/// Two requests on one keep-alive connection; the first's response names its own framing header
/// in `Connection`. The client must still be able to tell where the first response ends.
async fn framing_named_hop(path: Path, first: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let (up, _) = parity_upstream().await;
    let proxy = proxy(path, up).await;
    let mut s = connect(&proxy).await;
    let mut pending = Vec::new();
    s.write_all(format!("GET {first} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let one = response_within(
        &mut s,
        &mut pending,
        false,
        Chunks::Decoded,
        Duration::from_secs(3),
    )
    .await;
    let result = match one {
        Err(_) => Err(format!(
            "the first response has no framing the client can see; the connection stays open \
             (read so far: {:?})",
            String::from_utf8_lossy(&pending)
        )),
        Ok(None) => Err("closed".into()),
        Ok(Some(r)) => {
            got.push(r);
            s.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
                .await
                .unwrap();
            match response(&mut s, &mut pending, false).await {
                Some(r) => {
                    got.push(r);
                    Ok(got)
                }
                None => Err("no second response".into()),
            }
        }
    };
    proxy.shutdown().await;
    result
}

// Guards against this failure: `Connection: content-length` from the upstream makes the fast path drop the response's
// Content-Length (a "hop-by-hop" header it names) while it still frames the body by it and keeps
// the connection: the client gets a response with no framing at all, reads to the close that
// never comes (a hang), and with keep-alive the next response becomes part of this body.
#[tokio::test]
async fn a_connection_header_naming_content_length_keeps_the_framing_fast() {
    let got = framing_named_hop(Path::Fast, "/conn-cl").await.unwrap();
    assert_eq!(got[0].1, b"ok");
    assert_eq!(got[1].1, b"ok");
}

#[tokio::test]
async fn a_connection_header_naming_content_length_keeps_the_framing_hyper() {
    let got = framing_named_hop(Path::Hyper, "/conn-cl").await.unwrap();
    assert_eq!(got[0].1, b"ok");
    assert_eq!(got[1].1, b"ok");
}

// Guards against this failure: the same with `Connection: transfer-encoding`: the fast path drops `Transfer-Encoding:
// chunked` from the head but forwards the chunked bytes raw on a kept connection: the client
// sees `2\r\nok\r\n0\r\n\r\n` as an unframed body and waits for a close.
#[tokio::test]
async fn a_connection_header_naming_transfer_encoding_keeps_the_framing_fast() {
    let got = framing_named_hop(Path::Fast, "/conn-te").await.unwrap();
    assert_eq!(got[0].1, b"ok");
    assert_eq!(got[1].1, b"ok");
}

#[tokio::test]
async fn a_connection_header_naming_transfer_encoding_keeps_the_framing_hyper() {
    let got = framing_named_hop(Path::Hyper, "/conn-te").await.unwrap();
    assert_eq!(got[0].1, b"ok");
    assert_eq!(got[1].1, b"ok");
}

/// Bytes past the response's end in the same read, with a pipelined request behind: never the
/// next response.
#[tokio::test]
async fn bytes_past_content_length_never_answer_the_pipelined_request() {
    for (path, first, head) in [
        (Path::Fast, "/extra", false),
        (Path::Fast, "/head-extra", true),
        (Path::Hyper, "/extra", false),
    ] {
        let (up, _) = parity_upstream().await;
        let proxy = proxy(path, up).await;
        let mut s = connect(&proxy).await;
        let method = if head { "HEAD" } else { "GET" };
        s.write_all(
            format!(
                "{method} {first} HTTP/1.1\r\nHost: t\r\n\r\nGET /ok HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        let mut pending = Vec::new();
        let (_, one) = response(&mut s, &mut pending, head).await.expect("first");
        if !head {
            assert_eq!(one, b"ok");
        }
        let (h, two) = response(&mut s, &mut pending, false).await.expect("second");
        assert_eq!(two, b"ok", "{path:?} {first}: {h}");
        proxy.shutdown().await;
    }
}

async fn leave_mid_response(path: Path) -> Vec<String> {
    let handler: Handler = Arc::new(|mut s, _| {
        Box::pin(async move {
            let mut pending = Vec::new();
            if read_request(&mut s, &mut pending).await.is_none() {
                return;
            }
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\n")
                .await;
            let chunk = vec![b'z'; 65536];
            for _ in 0..1024 {
                if s.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        })
    });
    let (up, _) = scripted(handler).await;
    let proxy = proxy(path, up).await;
    let mut s = connect(&proxy).await;
    s.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let _ = s.read(&mut buf).await;
    drop(s);
    eventually("an event", || !proxy.events().is_empty()).await;
    let events: Vec<String> = proxy
        .events()
        .iter()
        .map(|e| {
            format!(
                "sends={} up={:?} err={:?} client={:?} complete={} disconnected={}",
                e.upstream_sends,
                e.upstream_status,
                e.error_side,
                e.client_status,
                e.client_complete,
                e.client_disconnected
            )
        })
        .collect();
    proxy.shutdown().await;
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_mid_response_body_is_recorded_like_hyper_path() {
    let fast = leave_mid_response(Path::Fast).await;
    let hyper = leave_mid_response(Path::Hyper).await;
    assert_eq!(fast, hyper);
}

/// A partial next head that arrived with (or during) the previous request, then nothing more:
/// the header-read timeout must still answer 408.
async fn partial_pipelined_head_times_out(path: Path, during: bool) -> String {
    let (up, _) = parity_upstream().await;
    let proxy = proxy_with(
        path,
        up,
        ProxyConfig {
            header_read_timeout: Some(Duration::from_millis(300)),
            ..ProxyConfig::default()
        },
    )
    .await;
    let mut s = connect(&proxy).await;
    if during {
        s.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        s.write_all(b"GET /b HTTP/1.1\r\nHost: t\r\n")
            .await
            .unwrap();
    } else {
        s.write_all(b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n")
            .await
            .unwrap();
    }
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match s.read(&mut buf).await {
                Ok(n) if n > 0 => bytes.extend_from_slice(&buf[..n]),
                _ => return,
            }
        }
    })
    .await;
    proxy.shutdown().await;
    normalize(&bytes, false).join("\n")
}

// Guards against this failure: the bytes of the next head read while the previous request was served (pipelined in
// the same write) never start the header-read clock (the exchange's end sets it idle, and no
// later read comes): the connection waits forever with half a head, no 408 (slowloris).
#[tokio::test]
async fn a_partial_pipelined_head_gets_a_408_fast() {
    let got = partial_pipelined_head_times_out(Path::Fast, false).await;
    assert!(got.contains("HTTP/1.1 408"), "{got}");
}

// Guards against this failure: as a_partial_pipelined_head_gets_a_408_fast, with the partial head sent while the
// upstream was still answering the first request.
#[tokio::test]
async fn a_partial_head_sent_during_an_exchange_gets_a_408_fast() {
    let got = partial_pipelined_head_times_out(Path::Fast, true).await;
    assert!(got.contains("HTTP/1.1 408"), "{got}");
}

// Guards against this failure: the same on hyper's path: the head clock (`head_timer`) is shared, so this is not the
// fast path's alone: bytes read while busy are ignored, and the exchange's end marks it idle.
#[tokio::test]
async fn a_partial_head_sent_during_an_exchange_gets_a_408_hyper() {
    let got = partial_pipelined_head_times_out(Path::Hyper, true).await;
    assert!(got.contains("HTTP/1.1 408"), "{got}");
}

/// Rules come and go while many connections send pipelined requests and drip-fed heads: every
/// connection that moves to hyper's path mid-stream takes its buffered bytes along intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_toggling_under_pipelined_load_never_desync_a_connection() {
    let (up, _) = echo_target_upstream().await;
    let proxy = Arc::new(proxy(Path::Fast, up).await);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let toggler = {
        let (proxy, stop) = (proxy.clone(), stop.clone());
        tokio::spawn(async move {
            let on = rules(HYPER_PATH_RULE);
            let mut flip = false;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                flip = !flip;
                proxy
                    .set_rules(if flip { on.clone() } else { vec![] })
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for c in 0..32 {
        let addr = proxy.addr();
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut pending = Vec::new();
            for i in 0..20 {
                let req = format!(
                    "POST /c{c}/{i}a HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nbodyGET /c{c}/{i}b HTTP/1.1\r\nHost: t\r\n\r\n"
                );
                if i % 4 == 0 {
                    for part in req.as_bytes().chunks(7) {
                        s.write_all(part).await.unwrap();
                        tokio::task::yield_now().await;
                    }
                } else {
                    s.write_all(req.as_bytes()).await.unwrap();
                }
                for tail in ["a", "b"] {
                    let (head, body) = response(&mut s, &mut pending, false)
                        .await
                        .unwrap_or_else(|| panic!("conn {c} req {i}{tail}: no response"));
                    assert_eq!(status_of(&head), 200, "{head}");
                    assert_eq!(String::from_utf8_lossy(&body), format!("/base/c{c}/{i}{tail}"));
                }
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(PATIENCE, t)
            .await
            .expect("bounded")
            .expect("no panic");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    toggler.await.unwrap();
    eventually("all events", || proxy.events().len() == 32 * 40).await;
    proxy.shutdown().await;
}

/// An upstream that writes its response a byte at a time (chunked, with trailers).
#[tokio::test]
async fn an_upstream_dripping_its_response_is_forwarded_intact() {
    let handler: Handler = Arc::new(|mut s, _| {
        Box::pin(async move {
            let mut pending = Vec::new();
            while read_request(&mut s, &mut pending).await.is_some() {
                let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n";
                for b in resp {
                    if s.write_all(&[*b]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        })
    });
    let (up, _) = scripted(handler).await;
    let proxy = proxy(Path::Fast, up).await;
    let mut s = connect(&proxy).await;
    let mut pending = Vec::new();
    for _ in 0..2 {
        s.write_all(b"GET /drip HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let (head, body) = response(&mut s, &mut pending, false)
            .await
            .expect("a response");
        assert_eq!(status_of(&head), 200);
        assert_eq!(body, b"abc0123456789abcdef");
    }
    eventually("two events", || proxy.events().len() == 2).await;
    assert!(proxy
        .events()
        .iter()
        .all(|e| e.client_complete && e.client_bytes == 19));
    proxy.shutdown().await;
}

/// An upstream whose accept queue is full: connects to it hang (SYNs dropped).
async fn blackhole_upstream() -> (SocketAddr, Vec<TcpStream>, tokio::net::TcpListener) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    // Fill the queue; a connect that would wait is abandoned.
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await
        {
            fillers.push(s);
        }
    }
    (addr, fillers, listener)
}

async fn leave_during_connect(path: Path) -> (bool, Vec<String>) {
    let (up, _fillers, _listener) = blackhole_upstream().await;
    let hangs = tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(up))
        .await
        .is_err();
    let proxy = proxy(path, up).await;
    let mut s = connect(&proxy).await;
    s.write_all(b"GET /blackhole HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let events = proxy.events().iter().map(event_shape).collect();
    drop(proxy);
    (hangs, events)
}

// Guards against this failure: the fast path connects to the upstream after the head, before the request has an event
// and without watching the client: a client that leaves while the connect hangs leaves no event
// (until the connect fails, minutes later, and hyper's path takes the request over and connects
// again); hyper's path records the departure at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_during_a_hanging_connect_is_recorded_fast() {
    let (hangs, fast) = leave_during_connect(Path::Fast).await;
    if !hangs {
        eprintln!("connects do not hang here; nothing to test");
        return;
    }
    let (_, hyper) = leave_during_connect(Path::Hyper).await;
    assert_eq!(fast, hyper);
}

/// Where the fast path differs from hyper's path by design (docs/design/proxy.md, "The
/// pass-through path"): what the fast path does, asserted on its own.
mod differences {
    use super::*;

    async fn fast(request: &str, client: Client) -> Observed {
        observe(Path::Fast, request.as_bytes(), client).await
    }

    async fn get(path: &str) -> Observed {
        let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        fast(&request, Client::Normal).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn interim_heads_are_forwarded_before_the_final_response() {
        for (path, interim, last) in [
            ("/hints", "HTTP/1.1 103 Early Hints", "HTTP/1.1 201 Created"),
            ("/continue", "HTTP/1.1 100 Continue", "HTTP/1.1 200 OK"),
        ] {
            let got = get(path).await;
            assert_eq!(got.client.len(), 2, "{path}: {:?}", got.client);
            assert!(
                got.client[0].starts_with(interim),
                "{path}: {:?}",
                got.client
            );
            assert!(got.client[1].starts_with(last), "{path}: {:?}", got.client);
            assert!(
                got.client[1].ends_with("\"ok\""),
                "{path}: {:?}",
                got.client
            );
            assert!(got.events[0].contains("complete=true"), "{:?}", got.events);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_http_1_0_upstream_answers_in_the_proxys_http_1_1() {
        let got = get("/http10").await;
        assert!(
            got.client[0].starts_with("HTTP/1.1 200 OK"),
            "{:?}",
            got.client
        );
        assert!(got.client[0].ends_with("\"ok\""), "{:?}", got.client);
        let got = get("/http10-close").await;
        assert!(
            got.client[0].starts_with("HTTP/1.1 200 OK"),
            "{:?}",
            got.client
        );
        assert!(
            got.client[0].contains("connection: close"),
            "{:?}",
            got.client
        );
        assert!(
            got.client[0].ends_with("\"until close\""),
            "{:?}",
            got.client
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_malformed_chunked_body_is_cut_after_its_head_and_blamed_on_the_upstream() {
        for path in [
            "/bad-chunk",
            "/huge-chunk",
            "/chunk-lf-only",
            "/chunk-ext-lf",
        ] {
            let got = get(path).await;
            assert_eq!(got.client.len(), 1, "{path}: {:?}", got.client);
            assert!(
                got.client[0].starts_with("HTTP/1.1 200 OK"),
                "{path}: {:?}",
                got.client
            );
            assert!(
                got.client[0].contains("<cut>"),
                "{path}: the body ends early: {:?}",
                got.client
            );
            let event = &got.events[0];
            assert!(event.contains("err=Some(Upstream)/true"), "{path}: {event}");
            assert!(event.contains("complete=false"), "{path}: {event}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn trailers_pass_and_the_exchange_is_complete() {
        let got = get("/trailers").await;
        assert!(got.client[0].ends_with("\"ok\""), "{:?}", got.client);
        assert!(
            got.events[0].contains("complete=true disconnected=false"),
            "{:?}",
            got.events
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unasked_switch_of_protocols_is_a_502() {
        let got = get("/switch").await;
        assert!(
            got.client[0].starts_with("HTTP/1.1 502"),
            "{:?}",
            got.client
        );
        assert!(
            got.events[0].contains("err=Some(Upstream)/true"),
            "{:?}",
            got.events
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hop_by_hop_response_headers_go_and_trailer_stays() {
        let got = get("/hop").await;
        let head = &got.client[0];
        for hop in ["x-hop", "proxy-connection", "upgrade"] {
            assert!(!head.contains(hop), "{hop}: {head}");
        }
        assert!(head.contains("trailer: X-Sum"), "{head}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_leaves_with_a_request_pipelined_is_recorded_as_gone() {
        let got = fast(
            "GET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /ok HTTP/1.1\r\nHost: t\r\n\r\n",
            Client::Leave,
        )
        .await;
        assert_eq!(got.events.len(), 1, "{:?}", got.events);
        assert!(
            got.events[0].contains("disconnected=true"),
            "{:?}",
            got.events
        );
        assert!(
            got.events[0].contains("sends=1 up=Some(200)"),
            "{:?}",
            got.events
        );
    }
}
