//! Rule matching over real requests: nth, seeded probability, control headers.

use crate::support::*;
use idemspec_proxy::ProxyConfig;
use rstest::rstest;
use rstest_reuse::apply;

#[apply(both_runtimes)]
async fn nth_two_hits_exactly_the_second_matching_request(threads: usize) {
    let (proxy, upstream) = proxied(threads, rules(
        "- name: second\n  match: {method: POST, path: /v1/workers, nth: 2}\n  fault: {respond: {status: 502}}\n",
    ))
    .await;
    let client = http();
    let mut statuses = Vec::new();
    for i in 0..5 {
        // Interleave non-matching requests: they must not count.
        let other = client
            .get(format!("http://{}/v1/workers", proxy.addr()))
            .send()
            .await
            .unwrap();
        assert_eq!(other.status(), 200, "GET {i} is not matched");
        let resp = client
            .post(format!("http://{}/v1/workers", proxy.addr()))
            .send()
            .await
            .unwrap();
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(statuses, [200, 502, 200, 200, 200]);
    assert_eq!(upstream.count(), 9);
    proxy.shutdown().await;
}

async fn choices(seed: u64) -> Vec<bool> {
    let (proxy, _upstream) = proxied(0, rules(&format!(
        "- name: coin\n  match: {{probability: 0.5, seed: {seed}}}\n  fault: {{respond: {{status: 503}}}}\n"
    )))
    .await;
    let client = http();
    let mut out = Vec::new();
    for _ in 0..40 {
        let resp = client
            .get(format!("http://{}/x", proxy.addr()))
            .send()
            .await
            .unwrap();
        out.push(resp.status() == 503);
    }
    proxy.shutdown().await;
    out
}

#[tokio::test]
async fn seeded_probability_makes_the_same_choices_every_run() {
    let first = choices(42).await;
    assert_eq!(first, choices(42).await, "same seed, same choices");
    let hits = first.iter().filter(|h| **h).count();
    assert!(
        (5..=35).contains(&hits),
        "a fair coin over 40 requests: {hits}"
    );
    assert_ne!(first, choices(43).await, "another seed, other choices");
}

#[apply(both_runtimes)]
async fn control_headers_are_matched_recorded_and_stripped(threads: usize) {
    let (proxy, upstream) = proxied(threads, rules(
        "- name: tagged\n  match: {header: {name: x-idemspec-fault, equals: slow}}\n  fault: {delay_request: {duration: 1ms}}\n",
    ))
    .await;
    let resp = http()
        .post(format!("http://{}/v1/workers", proxy.addr()))
        .header("X-Idemspec-Step", "create-1")
        .header("X-Idemspec-Fault", "slow")
        .header("Idempotency-Key", "K9")
        .header("X-Other", "kept")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = &upstream.seen()[0];
    assert!(
        seen.headers
            .keys()
            .all(|k| !k.as_str().starts_with("x-idemspec-")),
        "control headers reach the upstream: {:?}",
        seen.headers
    );
    assert_eq!(seen.headers["x-other"], "kept");
    assert_eq!(seen.headers["idempotency-key"], "K9");
    let e = &proxy.events()[0];
    assert_eq!(e.step.as_deref(), Some("create-1"));
    assert_eq!(e.rule.as_deref(), Some("tagged"));
    assert_eq!(e.idempotency_key.as_deref(), Some("K9"));
    proxy.shutdown().await;
}

/// `idempotency_key` compares the header the proxy records as the key, on both paths (the
/// first request is judged on the fast path and handed over, the rest on hyper's path).
#[apply(both_runtimes)]
async fn idempotency_key_matches_the_configured_key_header(threads: usize) {
    let (proxy, upstream) = proxied_with(ProxyConfig {
        rules: rules(
            "- name: keyed\n  match: {idempotency_key: K1}\n  fault: {respond: {status: 409}}\n",
        ),
        io_threads: threads,
        key_at: idemspec_scenarios::profile::KeyAt::Header("PayPal-Request-Id".into()),
        ..ProxyConfig::default()
    })
    .await;
    let client = http();
    let url = format!("http://{}/v1/workers", proxy.addr());
    let mut statuses = Vec::new();
    for (header, value) in [
        ("Idempotency-Key", "K1"),
        ("PayPal-Request-Id", "K2"),
        ("PayPal-Request-Id", "K1"),
        ("Idempotency-Key", "K1"),
    ] {
        let resp = client
            .post(&url)
            .header(header, value)
            .send()
            .await
            .unwrap();
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 409, 200]);
    assert_eq!(upstream.count(), 3);
    let keys: Vec<_> = proxy
        .events()
        .iter()
        .map(|e| e.idempotency_key.clone())
        .collect();
    assert_eq!(keys, [None, Some("K2".into()), Some("K1".into()), None]);
    proxy.shutdown().await;
}

#[tokio::test]
async fn upstream_path_prefix_is_put_before_every_path() {
    let upstream = Upstream::start().await;
    let proxy = idemspec_proxy::start(idemspec_proxy::ProxyConfig {
        upstream: format!("{}/base/", upstream.url()),
        rules: rules("- name: exact\n  match: {path: /v1/x}\n  fault: {respond: {status: 418}}\n"),
        ..Default::default()
    })
    .await
    .unwrap();
    let client = http();
    let resp = client
        .get(format!("http://{}/v1/y?q=1", proxy.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = client
        .get(format!("http://{}/v1/x", proxy.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 418, "rules see the path the client sent");
    let seen: Vec<String> = upstream.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(seen, ["/base/v1/y"]);
    assert_eq!(proxy.events()[0].path, "/v1/y?q=1");
    proxy.shutdown().await;
}
