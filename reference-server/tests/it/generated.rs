//! Generated requests over raw sockets against a real server (proptest, a bounded number of cases;
//! `PROPTEST_CASES` raises it): keys bare, quoted, over-long or full of stray bytes; bodies valid,
//! mutated or random; tokens, content types and targets of every kind, some naming workers created
//! earlier in the run. Whatever is sent, the answer comes (no hang) and is a 2xx or a 4xx with a
//! problem body, never a 5xx; afterwards the records and the fleet agree: nothing in flight or
//! failed, no boot pending, one node and one lease per live worker, one boot per worker ever made.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::json;

use crate::support::raw::{exchange, parse_responses};
use crate::support::{Db, Options, Resp, TestServer};

/// Cases per store unless `PROPTEST_CASES` says otherwise.
const CASES: u32 = 300;

/// The generator's seed unless `PROPTEST_RNG_SEED` says otherwise: CI runs the same cases every time,
/// and a longer or different run is one variable away.
const SEED: u64 = 0x1de5_9ec0;

/// A worker id: one created earlier in the run (by index, modulo how many there are), or made up.
#[derive(Debug, Clone)]
enum WorkerRef {
    Created(usize),
    Made(String),
}

/// The request target.
#[derive(Debug, Clone)]
enum Target {
    Workers,
    Worker(WorkerRef),
    Reboot(WorkerRef),
    Labelled(String),
    Other(String),
}

/// One generated request; sent with a correct `Content-Length` and `connection: close`.
#[derive(Clone)]
struct Generated {
    method: &'static str,
    target: Target,
    auth: Option<Vec<u8>>,
    key: Option<Vec<u8>>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

impl Generated {
    fn path(&self, created: &[String]) -> String {
        let id = |r: &WorkerRef| match (r, created.len()) {
            (WorkerRef::Created(n), len) if len > 0 => created[n % len].clone(),
            (WorkerRef::Created(_), _) => "wkr-none".to_owned(),
            (WorkerRef::Made(id), _) => id.clone(),
        };
        match &self.target {
            Target::Workers => "/v1/workers".to_owned(),
            Target::Worker(r) => format!("/v1/workers/{}", id(r)),
            Target::Reboot(r) => format!("/v1/workers/{}/reboot", id(r)),
            Target::Labelled(query) => format!("/v1/workers?label={query}"),
            Target::Other(path) => format!("/{path}"),
        }
    }

    fn bytes(&self, created: &[String]) -> Vec<u8> {
        let mut out = format!(
            "{} {} HTTP/1.1\r\nhost: lb\r\nconnection: close\r\n",
            self.method,
            self.path(created)
        )
        .into_bytes();
        let mut header = |name: &str, value: &[u8]| {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        };
        if let Some(auth) = &self.auth {
            header("authorization", auth);
        }
        if let Some(key) = &self.key {
            header("idempotency-key", key);
        }
        if let Some(ct) = self.content_type {
            header("content-type", ct.as_bytes());
        }
        header("content-length", self.body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Shows the bytes as escaped text, so a shrunk failing case reads as the request it is.
impl std::fmt::Debug for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |b: &Option<Vec<u8>>| b.as_ref().map(|b| b.escape_ascii().to_string());
        f.debug_struct("Generated")
            .field("method", &self.method)
            .field("target", &self.target)
            .field("auth", &text(&self.auth))
            .field("key", &text(&self.key))
            .field("content_type", &self.content_type)
            .field("body", &self.body.escape_ascii().to_string())
            .finish()
    }
}

/// Header-value bytes: no CR or LF (they would end the header line, which is another test).
fn value_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
        0..max,
    )
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // A few shared keys, so replays, mismatches and conflicts happen.
        4 => "k[1-6]".prop_map(String::into_bytes),
        4 => "[!-~&&[^\"]][!-~]{0,39}".prop_map(String::into_bytes),
        2 => "[ -~]{0,30}".prop_map(|k| {
            format!("\"{}\"", k.replace('\\', "\\\\").replace('"', "\\\""))
                .into_bytes()
        }),
        1 => "\"[ -~]{0,30}".prop_map(String::into_bytes),
        1 => "[!-~]{250,260}".prop_map(String::into_bytes),
        1 => value_bytes(40),
    ]
}

