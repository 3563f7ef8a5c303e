//! Bad input gets a 4xx problem body, never a 5xx, and writes nothing.

use reqwest::Method;
use serde_json::json;

use crate::support::{Client, Db, Options, TestServer};

async fn post_raw(
    c: &Client,
    key: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> crate::support::Resp {
    let mut req = c
        .raw(Method::POST, "/v1/workers")
        .bearer_auth("alice")
        .header("idempotency-key", key)
        .body(body);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    Client::read(req.send().await.expect("send")).await
}

type BadCase = (
    &'static str,
    Option<&'static str>,
    Vec<u8>,
    u16,
    &'static str,
);

async fn bad_input_is_a_4xx_problem(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let json_ct = Some("application/json");
    // (key, content type, body, expected status, expected problem)
    let cases: Vec<BadCase> = vec![
        (
            "malformed",
            json_ct,
            b"{\"image\": ".to_vec(),
            400,
            "malformed-json",
        ),
        (
            "not-json",
            json_ct,
            b"hello".to_vec(),
            400,
            "malformed-json",
        ),
        (
            "wrong-type",
            json_ct,
            br#"{"image":"u","cpu":"two","memory_gb":4}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "fraction",
            json_ct,
            br#"{"image":"u","cpu":1.5,"memory_gb":4}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "unknown-field",
            json_ct,
            br#"{"image":"u","cpu":1,"memory_gb":4,"gpu":1}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "missing-field",
            json_ct,
            br#"{"image":"u","cpu":1}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "negative",
            json_ct,
            br#"{"image":"u","cpu":-1,"memory_gb":4}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "absurd",
            json_ct,
            br#"{"image":"u","cpu":2,"memory_gb":99999999999}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "huge-number",
            json_ct,
            br#"{"image":"u","cpu":1e400,"memory_gb":4}"#.to_vec(),
            400,
            "malformed-json",
        ),
        (
            "empty-image",
            json_ct,
            br#"{"image":"","cpu":2,"memory_gb":4}"#.to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "array",
            json_ct,
            b"[]".to_vec(),
            422,
            "invalid-request-body",
        ),
        (
            "no-content-type",
            None,
            br#"{"image":"u","cpu":1,"memory_gb":4}"#.to_vec(),
            415,
            "unsupported-media-type",
        ),
        (
            "text-plain",
            Some("text/plain"),
            br#"{"image":"u","cpu":1,"memory_gb":4}"#.to_vec(),
            415,
            "unsupported-media-type",
        ),
        (
            "too-large",
            json_ct,
            vec![b' '; 1024 * 1024 + 1],
            413,
            "payload-too-large",
        ),
    ];
    for (key, ct, body, status, problem) in cases {
        let r = post_raw(c, key, ct, body).await;
        assert_eq!(
            (r.status, r.problem().as_str()),
            (status, problem),
            "case {key}"
        );
        // A retry of the same bad request gets the same answer (4xx are permanent), never a 5xx.
        assert!(r.status < 500, "case {key}");
    }
    let unknown = c.get("alice", "wkr-nope").await;
    assert_eq!(
        (unknown.status, unknown.problem().as_str()),
        (404, "not-found")
    );
    let unknown = c.delete("alice", "wkr-nope", Some("d1")).await;
    assert_eq!(
        (unknown.status, unknown.problem().as_str()),
        (404, "not-found")
    );
    let unknown = c.reboot("alice", "wkr-nope", Some("r1")).await;
    assert_eq!(
        (unknown.status, unknown.problem().as_str()),
        (404, "not-found")
    );
    let route = c
        .send(Method::GET, "/v2/nothing", "alice", None, None)
        .await;
    assert_eq!((route.status, route.problem().as_str()), (404, "not-found"));
    let method = c
        .send(
            Method::PUT,
            "/v1/workers",
            "alice",
            Some("m"),
            Some(&json!({})),
        )
        .await;
    assert_eq!(
        (method.status, method.problem().as_str()),
        (405, "method-not-allowed")
    );
    let bad_label = c
        .send(
            Method::GET,
            "/v1/workers?label=nocolon",
            "alice",
            None,
            None,
        )
        .await;
    assert_eq!(
        (bad_label.status, bad_label.problem().as_str()),
        (422, "invalid-request-body")
    );
    let anonymous = Client::read(
        c.raw(Method::GET, "/v1/workers")
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(
        (anonymous.status, anonymous.problem().as_str()),
        (401, "unauthorized")
    );
    let stats = c.stats().await;
    for field in [
        "workers",
        "nodes_allocated",
        "leases",
        "boots",
        "pending_boots",
        "reboots",
    ] {
        assert_eq!(stats[field], 0, "{field}: {stats}");
    }
    assert_eq!(stats["idempotency_records"]["in_flight"], 0, "{stats}");
    server.stop().await;
}

/// With a tokens file, only listed tokens are accepted and map to their principals.
#[tokio::test]
async fn tokens_file_maps_principals() {
    use leasebroker::auth::Auth;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tokens.yaml");
    std::fs::write(&file, "tokens:\n  tok-a: alice\n  tok-b: bob\n").expect("write tokens");
    let auth = Auth::from_file(&file).expect("load tokens");
    assert_eq!(
        auth.principal("tok-a").map(|p| p.0),
        Some("alice".to_owned())
    );
    assert!(auth.principal("alice").is_none());
    std::fs::write(&file, "tokens:\n  tok-a: [alice]\n").expect("write tokens");
    let err = Auth::from_file(&file)
        .expect_err("a list is not a principal")
        .to_string();
    assert!(err.contains("tokens.yaml:2:"), "{err}");
}

crate::both_stores!(bad_input_is_a_4xx_problem);
