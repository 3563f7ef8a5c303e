//! `GET /metrics` on the control API, scraped over HTTP after known traffic and read with a
//! Prometheus exposition-format parser (`prometheus-parse`); `scrape` and `counter` serve the
//! Toxiproxy API's `/metrics` tests too.

use std::sync::Arc;

use idemspec_proxy::{start, ProxyConfig, ProxyHandle};
use prometheus_parse::{Scrape, Value};
use serde_json::json;
use tokio::sync::Barrier;

use crate::support::*;

/// Scrapes the proxy's `/metrics` and parses it.
async fn scrape_metrics(proxy: &ProxyHandle) -> Scrape {
    scrape(&format!("{}/metrics", control_url(proxy))).await
}

/// Scrapes `url` (a `/metrics` endpoint, OpenMetrics text) and parses it.
pub async fn scrape(url: &str) -> Scrape {
    let resp = http().get(url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = resp.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("a valid exposition")
}

/// The value of the counter sample `name` whose labels include `labels`; 0 when absent.
pub fn counter(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            Value::Counter(v) | Value::Untyped(v) => v,
            ref other => panic!("{name} is not a counter: {other:?}"),
        })
        .sum()
}

/// The added-latency histogram's cumulative buckets, (upper bound in seconds, count).
fn latency_buckets(scrape: &Scrape) -> Vec<(f64, f64)> {
    let sample = scrape
        .samples
        .iter()
        .find(|s| s.metric == "idemspec_proxy_added_latency_seconds")
        .expect("the added-latency histogram");
    match &sample.value {
        Value::Histogram(buckets) => buckets.iter().map(|b| (b.less_than, b.count)).collect(),
        other => panic!("not a histogram: {other:?}"),
    }
}

/// Sends `n` POSTs to `path` at once (a barrier), each on its own connection; their statuses.
async fn simultaneous(addr: std::net::SocketAddr, path: &'static str, n: usize) -> Vec<u16> {
    let barrier = Arc::new(Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let client = http();
                barrier.wait().await;
                let resp = client.post(format!("http://{addr}{path}")).send().await;
                let resp = resp.unwrap();
                let status = resp.status().as_u16();
                resp.bytes().await.unwrap();
                status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    statuses
}

#[tokio::test]
async fn metrics_count_outcomes_faults_and_added_latency_after_known_traffic() {
    let (proxy, upstream) = proxied_with(ProxyConfig {
        io_threads: 2,
        ..with_control()
    })
    .await;
    let rules = json!([
        {"name": "gw", "match": {"path_prefix": "/gw"}, "fault": {"respond": {"status": 503}}},
        {"name": "slow", "match": {"path_prefix": "/slow"}, "fault": {"delay_request": {"duration": "40ms"}}}
    ]);
    let put = http()
        .put(format!("{}/rules", control_url(&proxy)))
        .json(&rules)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    let addr = proxy.addr();
    for _ in 0..3 {
        let (passed, refused) =
            tokio::join!(simultaneous(addr, "/pass", 8), simultaneous(addr, "/gw", 4));
        assert_eq!(passed, [200; 8]);
        assert_eq!(refused, [503; 4]);
    }
    assert_eq!(simultaneous(addr, "/slow", 2).await, [200; 2]);
    eventually("38 events", || proxy.events().len() == 38).await;
    assert_eq!(upstream.count(), 26, "24 passed and 2 delayed requests");

    let scrape = scrape_metrics(&proxy).await;
    let requests = "idemspec_proxy_requests_total";
    assert_eq!(counter(&scrape, requests, &[("outcome", "complete")]), 38.0);
    assert_eq!(counter(&scrape, requests, &[]), 38.0);
    let faults = "idemspec_proxy_faults_total";
    assert_eq!(
        counter(&scrape, faults, &[("rule", "gw"), ("verb", "respond")]),
        12.0
    );
    assert_eq!(
        counter(
            &scrape,
            faults,
            &[("rule", "slow"), ("verb", "delay_request")]
        ),
        2.0
    );
    assert_eq!(counter(&scrape, faults, &[]), 14.0);
    assert_eq!(
        counter(&scrape, "idemspec_proxy_upstream_errors_total", &[]),
        0.0
    );
    // Every response head is observed once; the two delayed ones added at least 40 ms each.
    let buckets = latency_buckets(&scrape);
    let (_, total) = *buckets.last().unwrap();
    assert_eq!(total, 38.0, "{buckets:?}");
    let under_20ms = buckets
        .iter()
        .rfind(|(le, _)| *le <= 0.02)
        .map(|(_, n)| *n)
        .unwrap();
    assert!(total - under_20ms >= 2.0, "{buckets:?}");

    // A reset forgets the events, not the counters.
    let reset = http()
        .post(format!("{}/reset", control_url(&proxy)))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 204);
    let again = scrape_metrics(&proxy).await;
    assert_eq!(counter(&again, requests, &[]), 38.0);
}

#[tokio::test]
async fn an_unreachable_upstream_counts_as_upstream_errors() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = start(ProxyConfig {
        upstream: format!("http://{closed}"),
        ..with_control()
    })
    .await
    .expect("proxy starts");
    assert_eq!(simultaneous(proxy.addr(), "/x", 3).await, [502; 3]);
    eventually("3 events", || proxy.events().len() == 3).await;
    let scrape = scrape_metrics(&proxy).await;
    assert_eq!(
        counter(
            &scrape,
            "idemspec_proxy_requests_total",
            &[("outcome", "upstream_error")]
        ),
        3.0
    );
    assert_eq!(counter(&scrape, "idemspec_proxy_requests_total", &[]), 3.0);
    assert_eq!(
        counter(&scrape, "idemspec_proxy_upstream_errors_total", &[]),
        3.0
    );
    assert_eq!(latency_buckets(&scrape).last().unwrap().1, 3.0);
}
