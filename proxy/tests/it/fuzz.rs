//! The control API under generated rule JSON (proptest, a bounded number of cases; set
//! `PROPTEST_CASES` for a longer run): it never fails, never hangs, and every rejection is a
//! 400 problem that says where (a JSON pointer); what it accepts, it lists and accepts again.
//! `proxy/fuzz/` has a cargo-fuzz target for open-ended runs.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use idemspec_proxy::ProxyHandle;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

use crate::support::*;

/// One proxy with a control API for every case, on a runtime of its own.
struct Fixture {
    rt: tokio::runtime::Runtime,
    control: String,
    client: reqwest::Client,
    _proxy: ProxyHandle,
    _upstream: Upstream,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (proxy, upstream) = rt.block_on(proxied_with(with_control()));
        Fixture {
            control: format!("{}/rules", control_url(&proxy)),
            client: http(),
            rt,
            _proxy: proxy,
            _upstream: upstream,
        }
    })
}

/// Strings the schema treats specially, and some it must refuse.
const STRINGS: &[&str] = &[
    "",
    " ",
    "a\nb",
    "a\tb",
    "r",
    "refuse",
    "respond",
    "hang",
    "duplicate",
    "delay_request",
    "250ms",
    "0s",
    "1s 500ms",
    "250",
    "-1s",
    "/v1/workers",
    "v1",
    "/a/[",
    "/v1/**/x",
    "POST",
    "po st",
    "x-idemspec-step",
    "bad header",
    "application/json",
    "text/plain\r\nx-injected: 1",
    "concurrent",
    "sequential",
    "both",
    "upstream",
    "📦",
];

/// Field names of the rule schema (so generated objects are often nearly right), and strays.
const KEYS: &[&str] = &[
    "name",
    "match",
    "fault",
    "times",
    "method",
    "path",
    "path_prefix",
    "path_glob",
    "header",
    "equals",
    "idempotency_key",
    "nth",
    "probability",
    "seed",
    "reset",
    "status",
    "body",
    "content_type",
    "duration",
    "after_bytes",
    "forward",
    "mode",
    "bogus",
];

const VERBS: &[&str] = &[
    "refuse",
    "respond",
    "delay_request",
    "delay_response",
    "drop_response",
    "reset_mid_response",
    "hang",
    "duplicate",
    "explode",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop::sample::select(vec![0i64, 1, 2, 3, 101, 200, 204, 502, 599, 600, 65536, -1])
            .prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![0.0, 0.5, 1.0, 1.5, -0.25, 1e308]).prop_map(Value::from),
        prop::sample::select(STRINGS).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KEYS).prop_map(str::to_owned),
        1 => "[a-z_]{1,8}",
    ]
}

/// Any JSON value, nested a few levels, with keys mostly from the schema.
fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A fault: a bare verb, or a verb with options (often the right ones).
fn fault() -> impl Strategy<Value = Value> {
    let options = prop::collection::btree_map(key(), scalar(), 0..3)
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()));
    prop_oneof![
        prop::sample::select(VERBS).prop_map(Value::from),
        (prop::sample::select(VERBS), options).prop_map(|(verb, opts)| json!({ verb: opts })),
        value(),
    ]
}

/// A rule-shaped object: each field present or not, with near-miss values.
fn rule() -> impl Strategy<Value = Value> {
    let field = |s: BoxedStrategy<Value>| prop::option::weighted(0.8, s);
    (
        field(scalar().boxed()),
        field(
            prop::collection::btree_map(key(), prop_oneof![scalar(), value()], 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
                .boxed(),
        ),
        field(fault().boxed()),
        prop::option::weighted(0.2, scalar()),
        prop::option::weighted(0.1, (key(), scalar())),
    )
        .prop_map(|(name, matcher, fault, times, extra)| {
            let mut rule = Map::new();
            for (k, v) in [
                ("name", name),
                ("match", matcher),
                ("fault", fault),
                ("times", times),
            ] {
                if let Some(v) = v {
                    rule.insert(k.to_owned(), v);
                }
            }
            if let Some((k, v)) = extra {
                rule.insert(k, v);
            }
            Value::Object(rule)
        })
}

/// A request body: a rule list, one rule, any JSON, or bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(rule(), 0..4).prop_map(|r| Value::from(r).to_string().into_bytes()),
        2 => rule().prop_map(|r| r.to_string().into_bytes()),
        1 => value().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// What a case saw: the status, and the body as JSON.
async fn send(req: reqwest::RequestBuilder) -> (u16, Option<String>, Value) {
    let resp = req.send().await.expect("the control API answers in time");
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp.bytes().await.expect("a whole body");
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, ctype, json)
}

/// A 400 problem that says where: a JSON pointer into the body.
fn assert_located(method: &str, body: &[u8], ctype: Option<String>, problem: &Value) {
    let shown = String::from_utf8_lossy(body);
    assert_eq!(
        ctype.as_deref(),
        Some("application/problem+json"),
        "{method} {shown}"
    );
    assert_eq!(problem["status"], 400, "{method} {shown}: {problem}");
    assert!(
        problem["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "{method} {shown}: {problem}"
    );
    assert!(
        problem["pointer"]
            .as_str()
            .is_some_and(|p| p.is_empty() || p.starts_with('/')),
        "{method} {shown}: no location: {problem}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn generated_rule_json_is_accepted_whole_or_refused_with_a_location(body in body()) {
        let f = fixture();
        let started = Instant::now();
        f.rt.block_on(async {
            for method in ["PUT", "POST"] {
                let req = match method {
                    "PUT" => f.client.put(&f.control),
                    _ => f.client.post(&f.control),
                };
                let (status, ctype, answer) = send(req.body(body.clone())).await;
                match status {
                    200 => {
                        // What is accepted is listed, and accepted again as listed.
                        let (_, _, listed) = send(f.client.get(&f.control)).await;
                        assert_eq!(listed, answer);
                        let again = f.client.put(&f.control).json(&listed);
                        let (status, _, relisted) = send(again).await;
                        assert_eq!(status, 200, "{listed}: {relisted}");
                        assert_eq!(relisted, listed);
                    }
                    400 => assert_located(method, &body, ctype, &answer),
                    other => panic!("{method} {}: {other} {answer}", String::from_utf8_lossy(&body)),
                }
            }
            // The next case starts from no rules (POST appends).
            let (status, _, _) = send(f.client.delete(&f.control)).await;
            assert_eq!(status, 204);
        });
        prop_assert!(started.elapsed() < Duration::from_secs(5), "a case took {:?}", started.elapsed());
    }
}
