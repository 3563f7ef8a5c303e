//! Slow clients: a request head that takes longer than `header_read_timeout` to arrive is cut
//! (408 with a problem body when part of it arrived, a plain close when nothing did), so slow
//! connections neither block other clients nor keep their descriptors. What comes after a head —
//! a slow upstream, an idle keep-alive connection between requests — is not timed.

use rstest::rstest;
use rstest_reuse::apply;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use idemspec_proxy::{ProxyConfig, ProxyHandle};

use crate::malformed::assert_problem;
use crate::support::*;

/// The short header-read timeout the tests run with.
const HEAD_TIMEOUT: Duration = Duration::from_millis(300);

async fn proxy_with_head_timeout(threads: usize, timeout: Duration) -> (ProxyHandle, Upstream) {
    proxied_with(ProxyConfig {
        io_threads: threads,
        header_read_timeout: Some(timeout),
        ..with_control()
    })
    .await
}

/// The open file descriptors of this process (the proxy runs in it).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// What a slow client saw: the bytes it read, when it had connected and when its answer was in.
struct Slow {
    got: Raw,
    connected: Instant,
    ended: Instant,
}

/// A slowloris: sends a request head one byte every 50 ms (its first byte at once) and reads at
/// the same time, until it has an answer or the connection ends; `all_in` is released once every
/// slow client has connected.
async fn slow_head(addr: SocketAddr, all_in: Arc<tokio::sync::Barrier>) -> Slow {
    let head = b"GET /never HTTP/1.1\r\nHost: t\r\nX-Slow: 12345678901234567890123456789\r\n\r\n";
    let stream = TcpStream::connect(addr).await.expect("connect");
    let connected = Instant::now();
    let (mut reader, mut writer) = stream.into_split();
    let trickle = async move {
        for (i, byte) in head.iter().enumerate() {
            if writer.write_all(&[*byte]).await.is_err() {
                break;
            }
            if i == 0 {
                all_in.wait().await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The whole head takes 3.5 s: longer than the timeouts here.
        std::future::pending::<()>().await;
    };
    let read = async move {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        let error = loop {
            match reader.read(&mut buf).await {
                Ok(0) => break None,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                Err(e) => break Some(e.kind()),
            }
            if split_response(&bytes, false, Chunks::Decoded, false).is_some() {
                break None;
            }
        };
        Raw { bytes, error }
    };
    let got = tokio::time::timeout(PATIENCE, async {
        tokio::select! {
            got = read => got,
            () = trickle => unreachable!("the trickle never ends"),
        }
    })
    .await
    .expect("the proxy cuts a slow head in time");
    Slow {
        got,
        connected,
        ended: Instant::now(),
    }
}

/// 200 slowloris connections on the proxy's port and 50 on the control API's: both keep
/// serving other clients while the slow heads trickle in, each slow head is cut at its timeout
/// with a 408 problem, and their descriptors are released.
#[apply(both_runtimes)]
async fn two_hundred_slow_heads_neither_block_others_nor_keep_their_descriptors(threads: usize) {
    // Room for 250 connections and 20 requests (~60 ms here) on a loaded machine before the
    // first slow head is cut.
    let timeout = Duration::from_secs(1);
    let (proxy, upstream) = proxy_with_head_timeout(threads, timeout).await;
    let before = open_fds();
    let control = proxy.control_addr().unwrap();
    let all_in = Arc::new(tokio::sync::Barrier::new(251));
    let slow: Vec<_> = (0..250)
        .map(|i| {
            let addr = if i < 200 { proxy.addr() } else { control };
            tokio::spawn(slow_head(addr, all_in.clone()))
        })
        .collect();
    all_in.wait().await;
    // While every slow head is open, other clients get their answers.
    let client = http();
    for i in 0..10 {
        let resp = client
            .get(format!("http://{}/fast/{i}", proxy.addr()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let resp = client
            .get(format!("http://{control}/rules"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
    let served = Instant::now();
    let mut first_cut = None::<Instant>;
    for (i, task) in slow.into_iter().enumerate() {
        let Slow {
            got,
            connected,
            ended,
        } = task.await.unwrap();
        assert_problem(&format!("slow head {i}"), &got, 408);
        let lasted = ended - connected;
        assert!(
            lasted >= timeout - Duration::from_millis(50),
            "slow head {i} cut early: {lasted:?}"
        );
        first_cut = Some(first_cut.map_or(ended, |t| t.min(ended)));
    }
    assert!(
        first_cut.is_some_and(|cut| served < cut),
        "the 20 other requests were answered while all 250 slow heads were open"
    );
    assert_eq!(upstream.count(), 10, "only the fast requests reached it");
    drop(client);
    eventually("the slow connections' descriptors are released", || {
        open_fds() <= before + 10
    })
    .await;
    proxy.shutdown().await;
}

/// A connection that never sends a byte is closed at the timeout, without an answer (a 408 on a
/// connection that asked nothing could be read as the answer to a request sent at that moment).
#[apply(both_runtimes)]
async fn a_connection_that_sends_nothing_is_closed_at_the_timeout(threads: usize) {
    let (proxy, _upstream) = proxy_with_head_timeout(threads, HEAD_TIMEOUT).await;
    for addr in [proxy.addr(), proxy.control_addr().unwrap()] {
        let started = Instant::now();
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let got = read_to_end(&mut stream).await;
        assert!(got.bytes.is_empty(), "{}", got.text());
        assert!(started.elapsed() >= HEAD_TIMEOUT - Duration::from_millis(50));
    }
    proxy.shutdown().await;
}

/// Only the head is timed: a slow upstream and an idle keep-alive connection between requests
/// outlast the timeout on one connection.
#[apply(both_runtimes)]
async fn a_slow_upstream_and_an_idle_keep_alive_connection_are_not_cut(threads: usize) {
    let (proxy, upstream) = proxy_with_head_timeout(threads, HEAD_TIMEOUT).await;
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let slow = format!("/slow/{}", HEAD_TIMEOUT.as_millis() * 2);
    for (i, path) in [slow.as_str(), "/after-idle"].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(HEAD_TIMEOUT * 2).await;
        }
        let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 200"), "{path}: {text}");
    }
    assert_eq!(upstream.count(), 2);
    proxy.shutdown().await;
}