fn auth() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        6 => Just(Some(b"Bearer alice".to_vec())),
        2 => Just(Some(b"Bearer bob".to_vec())),
        1 => Just(None),
        1 => "(Bearer |Basic |bearer )?[!-~]{0,40}".prop_map(|t| Some(t.into_bytes())),
        1 => value_bytes(40).prop_map(Some),
    ]
}

fn worker_ref() -> impl Strategy<Value = WorkerRef> {
    prop_oneof![
        4 => any::<usize>().prop_map(WorkerRef::Created),
        1 => "wkr-[0-9a-f]{24}".prop_map(WorkerRef::Made),
        1 => "[A-Za-z0-9%._~-]{1,30}".prop_map(WorkerRef::Made),
    ]
}

/// A create body: valid (most often), with odd values, mutated, or any bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let valid = (
        "[a-z0-9.-]{1,20}",
        1_i64..=64,
        1_i64..=1024,
        proptest::collection::btree_map("[a-z]{1,10}", "[ -~]{0,12}", 0..3),
    )
        .prop_map(|(image, cpu, memory_gb, labels)| {
            json!({"image": image, "cpu": cpu, "memory_gb": memory_gb, "labels": labels})
        });
    let odd = (
        "\\PC{0,300}",
        any::<i64>(),
        any::<i64>(),
        proptest::collection::btree_map("\\PC{0,70}", "\\PC{0,300}", 0..70),
    )
        .prop_map(|(image, cpu, memory_gb, labels)| {
            json!({"image": image, "cpu": cpu, "memory_gb": memory_gb, "labels": labels})
        });
    let bytes = |v: serde_json::Value| serde_json::to_vec(&v).expect("serialise");
    prop_oneof![
        6 => valid.clone().prop_map(bytes),
        1 => odd.prop_map(bytes),
        1 => (valid.clone(), any::<prop::sample::Index>()).prop_map(move |(v, at)| {
            let b = bytes(v);
            b[..at.index(b.len())].to_vec()
        }),
        1 => (valid, any::<prop::sample::Index>(), any::<u8>()).prop_map(move |(v, at, byte)| {
            let mut b = bytes(v);
            let at = at.index(b.len());
            b[at] = byte;
            b
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..200),
    ]
}

/// The method and target: mostly the API's operations, sometimes anything.
fn operation() -> impl Strategy<Value = (&'static str, Target)> {
    let method = prop_oneof![
        Just("POST"),
        Just("DELETE"),
        Just("GET"),
        Just("PUT"),
        Just("PATCH"),
    ];
    let target = prop_oneof![
        Just(Target::Workers),
        worker_ref().prop_map(Target::Worker),
        worker_ref().prop_map(Target::Reboot),
        "[A-Za-z0-9%:._~-]{0,20}".prop_map(Target::Labelled),
        "[!-~&&[^?#]]{0,30}".prop_map(Target::Other),
    ];
    prop_oneof![
        8 => Just(("POST", Target::Workers)),
        3 => worker_ref().prop_map(|r| ("DELETE", Target::Worker(r))),
        3 => worker_ref().prop_map(|r| ("POST", Target::Reboot(r))),
        1 => worker_ref().prop_map(|r| ("GET", Target::Worker(r))),
        1 => Just(("GET", Target::Workers)),
        1 => (method, target),
    ]
}

