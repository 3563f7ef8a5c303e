//! The Toxiproxy-compatible API (`idemspec_proxy::toxiproxy`) over real sockets: every endpoint
//! with its status codes and error bodies, and each toxic's observable effect on a relayed
//! connection to a TCP echo upstream.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemspec_proxy::toxiproxy::ToxiproxyServer;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use rstest::rstest;
use rstest_reuse::apply;

use crate::support::*;

struct Api {
    server: ToxiproxyServer,
    http: reqwest::Client,
    echo: SocketAddr,
}

impl Api {
    async fn start() -> Self {
        Self::start_with_threads(2).await
    }

    /// A server whose proxies' connections are served on `threads` I/O threads (0: the test's
    /// runtime).
    async fn start_with_threads(threads: usize) -> Self {
        let addr = "127.0.0.1:0".parse().unwrap();
        Self {
            server: ToxiproxyServer::start_with_threads(addr, threads)
                .await
                .unwrap(),
            http: reqwest::Client::new(),
            echo: echo_upstream().await,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.addr())
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self.http.request(method.parse().unwrap(), self.url(path));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        (status, value)
    }

    /// Creates proxy `name` on a free loopback port to the echo upstream; its listen address.
    async fn proxy(&self, name: &str) -> SocketAddr {
        let body =
            json!({"name": name, "listen": "127.0.0.1:0", "upstream": self.echo.to_string()});
        let (status, proxy) = self.call("POST", "/proxies", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{proxy}");
        proxy["listen"].as_str().unwrap().parse().unwrap()
    }

    async fn toxic(&self, proxy: &str, toxic: Value) -> Value {
        let path = format!("/proxies/{proxy}/toxics");
        let (status, body) = self.call("POST", &path, Some(toxic)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

/// Toxiproxy's error body: `error` and `status`, here inside a problem document.
fn assert_error(got: &(StatusCode, Value), status: u16, error: &str) {
    assert_eq!(got.0.as_u16(), status, "{}", got.1);
    assert_eq!(got.1["status"], status, "{}", got.1);
    let message = got.1["error"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(error),
        "`{message}` should start with `{error}`"
    );
    assert_eq!(got.1["detail"], got.1["error"]);
}

/// Sends `data`, half-closes, reads to the end: what came back, the read error, and how long.
async fn round_trip(addr: SocketAddr, data: &[u8]) -> (Raw, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(data).await;
    let _ = s.shutdown().await;
    let raw = read_to_end(&mut s).await;
    (raw, started.elapsed())
}

#[tokio::test]
async fn proxies_are_created_listed_shown_updated_and_deleted() {
    let api = Api::start().await;
    let (status, version) = api.call("GET", "/version", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(version["version"], idemspec_proxy::toxiproxy::VERSION);

    let listen = api.proxy("echo").await;
    assert_eq!(round_trip(listen, b"hello").await.0.bytes, b"hello");
    let (_, shown) = api.call("GET", "/proxies/echo", None).await;
    assert_eq!(shown["name"], "echo");
    assert_eq!(shown["enabled"], true);
    assert_eq!(shown["upstream"], api.echo.to_string());
    assert_eq!(shown["listen"], listen.to_string());
    assert_eq!(shown["toxics"], json!([]));
    let (_, all) = api.call("GET", "/proxies", None).await;
    assert_eq!(all["echo"], shown);

    let dup = json!({"name": "echo", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1"});
    assert_error(
        &api.call("POST", "/proxies", Some(dup)).await,
        409,
        "proxy already exists",
    );
    let nameless = json!({"upstream": "127.0.0.1:1"});
    let got = api.call("POST", "/proxies", Some(nameless)).await;
    assert_error(&got, 400, "missing required field: name");
    let got = api
        .call("POST", "/proxies", Some(json!({"name": "x"})))
        .await;
    assert_error(&got, 400, "missing required field: upstream");
    assert_error(
        &api.call("GET", "/proxies/nope", None).await,
        404,
        "proxy not found",
    );
    let in_use = json!({"name": "b", "listen": listen.to_string(), "upstream": "127.0.0.1:1"});
    assert_error(
        &api.call("POST", "/proxies", Some(in_use)).await,
        409,
        "listen tcp",
    );

    // Disabled: the listener is closed; enabled again, on the same address.
    let (status, off) = api
        .call("POST", "/proxies/echo", Some(json!({"enabled": false})))
        .await;
    assert_eq!((status, &off["enabled"]), (StatusCode::OK, &json!(false)));
    let refused = TcpStream::connect(listen).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
    let (_, on) = api
        .call("PATCH", "/proxies/echo", Some(json!({"enabled": true})))
        .await;
    assert_eq!(
        (&on["enabled"], &on["listen"]),
        (&json!(true), &shown["listen"])
    );
    assert_eq!(round_trip(listen, b"again").await.0.bytes, b"again");

    // A new listen address restarts the proxy there; the old one is closed.
    let moved = json!({"listen": "127.0.0.1:0"});
    let (_, moved) = api.call("POST", "/proxies/echo", Some(moved)).await;
    let new_listen: SocketAddr = moved["listen"].as_str().unwrap().parse().unwrap();
    assert_ne!(new_listen, listen);
    assert_eq!(round_trip(new_listen, b"moved").await.0.bytes, b"moved");
    assert_eq!(
        TcpStream::connect(listen).await.unwrap_err().kind(),
        ErrorKind::ConnectionRefused
    );
    let listen = new_listen;

    let (status, _) = api.call("DELETE", "/proxies/echo", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_error(
        &api.call("DELETE", "/proxies/echo", None).await,
        404,
        "proxy not found",
    );
    assert_eq!(
        TcpStream::connect(listen).await.unwrap_err().kind(),
        ErrorKind::ConnectionRefused
    );
    api.server.shutdown().await;
}

#[tokio::test]
async fn populate_creates_keeps_and_replaces_and_reset_restores() {
    let api = Api::start().await;
    let upstream = api.echo.to_string();
    let body = json!([
        {"name": "a", "listen": "127.0.0.1:0", "upstream": upstream},
        {"name": "b", "listen": "127.0.0.1:0", "upstream": upstream, "enabled": false},
    ]);
    let (status, got) = api.call("POST", "/populate", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{got}");
    let proxies = got["proxies"].as_array().unwrap();
    assert_eq!(proxies.len(), 2);
    assert_eq!(
        (&proxies[0]["enabled"], &proxies[1]["enabled"]),
        (&json!(true), &json!(false))
    );
    let a_listen = proxies[0]["listen"].clone();
    // The same address and upstream: kept as it is (same port).
    let again = json!([{"name": "a", "listen": a_listen, "upstream": upstream}]);
    let (_, kept) = api.call("POST", "/populate", Some(again)).await;
    assert_eq!(kept["proxies"][0]["listen"], a_listen);

    let bad = json!([{"name": "c", "upstream": upstream}, {"upstream": upstream}]);
    let got = api.call("POST", "/populate", Some(bad)).await;
    assert_error(&got, 400, "missing required field: name at proxy 2");
    assert_eq!(
        got.1["proxies"],
        json!([]),
        "nothing is created from an invalid list"
    );
    let got = api
        .call("POST", "/populate", Some(json!({"name": "x"})))
        .await;
    assert_error(&got, 400, "bad request body");

    api.toxic(
        "a",
        json!({"type": "latency", "attributes": {"latency": 10}}),
    )
    .await;
    let (status, _) = api.call("POST", "/reset", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, all) = api.call("GET", "/proxies", None).await;
    assert_eq!(all["a"]["toxics"], json!([]), "toxics removed");
    assert_eq!(all["b"]["enabled"], true, "every proxy enabled");
    let b: SocketAddr = all["b"]["listen"].as_str().unwrap().parse().unwrap();
    assert_eq!(round_trip(b, b"b").await.0.bytes, b"b");
}

#[tokio::test]
async fn toxics_are_created_shown_updated_and_deleted_with_toxiproxy_errors() {
    let api = Api::start().await;
    api.proxy("p").await;
    let created = api
        .toxic(
            "p",
            json!({"type": "latency", "stream": "upstream", "attributes": {"latency": 5}}),
        )
        .await;
    assert_eq!(
        created,
        json!({"name": "latency_upstream", "type": "latency", "stream": "upstream",
               "toxicity": 1.0, "attributes": {"latency": 5, "jitter": 0}})
    );
    let again = json!({"type": "latency", "stream": "upstream"});
    let got = api.call("POST", "/proxies/p/toxics", Some(again)).await;
    assert_error(&got, 409, "toxic already exists");
    let got = api
        .call("POST", "/proxies/p/toxics", Some(json!({"type": "melt"})))
        .await;
    assert_error(&got, 400, "invalid toxic type");
    let sideways = json!({"type": "latency", "stream": "sideways"});
    let got = api.call("POST", "/proxies/p/toxics", Some(sideways)).await;
    assert_error(
        &got,
        400,
        "stream was invalid, can be either upstream or downstream",
    );
    let got = api
        .call(
            "POST",
            "/proxies/q/toxics",
            Some(json!({"type": "latency"})),
        )
        .await;
    assert_error(&got, 404, "proxy not found");
    let huge = json!({"type": "latency", "name": "h", "attributes": {"latency": 86_400_000}});
    let got = api.call("POST", "/proxies/p/toxics", Some(huge)).await;
    assert_error(&got, 400, "latency must be from 0 to 3600000 ms");

    let (_, shown) = api
        .call("GET", "/proxies/p/toxics/latency_upstream", None)
        .await;
    assert_eq!(shown, created);
    let (_, list) = api.call("GET", "/proxies/p/toxics", None).await;
    assert_eq!(list, json!([created]));
    let got = api.call("GET", "/proxies/p/toxics/none", None).await;
    assert_error(&got, 404, "toxic not found");

    let change = json!({"attributes": {"jitter": 2}, "toxicity": 0.5});
    let (status, updated) = api
        .call("POST", "/proxies/p/toxics/latency_upstream", Some(change))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(updated["attributes"], json!({"latency": 5, "jitter": 2}));
    assert_eq!(updated["toxicity"], 0.5);
    let got = api
        .call("PATCH", "/proxies/p/toxics/none", Some(json!({})))
        .await;
    assert_error(&got, 404, "toxic not found");

    let (status, _) = api
        .call("DELETE", "/proxies/p/toxics/latency_upstream", None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let got = api
        .call("DELETE", "/proxies/p/toxics/latency_upstream", None)
        .await;
    assert_error(&got, 404, "toxic not found");
}

#[tokio::test]
async fn garbage_gets_a_4xx_with_where_it_went_wrong() {
    let api = Api::start().await;
    let resp = api
        .http
        .post(api.url("/proxies"))
        .body("{\"name\": \"x\",\n  \"upstream\": }")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(resp.headers()["content-type"], "application/problem+json");
    let body: Value = resp.json().await.unwrap();
    let error = body["error"].as_str().unwrap();
    assert!(
        error.starts_with("bad request body") && error.contains("line 2 column"),
        "{error}"
    );
    let resp = api
        .http
        .get(api.url("/proxies"))
        .header("user-agent", "Mozilla/5.0")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_error(
        &api.call("GET", "/nowhere", None).await,
        404,
        "404 page not found",
    );
    assert_error(
        &api.call("PUT", "/proxies", None).await,
        405,
        "`/proxies` does not take PUT",
    );
    let big = "x".repeat(idemspec_proxy::toxiproxy::BODY_LIMIT + 1);
    let resp = api
        .http
        .post(api.url("/populate"))
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn simultaneous_creates_of_one_name_make_one_proxy() {
    let api = Arc::new(Api::start().await);
    for round in 0..5 {
        let name = format!("race-{round}");
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (api, barrier, name) = (api.clone(), barrier.clone(), name.clone());
                tokio::spawn(async move {
                    let body = json!({"name": name, "listen": "127.0.0.1:0", "upstream": api.echo.to_string()});
                    barrier.wait().await;
                    api.call("POST", "/proxies", Some(body)).await.0
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for t in tasks {
            statuses.push(t.await.unwrap().as_u16());
        }
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [201, 409, 409, 409, 409, 409, 409, 409],
            "round {round}"
        );
    }
}

#[tokio::test]
async fn latency_delays_each_direction_by_at_least_its_value() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    api.toxic(
        "p",
        json!({"type": "latency", "attributes": {"latency": 300, "jitter": 50}}),
    )
    .await;
    let (raw, took) = round_trip(listen, b"ping").await;
    assert_eq!(raw.bytes, b"ping");
    assert!(took >= Duration::from_millis(250), "{took:?}");
    api.toxic(
        "p",
        json!({"type": "latency", "stream": "upstream", "attributes": {"latency": 300}}),
    )
    .await;
    let (raw, took) = round_trip(listen, b"ping").await;
    assert_eq!(raw.bytes, b"ping");
    assert!(took >= Duration::from_millis(550), "both ways: {took:?}");
}

#[tokio::test]
async fn bandwidth_bounds_the_rate() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    api.toxic(
        "p",
        json!({"type": "bandwidth", "attributes": {"rate": 100}}),
    )
    .await;
    let data = pattern(50_000);
    let (raw, took) = round_trip(listen, &data).await;
    assert!(raw.bytes == data, "every byte arrives");
    // 50 KB at 100 KB/s.
    assert!(took >= Duration::from_millis(500), "{took:?}");
}

#[tokio::test]
async fn slow_close_delays_the_close() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    api.toxic(
        "p",
        json!({"type": "slow_close", "attributes": {"delay": 400}}),
    )
    .await;
    let (raw, took) = round_trip(listen, b"bye").await;
    assert_eq!((raw.bytes.as_slice(), raw.error), (b"bye".as_slice(), None));
    assert!(took >= Duration::from_millis(400), "{took:?}");
}

#[tokio::test]
async fn timeout_drops_data_and_closes_after_its_time_or_holds_at_zero() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    api.toxic(
        "p",
        json!({"type": "timeout", "name": "t", "attributes": {"timeout": 300}}),
    )
    .await;
    let started = Instant::now();
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"lost").await.unwrap();
    let raw = read_to_end(&mut s).await;
    assert!(raw.bytes.is_empty(), "no data passes");
    assert!(started.elapsed() >= Duration::from_millis(300));

    api.call(
        "POST",
        "/proxies/p/toxics/t",
        Some(json!({"attributes": {"timeout": 0}})),
    )
    .await;
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"held").await.unwrap();
    let mut buf = [0u8; 16];
    let held = tokio::time::timeout(Duration::from_millis(600), s.read(&mut buf)).await;
    assert!(held.is_err(), "held open with nothing delivered: {held:?}");
    // Removing the toxic lets the connection's next bytes through.
    api.call("DELETE", "/proxies/p/toxics/t", None).await;
    s.write_all(b"free").await.unwrap();
    let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"free");
}

#[tokio::test]
async fn reset_peer_resets_the_connection() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    api.toxic(
        "p",
        json!({"type": "reset_peer", "attributes": {"timeout": 100}}),
    )
    .await;
    for _ in 0..3 {
        let mut s = TcpStream::connect(listen).await.unwrap();
        s.write_all(b"boom").await.unwrap();
        let raw = read_to_end(&mut s).await;
        assert!(raw.bytes.is_empty());
        assert_eq!(raw.error, Some(ErrorKind::ConnectionReset));
    }
}

#[tokio::test]
async fn slicer_delivers_every_byte_in_pieces() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    let slicer = json!({"type": "slicer", "attributes": {"average_size": 64, "size_variation": 16, "delay": 2000}});
    api.toxic("p", slicer).await;
    let data = pattern(4096);
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(&data).await.unwrap();
    s.shutdown().await.unwrap();
    let (mut got, mut reads) = (Vec::new(), 0);
    let mut buf = [0u8; 8192];
    loop {
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        if n == 0 {
            break;
        }
        reads += 1;
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got == data, "all {} bytes, in order", data.len());
    assert!(reads >= 8, "delivered in pieces: {reads} reads");
}

#[tokio::test]
async fn limit_data_closes_after_its_bytes_in_its_stream() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    api.toxic(
        "p",
        json!({"type": "limit_data", "name": "l", "attributes": {"bytes": 1000}}),
    )
    .await;
    let data = pattern(5000);
    let (raw, _) = round_trip(listen, &data).await;
    assert!(
        raw.bytes == data[..1000],
        "exactly 1000 bytes: {}",
        raw.bytes.len()
    );
    api.call("DELETE", "/proxies/p/toxics/l", None).await;
    let upstream = json!({"type": "limit_data", "stream": "upstream", "attributes": {"bytes": 10}});
    api.toxic("p", upstream).await;
    let (raw, _) = round_trip(listen, &data).await;
    assert!(
        raw.bytes.len() <= 10,
        "only 10 bytes reached the echo: {}",
        raw.bytes.len()
    );
    assert!(raw.bytes == data[..raw.bytes.len()]);
}

#[tokio::test]
async fn toxicity_zero_never_applies_and_one_always_does() {
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    let never =
        json!({"type": "limit_data", "name": "never", "toxicity": 0.0, "attributes": {"bytes": 0}});
    api.toxic("p", never).await;
    let data = pattern(3000);
    for _ in 0..20 {
        assert!(round_trip(listen, &data).await.0.bytes == data);
    }
    let always = json!({"attributes": {"bytes": 0}, "toxicity": 1.0});
    api.call("POST", "/proxies/p/toxics/never", Some(always))
        .await;
    for _ in 0..5 {
        assert!(round_trip(listen, &data).await.0.bytes.is_empty());
    }
}

impl Api {
    /// The events of the proxies' connections, once `n` are recorded.
    async fn events(&self, n: usize) -> Vec<idemspec_proxy::ProxyEvent> {
        eventually("the events", || self.server.events_since(0).len() >= n).await;
        self.server.events_since(0)
    }
}

#[apply(both_runtimes)]
async fn each_connection_is_one_event_of_the_tcp_relay(threads: usize) {
    let api = Api::start_with_threads(threads).await;
    let listen = api.proxy("p").await;
    assert_eq!(round_trip(listen, b"hello").await.0.bytes, b"hello");
    let plain = api.events(1).await.remove(0);
    assert_eq!(plain.proxy.as_deref(), Some("p"));
    assert_eq!((plain.rule, plain.fault), (None, None), "no toxic acted");
    assert_eq!(plain.upstream_sends, 1, "the upstream was connected");
    assert_eq!(plain.client_bytes, 5);
    assert!(plain.client_complete && plain.error_side.is_none());

    api.toxic(
        "p",
        json!({"type": "latency", "attributes": {"latency": 200}}),
    )
    .await;
    let (raw, took) = round_trip(listen, b"slow").await;
    assert_eq!(raw.bytes, b"slow");
    assert!(took >= Duration::from_millis(200), "{took:?}");
    let slowed = api.events(2).await.remove(1);
    assert_eq!(slowed.rule.as_deref(), Some("latency_downstream"));
    assert_eq!(slowed.fault.as_deref(), Some("latency"));
    assert!(slowed.duration_ms >= 200, "{}", slowed.duration_ms);
    assert!(slowed.client_complete);
    // The same events over HTTP, after a cursor.
    let (status, listed) = api.call("GET", "/events?since=1", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["proxy"], "p");
    assert_eq!(listed[0]["fault"], "latency");
    let bad = api.call("GET", "/events?since=x", None).await;
    assert_eq!(bad.0, StatusCode::BAD_REQUEST, "{}", bad.1);

    api.call("DELETE", "/proxies/p/toxics/latency_downstream", None)
        .await;
    api.toxic("p", json!({"type": "reset_peer", "stream": "upstream"}))
        .await;
    let (raw, _) = round_trip(listen, b"boom").await;
    assert_eq!(raw.error, Some(ErrorKind::ConnectionReset));
    let reset = api.events(3).await.remove(2);
    assert_eq!(reset.fault.as_deref(), Some("reset_peer"));
    assert_eq!(reset.client_bytes, 0);
    assert!(!reset.client_complete);
    api.server.shutdown().await;
}

/// `GET /metrics` on the API's port counts the proxies' connections from their events: by
/// outcome, the toxic that acted (rule = its name, verb = its type), and unreachable upstreams.
#[tokio::test]
async fn metrics_count_each_connection_its_toxic_and_upstream_errors() {
    use crate::metrics::{counter, scrape};
    let api = Api::start().await;
    let listen = api.proxy("p").await;
    let url = api.url("/metrics");
    let empty = scrape(&url).await;
    assert_eq!(counter(&empty, "idemspec_proxy_requests_total", &[]), 0.0);
    assert_eq!(round_trip(listen, b"hello").await.0.bytes, b"hello");
    api.toxic("p", json!({"type": "reset_peer", "stream": "upstream"}))
        .await;
    let (raw, _) = round_trip(listen, b"boom").await;
    assert_eq!(raw.error, Some(ErrorKind::ConnectionReset));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = closed.local_addr().unwrap().to_string();
    drop(closed);
    let body = json!({"name": "down", "listen": "127.0.0.1:0", "upstream": upstream});
    let (_, down) = api.call("POST", "/proxies", Some(body)).await;
    let down: SocketAddr = down["listen"].as_str().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(down).await.unwrap();
    let _ = read_to_end(&mut s).await;
    let events = api.events(3).await;
    let scraped = scrape(&url).await;
    let requests = "idemspec_proxy_requests_total";
    assert_eq!(counter(&scraped, requests, &[]), 3.0, "{events:#?}");
    assert_eq!(
        counter(&scraped, requests, &[("outcome", "complete")]),
        1.0,
        "{events:#?}"
    );
    assert_eq!(
        counter(
            &scraped,
            "idemspec_proxy_faults_total",
            &[("rule", "reset_peer_upstream"), ("verb", "reset_peer")]
        ),
        1.0
    );
    assert_eq!(counter(&scraped, "idemspec_proxy_faults_total", &[]), 1.0);
    assert_eq!(
        counter(&scraped, "idemspec_proxy_upstream_errors_total", &[]),
        1.0
    );
    api.server.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_upstream_is_an_upstream_error_event_and_a_reset() {
    let api = Api::start().await;
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = closed.local_addr().unwrap().to_string();
    drop(closed);
    let body = json!({"name": "down", "listen": "127.0.0.1:0", "upstream": upstream});
    let (_, proxy) = api.call("POST", "/proxies", Some(body)).await;
    let listen: SocketAddr = proxy["listen"].as_str().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(listen).await.unwrap();
    let raw = read_to_end(&mut s).await;
    assert_eq!(raw.error, Some(ErrorKind::ConnectionReset));
    let event = api.events(1).await.remove(0);
    assert_eq!(event.proxy.as_deref(), Some("down"));
    assert_eq!(event.upstream_sends, 0);
    assert_eq!(event.error_side, Some(idemspec_proxy::Side::Upstream));
    let error = event.upstream_error.unwrap_or_default();
    assert!(error.contains(&upstream), "{error}");
}

#[tokio::test]
async fn disabling_deleting_or_a_new_upstream_closes_open_connections_and_records_them() {
    let api = Api::start().await;
    let other = echo_upstream().await.to_string();
    let changes = [
        ("POST", json!({"enabled": false})),
        ("PATCH", json!({"upstream": other})),
        ("DELETE", Value::Null),
    ];
    for (round, (method, body)) in changes.into_iter().enumerate() {
        let listen = api.proxy("p").await;
        let mut open = TcpStream::connect(listen).await.unwrap();
        open.write_all(b"abc").await.unwrap();
        let mut three = [0u8; 3];
        open.read_exact(&mut three).await.unwrap();
        let body = (!body.is_null()).then_some(body);
        let (status, _) = api.call(method, "/proxies/p", body).await;
        assert!(status.is_success(), "{method}: {status}");
        // Recorded by the time the call returned.
        let events = api.server.events_since(round as u64);
        assert_eq!(events.len(), 1, "{method}: {events:?}");
        assert_eq!(events[0].client_bytes, 3, "{method}");
        assert!(!events[0].client_complete, "{method}: cut, not finished");
        let rest = read_to_end(&mut open).await;
        assert!(
            rest.bytes.is_empty() && rest.error.is_none(),
            "{method}: {rest:?}"
        );
        if method != "DELETE" {
            api.call("DELETE", "/proxies/p", None).await;
        }
    }
}

#[tokio::test]
async fn requests_hyper_rejects_get_a_4xx_problem_body() {
    let api = Api::start().await;
    let oversized = format!(
        "GET /proxies HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    for (garbage, status) in [
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (b"GET /version HTTP/1.1\r\nbad header\r\n\r\n".to_vec(), 400),
        (oversized.into_bytes(), 431),
    ] {
        let got = raw(api.server.addr(), &garbage).await;
        let text = got.text();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(
            head.contains("content-type: application/problem+json"),
            "{head}"
        );
        let doc: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(doc["status"], status, "{doc}");
        assert!(
            doc["detail"].as_str().unwrap().contains("could not parse"),
            "{doc}"
        );
    }
}

#[tokio::test]
async fn malformed_json_gets_toxiproxys_error_shape_with_400_on_every_body_route() {
    let api = Api::start().await;
    api.proxy("p").await;
    api.toxic("p", json!({"type": "latency", "name": "l"}))
        .await;
    for path in [
        "/proxies",
        "/populate",
        "/proxies/p",
        "/proxies/p/toxics",
        "/proxies/p/toxics/l",
    ] {
        let resp = api
            .http
            .post(api.url(path))
            .body("{\"oops\": ")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{path}");
        let body: Value = resp.json().await.unwrap();
        // Toxiproxy's shape: {"error": MESSAGE, "status": 400}.
        assert_eq!(body["status"], 400, "{path}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("bad request body"), "{path}: {error}");
    }
}

#[tokio::test]
async fn a_request_head_slower_than_toxiproxys_read_timeout_gets_408() {
    let api = Api::start().await;
    let started = Instant::now();
    let got = raw(api.server.addr(), b"GET /version HTTP/1.1\r\nhost: x\r\n").await;
    let took = started.elapsed();
    let timeout = idemspec_proxy::toxiproxy::HEADER_READ_TIMEOUT;
    assert!(took >= timeout, "{took:?}");
    assert!(took < timeout + Duration::from_secs(3), "{took:?}");
    let text = got.text();
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
}

/// An error response changes nothing: a PATCH to an address in use leaves the proxy running where
/// it was, relaying, with its toxics; `/reset` with one proxy that cannot listen still resets
/// every other proxy's toxics and starts them, and names the one that stays disabled.
#[tokio::test]
async fn a_refused_update_changes_nothing_and_reset_does_not_stop_half_way() {
    let api = Api::start().await;
    let a = api.proxy("a").await;
    let b = api.proxy("b").await;
    api.toxic(
        "a",
        json!({"name": "slow", "type": "latency", "attributes": {"latency": 1}}),
    )
    .await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let refused = api
        .call("PATCH", "/proxies/a", Some(json!({"listen": taken_addr})))
        .await;
    assert_error(&refused, 409, "listen tcp");
    let (_, shown) = api.call("GET", "/proxies/a", None).await;
    assert_eq!(shown["listen"], a.to_string(), "{shown}");
    assert_eq!(shown["enabled"], true, "{shown}");
    assert_eq!(shown["toxics"].as_array().map(Vec::len), Some(1), "{shown}");
    let (raw, _) = round_trip(a, b"still here").await;
    assert_eq!(raw.bytes, b"still here");

    // Disable `b`, take its address, and reset: `a` loses its toxic and runs; `b` is named.
    let (status, _) = api
        .call("POST", "/proxies/b", Some(json!({"enabled": false})))
        .await;
    assert_eq!(status, StatusCode::OK);
    let squatter = std::net::TcpListener::bind(b).unwrap();
    api.toxic(
        "a",
        json!({"name": "slow2", "type": "latency", "attributes": {"latency": 1}}),
    )
    .await;
    let reset = api.call("POST", "/reset", None).await;
    assert_error(
        &reset,
        409,
        "every toxic was removed, but these proxies stay disabled: b:",
    );
    let (_, shown) = api.call("GET", "/proxies/a", None).await;
    assert_eq!(shown["toxics"], json!([]), "{shown}");
    assert_eq!(shown["enabled"], true, "{shown}");
    drop(squatter);

    // A populate that would move `a` to the taken address leaves it where it was, with its
    // toxics, as the refused PATCH did.
    api.toxic(
        "a",
        json!({"name": "kept", "type": "latency", "attributes": {"latency": 1}}),
    )
    .await;
    let refused = api
        .call(
            "POST",
            "/populate",
            Some(json!([{"name": "a", "listen": taken_addr, "upstream": api.echo.to_string()}])),
        )
        .await;
    assert_eq!(refused.0.as_u16(), 409, "{}", refused.1);
    let (_, shown) = api.call("GET", "/proxies/a", None).await;
    assert_eq!(shown["listen"], a.to_string(), "{shown}");
    assert_eq!(shown["toxics"].as_array().map(Vec::len), Some(1), "{shown}");
    let (raw, _) = round_trip(a, b"populated").await;
    assert_eq!(raw.bytes, b"populated");
    drop(taken);
}

/// Names and upstreams that could never work are refused when given, with what is wrong: a name
/// is a path segment of the API (`/`, NUL and `..` cannot be addressed), an upstream is
/// `host:port` with a port of 1 to 65535; an attribute out of range names the attribute.
#[tokio::test]
async fn unusable_names_upstreams_and_attributes_are_refused_by_name() {
    let api = Api::start().await;
    let echo = api.echo.to_string();
    for name in ["../etc", "a/b", "nul\u{0}name", ".."] {
        let got = api
            .call(
                "POST",
                "/proxies",
                Some(json!({"name": name, "listen": "127.0.0.1:0", "upstream": echo})),
            )
            .await;
        assert_error(&got, 400, "bad request body: name");
    }
    for upstream in [
        "127.0.0.1:99999",
        "nohost",
        ":8080",
        "127.0.0.1:0",
        "::1:80",
        "[::1:80",
        "[zz]:80",
        "http://127.0.0.1:80",
        "127.0.0.1:+80",
        " 127.0.0.1:80",
        "127.0.0.1:80/x",
    ] {
        let got = api
            .call(
                "POST",
                "/proxies",
                Some(json!({"name": "u", "listen": "127.0.0.1:0", "upstream": upstream})),
            )
            .await;
        assert_error(&got, 400, "bad request body: upstream");
    }
    for (name, upstream) in [
        ("v6", "[::1]:80"),
        ("named", "db.internal-1:5432"),
        ("zeros", "127.0.0.1:0080"),
    ] {
        let (status, body) = api
            .call(
                "POST",
                "/proxies",
                Some(json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{upstream}: {body}");
    }
    api.proxy("ok").await;
    let got = api
        .call(
            "PATCH",
            "/proxies/ok",
            Some(json!({"upstream": "127.0.0.1:99999"})),
        )
        .await;
    assert_error(&got, 400, "bad request body: upstream");
    let got = api
        .call(
            "POST",
            "/proxies/ok/toxics",
            Some(json!({"name": "t", "type": "latency", "attributes": {"latency": 1e300}})),
        )
        .await;
    assert_error(&got, 400, "bad request body: attributes.latency");
    // One past u64::MAX, as a client would send it (serde_json's `json!` cannot write it).
    let resp = api
        .http
        .post(api.url("/proxies/ok/toxics"))
        .body(r#"{"name": "t", "type": "latency", "attributes": {"jitter": 18446744073709551616}}"#)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let got = (status, resp.json::<Value>().await.unwrap());
    assert_error(&got, 400, "bad request body: attributes.jitter");
}
