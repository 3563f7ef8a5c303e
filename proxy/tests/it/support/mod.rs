//! Test support: a counting upstream, raw and reqwest clients, a raw HTTP/1.1 response and
//! request reader with upstreams built on it, proxy start-up helpers.

pub mod client;
pub mod raw;
pub mod tls;
pub mod upstream;

use std::time::Duration;

use idemspec_proxy::{start, ProxyConfig, ProxyHandle};
use idemspec_scenarios::rules::Rule;
use rstest_reuse::template;

pub use client::*;
pub use raw::*;
pub use tls::*;
pub use upstream::*;

/// Generous bound for anything that should take milliseconds (the test machine is loaded).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Starts a counting upstream and an HTTP proxy in front of it with `rules`, serving its
/// connections on the test's runtime (`io_threads` 0) or on that many threads of its own.
pub async fn proxied(io_threads: usize, rules: Vec<Rule>) -> (ProxyHandle, Upstream) {
    proxied_with(ProxyConfig {
        rules,
        io_threads,
        ..ProxyConfig::default()
    })
    .await
}

/// Starts a counting upstream and a proxy in front of it configured by `config` (whose
/// `upstream` is set to the counting upstream).
pub async fn proxied_with(config: ProxyConfig) -> (ProxyHandle, Upstream) {
    let upstream = Upstream::start().await;
    let proxy = start(ProxyConfig {
        upstream: upstream.url(),
        ..config
    })
    .await
    .expect("proxy starts");
    (proxy, upstream)
}

/// The default configuration with a control API on a free port.
pub fn with_control() -> ProxyConfig {
    ProxyConfig {
        control: Some("127.0.0.1:0".parse().expect("an address")),
        ..ProxyConfig::default()
    }
}

/// The control API's base URL, `http://ADDR`.
pub fn control_url(proxy: &ProxyHandle) -> String {
    format!("http://{}", proxy.control_addr().expect("a control API"))
}

/// Runs a test twice: with the proxy's connections served on the test's runtime (`threads` 0)
/// and on two I/O threads of the proxy's own, as `idemspec proxy` serves them (thread-per-core).
/// Use it as `#[apply(both_runtimes)] async fn name(threads: usize)`.
#[template]
#[rstest]
#[case::callers_runtime(0)]
#[case::io_threads(2)]
#[tokio::test]
pub async fn both_runtimes(#[case] threads: usize) {}

/// Parses rules from YAML, as a scenario would carry them.
pub fn rules(yaml: &str) -> Vec<Rule> {
    idemspec_scenarios::from_yaml("test-rules.yaml", yaml).expect("test rules are valid")
}

/// A rule whose conditions every request satisfies and which never applies (its `nth` is never
/// reached): while it is in force, every request is served on hyper's path and passes through.
pub const HYPER_PATH_RULE: &str =
    r#"[{"name": "never", "match": {"nth": 4000000000}, "fault": {"respond": {"status": 418}}}]"#;

/// Polls `cond` until it holds or [`PATIENCE`] runs out.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A TCP upstream that echoes every byte back until the client half-closes.
pub async fn echo_upstream() -> std::net::SocketAddr {
    let (addr, _) = scripted(std::sync::Arc::new(|mut s, _| {
        Box::pin(async move {
            let (mut r, mut w) = s.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        })
    }))
    .await;
    addr
}