fn generated() -> impl Strategy<Value = Generated> {
    let content_type = prop_oneof![
        8 => Just(Some("application/json")),
        1 => Just(Some("application/merge-patch+json; charset=utf-8")),
        1 => Just(Some("text/plain")),
        1 => Just(None),
    ];
    let body = prop_oneof![3 => body(), 1 => Just(Vec::new())];
    (
        operation(),
        auth(),
        prop::option::weighted(0.9, key()),
        content_type,
        body,
    )
        .prop_map(
            |((method, target), auth, key, content_type, body)| Generated {
                method,
                target,
                auth,
                key,
                content_type,
                body,
            },
        )
}

/// Judges one answer: a 2xx, or a 4xx with a problem body whose `status` repeats it; never a 5xx.
fn judge(r: &Resp) -> Result<(), TestCaseError> {
    prop_assert!(
        r.status < 500,
        "a {}: {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    if r.status >= 400 {
        let content_type = r.header("content-type");
        prop_assert_eq!(
            content_type.as_deref(),
            Some("application/problem+json"),
            "a {} without a problem body: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
        let problem: serde_json::Value = serde_json::from_slice(&r.body)
            .map_err(|e| TestCaseError::fail(format!("problem body is not JSON: {e}")))?;
        prop_assert!(problem["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("https://idemspec.dev/problems/")));
        prop_assert_eq!(&problem["status"], &json!(r.status));
    }
    Ok(())
}

fn generated_requests(db: &Db, rt: &tokio::runtime::Runtime) {
    // Config::default() reads PROPTEST_CASES and PROPTEST_RNG_SEED; without them, CASES and SEED.
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = CASES;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(SEED);
    }
    // A node for every case: an exhausted pool is a documented 503, not what this test is after.
    let opts = Options {
        boot_latency: std::time::Duration::ZERO,
        pool_size: i64::from(config.cases) + 10,
        ..Options::default()
    };
    let server = rt.block_on(TestServer::start(db, opts));
    let created = RefCell::new(Vec::<String>::new());
    let seen = RefCell::new(BTreeSet::<String>::new());
    let statuses = RefCell::new(BTreeMap::<u16, usize>::new());
    let mut runner = TestRunner::new(config);
    let outcome = runner.run(&generated(), |req| {
        let bytes = req.bytes(&created.borrow());
        let read = rt
            .block_on(exchange(server.addr(), &bytes))
            .map_err(|e| TestCaseError::fail(format!("no answer: {e}")))?;
        let r = match parse_responses(&read, &[req.method]).map_err(TestCaseError::fail)?[..] {
            [ref one] => one.clone(),
            ref other => return Err(TestCaseError::fail(format!("{} responses", other.len()))),
        };
        *statuses.borrow_mut().entry(r.status).or_default() += 1;
        judge(&r)?;
        if r.status == 201 {
            let id = r.id();
            let new = seen.borrow_mut().insert(id.clone());
            prop_assert!(new || r.replayed(), "a second original 201 for {id}");
            if new {
                created.borrow_mut().push(id);
            }
        }
        Ok(())
    });
    if let Err(err) = outcome {
        panic!("{err}");
    }
    // What the cases reached, for the record (RELIABILITY.md quotes it).
    eprintln!("answers by status: {:?}", statuses.borrow());
    let stats = rt.block_on(server.client.stats());
    let live = stats["workers"].as_i64().expect("workers");
    for field in ["nodes_allocated", "leases"] {
        assert_eq!(stats[field], live, "{field}: {stats}");
    }
    assert_eq!(stats["boots"], seen.borrow().len(), "{stats}");
    assert_eq!(stats["pending_boots"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["in_flight"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["failed"], 0, "{stats}");
    rt.block_on(server.stop());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn generated_requests_sqlite() {
    generated_requests(&Db::sqlite(), &runtime());
}

#[test]
fn generated_requests_postgres() {
    let rt = runtime();
    let Some(db) = rt.block_on(Db::postgres()) else {
        return;
    };
    generated_requests(&db, &rt);
    rt.block_on(db.drop_database());
}
