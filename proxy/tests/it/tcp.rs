//! TCP mode: the byte relay and its faults, against a TCP echo upstream.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use idemspec_proxy::{start, ProxyConfig, ProxyHandle};
use idemspec_scenarios::rules::{Mode, TcpRule};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

async fn tcp_proxy(yaml: &str) -> ProxyHandle {
    let tcp_rules: Vec<TcpRule> = idemspec_scenarios::from_yaml("tcp.yaml", yaml).unwrap();
    start(ProxyConfig {
        upstream: echo_upstream().await.to_string(),
        mode: Mode::Tcp,
        tcp_rules,
        ..ProxyConfig::default()
    })
    .await
    .unwrap()
}

/// Writes `data`, half-closes, reads everything back.
async fn exchange(addr: SocketAddr, data: &[u8]) -> Raw {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The proxy may already have closed: a failed write is part of what is observed.
    let _ = s.write_all(data).await;
    let _ = s.shutdown().await;
    read_to_end(&mut s).await
}

#[tokio::test]
async fn relays_bytes_intact() {
    let proxy = tcp_proxy("[]").await;
    let data = pattern(2 * 1024 * 1024);
    let got = exchange(proxy.addr(), &data).await;
    assert!(got.bytes == data, "2 MiB relayed intact");
    eventually("the event", || proxy.events().len() == 1).await;
    let e = &proxy.events()[0];
    assert!(e.client_complete);
    assert_eq!(e.client_bytes, data.len() as u64);
    proxy.shutdown().await;
}

#[tokio::test]
async fn refuse_and_reset() {
    let proxy = tcp_proxy("- name: a\n  match: {nth: 1}\n  fault: refuse\n- name: b\n  match: {nth: 1}\n  fault: {refuse: {reset: true}}\n").await;
    let first = exchange(proxy.addr(), b"hello").await;
    assert!(first.bytes.is_empty());
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let second = read_to_end(&mut s).await;
    assert!(second.bytes.is_empty());
    assert_eq!(second.error, Some(ErrorKind::ConnectionReset));
    let third = exchange(proxy.addr(), b"hello").await;
    assert_eq!(third.bytes, b"hello", "the third connection passes");
    proxy.shutdown().await;
}

#[tokio::test]
async fn close_after_n_bytes_downstream() {
    let proxy =
        tcp_proxy("- name: cut\n  fault: {close_after: {bytes: 1000, direction: downstream}}\n")
            .await;
    let got = exchange(proxy.addr(), &pattern(100_000)).await;
    assert_eq!(got.bytes, pattern(1000), "exactly the first 1000 bytes");
    proxy.shutdown().await;
    let proxy = tcp_proxy(
        "- name: rst\n  fault: {close_after: {bytes: 10, direction: upstream, reset: true}}\n",
    )
    .await;
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(&pattern(100)).await.unwrap();
    let got = read_to_end(&mut s).await;
    assert!(got.bytes.len() <= 10);
    assert_eq!(got.error, Some(ErrorKind::ConnectionReset));
    proxy.shutdown().await;
}

#[tokio::test]
async fn latency_delays_each_chunk() {
    let proxy = tcp_proxy(
        "- name: slow\n  fault: {latency: {duration: 200ms, jitter: 20ms, direction: upstream}}\n",
    )
    .await;
    let started = Instant::now();
    let got = exchange(proxy.addr(), b"ping").await;
    assert_eq!(got.bytes, b"ping");
    assert!(started.elapsed() >= Duration::from_millis(180));
    proxy.shutdown().await;
}

#[tokio::test]
async fn blackhole_swallows_and_never_answers() {
    let proxy = tcp_proxy("- name: hole\n  fault: blackhole\n").await;
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(b"anyone there?").await.unwrap();
    let mut buf = [0u8; 16];
    let waited = tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf)).await;
    assert!(waited.is_err(), "no answer, no close");
    drop(s);
    eventually("the event", || proxy.events().len() == 1).await;
    assert!(proxy.events()[0].client_disconnected);
    proxy.shutdown().await;
}

/// A shutdown lets a relay in progress go on for the grace period (as HTTP lets the exchange in
/// progress finish): a reply the upstream sends after the shutdown began still reaches the client.
#[tokio::test]
async fn shutdown_lets_bytes_flow_for_the_grace_period() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        s.write_all(b"late reply").await.unwrap();
    });
    let proxy = start(ProxyConfig {
        upstream: upstream.to_string(),
        mode: Mode::Tcp,
        shutdown_grace: Duration::from_secs(3),
        ..ProxyConfig::default()
    })
    .await
    .unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    client.write_all(b"hello").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let shutdown = tokio::spawn({
        let proxy = proxy.clone();
        async move { proxy.shutdown().await }
    });
    let mut got = [0u8; 10];
    client
        .read_exact(&mut got)
        .await
        .expect("the reply arrives");
    assert_eq!(&got, b"late reply");
    drop(client);
    tokio::time::timeout(PATIENCE, shutdown)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        proxy.events().len(),
        1,
        "the connection's event is recorded"
    );
}
