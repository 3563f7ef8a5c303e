//! The control API, while traffic flows; and the event log against the upstream's own view.

use std::time::Duration;

use idemspec_proxy::ProxyConfig;
use serde_json::{json, Value};

use crate::support::*;

async fn get_json<T: serde::de::DeserializeOwned>(client: &reqwest::Client, url: String) -> T {
    let resp = client.get(url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

async fn status(req: reqwest::RequestBuilder) -> u16 {
    req.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn rules_change_while_traffic_flows_and_events_match_the_upstream() {
    let (proxy, upstream) = proxied_with(with_control()).await;
    let control = control_url(&proxy);
    let client = http();
    // Traffic: a steady stream of tagged requests on keep-alive connections.
    let addr = proxy.addr();
    let traffic = tokio::spawn({
        let client = client.clone();
        async move {
            let mut statuses = Vec::new();
            for i in 0..120 {
                let resp = client
                    .post(format!("http://{addr}/r/{i}"))
                    .header("X-Idemspec-Step", format!("s{i}"))
                    .send()
                    .await
                    .unwrap();
                statuses.push((i, resp.status().as_u16()));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            statuses
        }
    });
    // Meanwhile: add a 503 rule, replace it, clear it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let gateway = json!([{"name": "gw", "match": {"path_prefix": "/r/"}, "fault": {"respond": {"status": 503}}}]);
    let put = client.put(format!("{control}/rules")).json(&gateway);
    assert_eq!(status(put).await, 200);
    let listed: Value = get_json(&client, format!("{control}/rules")).await;
    assert_eq!(listed[0]["name"], "gw");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        status(
            client
                .post(format!("{control}/rules"))
                .json(&json!({"name": "never", "match": {"path": "/nowhere"}, "fault": "refuse"}))
        )
        .await,
        200
    );
    assert_eq!(status(client.delete(format!("{control}/rules"))).await, 204);
    let statuses = traffic.await.unwrap();
    assert!(
        statuses.iter().any(|(_, s)| *s == 503),
        "the rule took effect mid-traffic"
    );
    assert!(statuses.last().unwrap().1 == 200, "and was cleared");

    // The event log, request by request, agrees with the upstream and with the client.
    let events: Vec<idemspec_proxy::ProxyEvent> =
        get_json(&client, format!("{control}/events")).await;
    assert_eq!(events.len(), 120);
    let reached: Vec<String> = upstream.seen().into_iter().map(|s| s.path).collect();
    for (i, status) in statuses {
        let e = events
            .iter()
            .find(|e| e.step.as_deref() == Some(&format!("s{i}")))
            .expect("an event per request");
        assert_eq!(e.path, format!("/r/{i}"));
        assert_eq!(e.client_status, Some(status));
        let forwarded = reached.contains(&e.path);
        assert_eq!(forwarded, e.upstream_sends == 1, "{e:?}");
        assert_eq!(forwarded, status == 200);
        assert_eq!(e.fault.as_deref() == Some("respond"), status == 503);
    }
    // since= returns only newer events.
    let last = events.last().unwrap().seq;
    let newer: Vec<Value> = get_json(&client, format!("{control}/events?since={last}")).await;
    assert!(newer.is_empty());
    let some: Vec<Value> = get_json(&client, format!("{control}/events?since={}", last - 3)).await;
    assert_eq!(some.len(), 3);
    // reset forgets events but seqs continue.
    assert_eq!(status(client.post(format!("{control}/reset"))).await, 204);
    client
        .get(format!("http://{addr}/after"))
        .send()
        .await
        .unwrap();
    assert_eq!(proxy.events()[0].seq, last + 1);
    proxy.shutdown().await;
}

/// Invalid rules, and rules the proxy could not serve as written, are refused with a problem
/// that points at the rule and field (a JSON pointer into the body); the rules in force stay.
#[tokio::test]
async fn invalid_rules_get_a_400_problem_that_points_at_the_field_and_change_nothing() {
    let (proxy, _upstream) = proxied_with(ProxyConfig {
        rules: rules("- name: keep\n  match: {path: /k}\n  fault: refuse\n"),
        ..with_control()
    })
    .await;
    let control = control_url(&proxy);
    let client = http();
    let one = |rule: Value| json!([rule]);
    let respond = |options: Value| one(json!({"name": "r", "fault": {"respond": options}}));
    let cases = [
        (
            "PUT",
            one(json!({"name": "z", "match": {"nth": 0}, "fault": "refuse"})),
            "/0/match/nth",
            "at least 1",
        ),
        (
            "PUT",
            one(json!({"name": "p", "match": {"probability": 0.5}, "fault": "refuse"})),
            "/0/match",
            "seed",
        ),
        (
            "PUT",
            one(json!({"name": "u", "fault": {"explode": {}}})),
            "/0/fault/explode",
            "explode",
        ),
        (
            "PUT",
            one(json!({"name": "f", "fault": "refuse", "bogus": 1})),
            "/0/bogus",
            "bogus",
        ),
        (
            "PUT",
            respond(json!({"status": 502, "content_type": "a\nb"})),
            "/0/fault/respond/content_type",
            "media type",
        ),
        (
            "PUT",
            respond(json!({"status": 101})),
            "/0/fault/respond/status",
            "200..=599",
        ),
        (
            "PUT",
            one(json!({"name": "", "fault": "refuse"})),
            "/0/name",
            "empty",
        ),
        (
            "PUT",
            json!([{"name": "a", "fault": "refuse"}, {"name": "b", "fault": "refuse"}, {"name": "a", "fault": "refuse"}]),
            "/2/name",
            "`a`",
        ),
        (
            "POST",
            json!({"name": "keep", "fault": "refuse"}),
            "/name",
            "`keep`",
        ),
    ];
    for (method, body, pointer, says) in cases {
        let req = match method {
            "PUT" => client.put(format!("{control}/rules")),
            _ => client.post(format!("{control}/rules")),
        };
        let resp = req.json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        assert_eq!(resp.headers()["content-type"], "application/problem+json");
        let problem: Value = resp.json().await.unwrap();
        assert_eq!(problem["pointer"], pointer, "{body}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains(says),
            "{body}: {problem}"
        );
    }
    let resp = client
        .put(format!("{control}/rules"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = client
        .get(format!("{control}/events?since=minus"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(proxy.rules().len(), 1, "the old rules stay");
    assert_eq!(proxy.rules()[0].name, "keep");
    proxy.shutdown().await;
}

/// A control-API client that never finishes its request cannot hold the shutdown past the grace
/// period (axum's graceful shutdown would wait for it forever).
#[tokio::test]
async fn a_half_sent_control_request_does_not_hold_the_shutdown() {
    let (proxy, _upstream) = proxied_with(ProxyConfig {
        shutdown_grace: std::time::Duration::from_millis(200),
        ..with_control()
    })
    .await;
    let mut stalled = tokio::net::TcpStream::connect(proxy.control_addr().unwrap())
        .await
        .unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stalled, b"GET /events HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Let the control server read the partial head.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    tokio::time::timeout(std::time::Duration::from_secs(5), proxy.shutdown())
        .await
        .expect("shutdown returns within the grace period and its second");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    drop(stalled);
}

/// Every error of the control API is a problem: an unknown path and a method a path does not
/// take too, not only refused rules.
#[tokio::test]
async fn unknown_paths_and_methods_get_a_problem_body() {
    let (proxy, _upstream) = proxied_with(with_control()).await;
    let control = control_url(&proxy);
    let client = http();
    for (req, status) in [
        (client.get(format!("{control}/nowhere")), 404),
        (client.post(format!("{control}/events")), 405),
        (client.patch(format!("{control}/rules")), 405),
    ] {
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), status);
        assert_eq!(resp.headers()["content-type"], "application/problem+json");
        let problem: Value = resp.json().await.unwrap();
        assert_eq!(problem["status"], status, "{problem}");
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()));
    }
    proxy.shutdown().await;
}

/// An event keeps at most 256 bytes of a key and 2 KiB of a path, cut and marked with the whole
/// length and a digest (two keys alike in their first 256 bytes still differ); `GET /events`
/// answers pages of `limit` events, paged by `since`, and refuses a limit out of range.
#[tokio::test]
async fn events_keep_bounded_keys_and_paths_and_are_read_in_pages() {
    let (proxy, _upstream) = proxied_with(with_control()).await;
    let control = control_url(&proxy);
    let client = http();
    let long_path = format!("/v1/{}", "p".repeat(10_000));
    for tail in ["a", "b"] {
        let key = format!("{}{tail}", "k".repeat(1000));
        let resp = client
            .get(format!("http://{}{long_path}", proxy.addr()))
            .header("idempotency-key", key)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
    for i in 0..5 {
        let url = format!("http://{}/v1/short/{i}", proxy.addr());
        assert_eq!(status(client.get(url)).await, 200);
    }
    let events: Vec<Value> = get_json(&client, format!("{control}/events")).await;
    assert_eq!(events.len(), 7, "{events:?}");
    let (first, second) = (&events[0], &events[1]);
    let key = first["idempotency_key"].as_str().unwrap();
    let path = first["path"].as_str().unwrap();
    assert!(
        key.starts_with(&"k".repeat(256)) && key.contains("…[cut: 1001 bytes, sha256 "),
        "{key}"
    );
    assert!(key.len() < 256 + 64, "{} bytes kept of the key", key.len());
    assert_ne!(
        first["idempotency_key"], second["idempotency_key"],
        "the digests differ"
    );
    assert!(
        path.starts_with("/v1/ppp") && path.contains("…[cut: 10004 bytes, sha256 "),
        "{path}"
    );
    assert!(
        path.len() < 2048 + 64,
        "{} bytes kept of the path",
        path.len()
    );
    let seqs =
        |page: &[Value]| -> Vec<u64> { page.iter().map(|e| e["seq"].as_u64().unwrap()).collect() };
    let page: Vec<Value> = get_json(&client, format!("{control}/events?limit=3")).await;
    assert_eq!(seqs(&page), [1, 2, 3]);
    let next: Vec<Value> = get_json(&client, format!("{control}/events?since=3&limit=3")).await;
    assert_eq!(seqs(&next), [4, 5, 6]);
    let last: Vec<Value> = get_json(&client, format!("{control}/events?since=6&limit=3")).await;
    assert_eq!(seqs(&last), [7], "a short page is the last");
    for bad in ["limit=0", "limit=10001", "limit=-1"] {
        let resp = client
            .get(format!("{control}/events?{bad}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{bad}");
        let problem: Value = resp.json().await.unwrap();
        assert!(
            problem["detail"].as_str().unwrap().contains("1 to 10000"),
            "{problem}"
        );
    }
    proxy.shutdown().await;
}
