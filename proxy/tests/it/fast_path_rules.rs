//! Hostile tests of the fast path's "no rule can apply" judgement (`RuleSet::may_apply` over the
//! `httparse` head) against hyper's path's selection (`RuleSet::select` over hyper's `Parts`).
//!
//! Each test runs the same raw requests through two proxies in front of the same upstream: one
//! with the rules under test (requests no rule fits stay on the fast path), and one with the same
//! rules followed by [`HYPER_PATH_RULE`] (every request goes through hyper's path; that rule comes
//! last, so it never changes which rule applies). The two must answer every request the same way
//! and log the same rule for it, and their counters (`nth`, `probability` draws, `times`) must move
//! the same. The upstream sends a `103` before every answer: only the fast path forwards interim
//! heads, so a client can tell which path served a request.

use std::net::SocketAddr;

use idemspec_proxy::{start, ProxyConfig, ProxyEvent, ProxyHandle};
use idemspec_scenarios::rules::Rule;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::support::*;

/// An upstream that answers each request (head, then its `Content-Length` body) with a `103`
/// interim head, then `200` whose body is the request-target as received (none for `HEAD`).
async fn hinting_upstream() -> SocketAddr {
    let (addr, _) = answering(|got| {
        let target = got.target();
        let body = if got.method() == "HEAD" { "" } else { target };
        let answer = format!(
            "HTTP/1.1 103 Early Hints\r\nlink: </h>\r\n\r\n\
             HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
            target.len()
        );
        Some(answer.into_bytes())
    })
    .await;
    addr
}

/// One final response as a client read it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: u16,
    /// A `103` came before it: the fast path served the request.
    hinted: bool,
    body: Vec<u8>,
}

/// Reads the next final response (and the interim heads before it); `None`: the connection
/// ended first. Not bounded itself: callers wrap it in a timeout.
async fn read_answer(s: &mut TcpStream, pending: &mut Vec<u8>, head: bool) -> Option<Answer> {
    let mut hinted = false;
    loop {
        let (got, body) = response_within(s, pending, head, Chunks::Decoded, Duration::MAX)
            .await
            .expect("unbounded: never elapses")?;
        assert!(
            got.starts_with("HTTP/1."),
            "the proxy answers with HTTP: {got}"
        );
        let status = status_of(&got);
        if (100..200).contains(&status) {
            hinted = true;
            continue;
        }
        return Some(Answer {
            status,
            hinted,
            body,
        });
    }
}

/// A client connection to a proxy, kept alive across requests.
struct Client {
    s: TcpStream,
    pending: Vec<u8>,
}

impl Client {
    async fn connect(proxy: &ProxyHandle) -> Self {
        let s = tokio::time::timeout(PATIENCE, TcpStream::connect(proxy.addr()))
            .await
            .expect("connects in time")
            .expect("connects");
        Self {
            s,
            pending: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        tokio::time::timeout(PATIENCE, self.s.write_all(bytes))
            .await
            .expect("writes in time")
            .expect("writes");
    }

    /// The next `n` answers (`head`: to `HEAD` requests), bounded by [`PATIENCE`].
    async fn answers(&mut self, n: usize, head: bool) -> Vec<Answer> {
        let mut out = Vec::new();
        for _ in 0..n {
            let answer =
                tokio::time::timeout(PATIENCE, read_answer(&mut self.s, &mut self.pending, head))
                    .await
                    .expect("an answer in time")
                    .expect("an answer before the connection ended");
            out.push(answer);
        }
        out
    }
}

/// A request with `Host: t`, the given header lines (each ending in CRLF) and no body.
fn get(method: &str, target: &str, headers: &str) -> Vec<u8> {
    format!("{method} {target} HTTP/1.1\r\nHost: t\r\n{headers}\r\n").into_bytes()
}

/// The same with raw header bytes (obs-text, non-UTF-8).
fn get_bytes(target: &str, header: &[u8]) -> Vec<u8> {
    let mut r = format!("GET {target} HTTP/1.1\r\nHost: t\r\n").into_bytes();
    r.extend_from_slice(header);
    r.extend_from_slice(b"\r\n");
    r
}

/// A `POST` with a small body.
fn post(target: &str, headers: &str) -> Vec<u8> {
    format!("POST {target} HTTP/1.1\r\nHost: t\r\n{headers}content-length: 2\r\n\r\nhi")
        .into_bytes()
}

/// The two proxies of a comparison: `fast` with the rules, `hyper` with the same rules and
/// [`HYPER_PATH_RULE`] last.
struct Pair {
    fast: ProxyHandle,
    hyper: ProxyHandle,
}

impl Pair {
    async fn new(rules_json: &str, config: ProxyConfig) -> Self {
        let up = hinting_upstream().await;
        let under_test = rules(rules_json);
        let mut everything_on_hyper = under_test.clone();
        everything_on_hyper.extend(rules(HYPER_PATH_RULE));
        let start_one = |rules: Vec<Rule>, config: &ProxyConfig| {
            start(ProxyConfig {
                // A base path: rules see the client's path, before the upstream's prefix.
                upstream: format!("http://{up}/base"),
                rules,
                io_threads: 0,
                key_at: config.key_at.clone(),
                ..ProxyConfig::default()
            })
        };
        let fast = start_one(under_test, &config).await.expect("proxy starts");
        let hyper = start_one(everything_on_hyper, &config)
            .await
            .expect("proxy starts");
        Self { fast, hyper }
    }

    async fn shutdown(self) {
        self.fast.shutdown().await;
        self.hyper.shutdown().await;
    }
}

/// Waits until `proxy` logged `n` events and returns them.
async fn events(proxy: &ProxyHandle, n: usize) -> Vec<ProxyEvent> {
    eventually(&format!("{n} events"), || proxy.events().len() >= n).await;
    let events = proxy.events();
    assert_eq!(events.len(), n, "{events:#?}");
    events
}

/// What an event says of its request that both paths must log alike.
fn logged(e: &ProxyEvent) -> impl PartialEq + std::fmt::Debug {
    (
        e.method.clone(),
        e.path.clone(),
        e.idempotency_key.clone(),
        e.step.clone(),
        e.rule.clone(),
        e.fault.clone(),
        e.client_status,
    )
}

/// What a case expects of the rule named `r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `r`'s conditions fit: hyper's path applies it (status 470).
    Applies,
    /// They do not: the request passes through, served by the fast path.
    Passes,
}

/// Sends each request on a fresh connection to both proxies of a pair whose only rule `r` has
/// `matcher` (and answers 470), and checks that both answer it and log it alike, and as expected.
async fn single_rule(matcher: &str, config: ProxyConfig, cases: &[(Vec<u8>, Expect)]) {
    let pair = Pair::new(
        &format!(
            r#"[{{"name": "r", "match": {matcher}, "fault": {{"respond": {{"status": 470}}}}}}]"#
        ),
        config,
    )
    .await;
    for (i, (request, expect)) in cases.iter().enumerate() {
        let shown = String::from_utf8_lossy(request);
        let head = request.starts_with(b"HEAD ");
        let mut answers = Vec::new();
        for proxy in [&pair.fast, &pair.hyper] {
            let mut c = Client::connect(proxy).await;
            c.send(request).await;
            answers.push(c.answers(1, head).await.remove(0));
        }
        let (fast, hyper) = (&answers[0], &answers[1]);
        assert!(!hyper.hinted, "hyper's path drops interim heads");
        assert_eq!(
            (fast.status, &fast.body),
            (hyper.status, &hyper.body),
            "case {i} {shown:?}: the fast path's proxy answered unlike hyper's path"
        );
        let fast_event = events(&pair.fast, i + 1).await.remove(i);
        let hyper_event = events(&pair.hyper, i + 1).await.remove(i);
        let fast_rule = fast_event.rule.clone();
        assert_eq!(
            logged(&fast_event),
            logged(&hyper_event),
            "case {i} {shown:?}: the two logged it differently"
        );
        match expect {
            Expect::Applies => {
                assert_eq!(hyper.status, 470, "case {i} {shown:?}: the rule must apply");
                assert_eq!(fast_rule.as_deref(), Some("r"), "case {i} {shown:?}");
            }
            Expect::Passes => {
                assert_eq!(hyper.status, 200, "case {i} {shown:?}: no rule applies");
                assert_eq!(fast_rule, None, "case {i} {shown:?}");
                assert!(
                    fast.hinted,
                    "case {i} {shown:?}: no rule fits it, yet the fast path handed it over"
                );
            }
        }
    }
    pair.shutdown().await;
}

use Expect::{Applies, Passes};

#[tokio::test]
async fn header_conditions_read_the_first_value_by_name_in_any_case_byte_for_byte() {
    single_rule(
        r#"{"header": {"name": "X-Flag", "equals": "on"}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/h", "x-flag: on\r\n"), Applies),
            (get("GET", "/h", "X-FLAG: on\r\n"), Applies),
            (get("GET", "/h", "X-Flag: ON\r\n"), Passes),
            (get("GET", "/h", "X-Flag: on\r\nX-Flag: off\r\n"), Applies),
            (get("GET", "/h", "X-Flag: off\r\nx-flag: on\r\n"), Passes),
            (get("GET", "/h", "X-Flag: on, off\r\n"), Passes),
            (get("GET", "/h", "X-Flag:on\r\n"), Applies),
            (get("GET", "/h", "X-Flag:    on\r\n"), Applies),
            (get("GET", "/h", "X-Flag: on   \r\n"), Applies),
            (get("GET", "/h", "X-Flag:\t on \t\r\n"), Applies),
            (get("GET", "/h", "X-Flag: \"on\"\r\n"), Passes),
            (get("GET", "/h", "X-Flag:\r\n"), Passes),
            (get("GET", "/h", "X-Flags: on\r\n"), Passes),
            (get("GET", "/h", "X-Fla: on\r\n"), Passes),
            (get("GET", "/h?x-flag=on", ""), Passes),
            (get_bytes("/h", b"x-flag: o\xffn\r\n"), Passes),
            (get_bytes("/h", b"x-flag: on\xff\r\n"), Passes),
            // A bare LF ends a header line for both parsers.
            (
                b"GET /h HTTP/1.1\nHost: t\nX-Flag: on\n\n".to_vec(),
                Applies,
            ),
            (post("/h", "x-flag: on\r\n"), Applies),
            (get("HEAD", "/h", "x-flag: on\r\n"), Applies),
            (get("HEAD", "/h", "x-flag: off\r\n"), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn empty_and_non_utf8_header_values_are_compared_as_bytes() {
    single_rule(
        r#"{"header": {"name": "x-empty", "equals": ""}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/e", "x-empty:\r\n"), Applies),
            (get("GET", "/e", "X-Empty: \r\n"), Applies),
            (get("GET", "/e", "x-empty:   \t\r\n"), Applies),
            (get("GET", "/e", "x-empty: x\r\n"), Passes),
            (get("GET", "/e", "x-empty: \"\"\r\n"), Passes),
            (get("GET", "/e", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"header": {"name": "x-bin", "equals": "café"}}"#,
        ProxyConfig::default(),
        &[
            (get_bytes("/b", b"x-bin: caf\xc3\xa9\r\n"), Applies),
            (get_bytes("/b", b"x-bin: caf\xe9\r\n"), Passes),
            (get_bytes("/b", b"x-bin: CAF\xc3\xa9\r\n"), Passes),
            (get_bytes("/b", b"x-bin: caf\xc3\xa9\xc3\r\n"), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn header_presence_counts_an_empty_value_and_reads_control_and_framing_headers() {
    single_rule(
        r#"{"header": {"name": "x-present"}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/p", "x-present:\r\n"), Applies),
            (get("GET", "/p", "X-PRESENT: 1\r\n"), Applies),
            (get("GET", "/p", "x-presents: 1\r\n"), Passes),
            (get("GET", "/p", "x-presen: 1\r\n"), Passes),
            (get("GET", "/p", ""), Passes),
        ],
    )
    .await;
    // A name longer than the `http` crate's 64-byte scratch buffer is still case-insensitive.
    let long = "x-".to_owned() + &"long".repeat(20);
    single_rule(
        &format!(
            r#"{{"header": {{"name": "{}", "equals": "v"}}}}"#,
            long.to_uppercase()
        ),
        ProxyConfig::default(),
        &[
            (get("GET", "/l", &format!("{long}: v\r\n")), Applies),
            (
                get("GET", "/l", &format!("{}: v\r\n", long.to_uppercase())),
                Applies,
            ),
            (get("GET", "/l", &format!("{long}x: v\r\n")), Passes),
            (get("GET", "/l", &format!("{long}: w\r\n")), Passes),
        ],
    )
    .await;
    // Rules see the control headers, which neither path forwards.
    single_rule(
        r#"{"header": {"name": "x-idemspec-step", "equals": "lost-1"}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/s", "X-Idemspec-Step: lost-1\r\n"), Applies),
            (
                get(
                    "GET",
                    "/s",
                    "x-idemspec-step: lost-2\r\nX-Idemspec-Step: lost-1\r\n",
                ),
                Passes,
            ),
            (get("GET", "/s", "X-Idemspec-Step: lost-10\r\n"), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"header": {"name": "host", "equals": "t"}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/host", ""), Applies),
            (b"GET /host HTTP/1.1\r\nHOST: T\r\n\r\n".to_vec(), Passes),
            (b"GET /host HTTP/1.1\r\nhost: t:80\r\n\r\n".to_vec(), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"header": {"name": "content-length", "equals": "2"}}"#,
        ProxyConfig::default(),
        &[
            (post("/cl", ""), Applies),
            (get("GET", "/cl", "content-length: 0\r\n"), Passes),
            (get("GET", "/cl", ""), Passes),
        ],
    )
    .await;
    // Hop-by-hop request headers: hyper's `Parts` keeps them, and so does the fast path's view.
    single_rule(
        r#"{"header": {"name": "connection", "equals": "keep-alive"}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/c", "Connection: keep-alive\r\n"), Applies),
            (get("GET", "/c", "Connection: Keep-Alive\r\n"), Passes),
            (get("GET", "/c", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"header": {"name": "keep-alive"}}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/k", "Keep-Alive: timeout=5\r\n"), Applies),
            (get("GET", "/k", ""), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_exact_path_ignores_the_query_and_nothing_else() {
    single_rule(
        r#"{"path": "/a"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/a", ""), Applies),
            (get("GET", "/a?", ""), Applies),
            (get("GET", "/a?x=1", ""), Applies),
            (get("GET", "/a?b?c", ""), Applies),
            (get("GET", "/a?/a", ""), Applies),
            (get("GET", "/a/", ""), Passes),
            (get("GET", "/A", ""), Passes),
            (get("GET", "/a%3F", ""), Passes),
            (get("GET", "/a%3Fx", ""), Passes),
            (get("GET", "/%61", ""), Passes),
            (get("GET", "//a", ""), Passes),
            (get("GET", "/./a", ""), Passes),
            (get("GET", "/b/../a", ""), Passes),
            (get("GET", "/a;x", ""), Passes),
            (get("GET", "/b?/a", ""), Passes),
            // Not origin-form or not URI characters: hyper's path judges them (its URI has
            // the path without the authority or the fragment).
            (get("GET", "http://t/a", ""), Applies),
            (get("GET", "/a#f", ""), Applies),
            // Empty lines before the request line are skipped by both parsers.
            (
                [b"\r\n".as_slice(), &get("GET", "/a", "")].concat(),
                Applies,
            ),
            (
                [b"\r\n\r\n".as_slice(), &get("GET", "/b", "")].concat(),
                Passes,
            ),
        ],
    )
    .await;
    single_rule(
        r#"{"path": "/"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/", ""), Applies),
            (get("GET", "/?x", ""), Applies),
            (get("GET", "/?", ""), Applies),
            (get("GET", "//", ""), Passes),
            (get("GET", "/%2F", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path": "/a/b"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/a/b?", ""), Applies),
            (get("GET", "/a%2Fb", ""), Passes),
            (get("GET", "/a%2fb", ""), Passes),
            (get("GET", "/a/b/", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path": "/a%2Fb"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/a%2Fb", ""), Applies),
            (get("GET", "/a%2fb", ""), Passes),
            (get("GET", "/a/b", ""), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_path_prefix_is_byte_wise_over_the_path_without_its_query() {
    single_rule(
        r#"{"path_prefix": "/v1/"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/v1/", ""), Applies),
            (get("GET", "/v1/x?y", ""), Applies),
            (get("GET", "/v1/%2F", ""), Applies),
            (get("GET", "/v1", ""), Passes),
            (get("GET", "/v1?/", ""), Passes),
            (get("GET", "/v1%2F", ""), Passes),
            (get("GET", "/V1/", ""), Passes),
            (get("GET", "//v1/", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path_prefix": "/v1"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/v1?x", ""), Applies),
            (get("GET", "/v10", ""), Applies),
            (get("GET", "/v", ""), Passes),
            (get("GET", "/?v1", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path_prefix": "/"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/", ""), Applies),
            (get("GET", "/?", ""), Applies),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_path_glob_matches_the_path_without_its_query_and_star_stops_at_slashes() {
    single_rule(
        r#"{"path_glob": "/w/*/reboot"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/w/1/reboot", ""), Applies),
            (get("GET", "/w/1/reboot?x=/", ""), Applies),
            (get("GET", "/w/a%2Fb/reboot", ""), Applies),
            (get("GET", "/w//reboot", ""), Applies),
            (get("GET", "/w/1/2/reboot", ""), Passes),
            (get("GET", "/w/1/reboot/", ""), Passes),
            (get("GET", "/w/1?/reboot", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path_glob": "/w/**"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/w/a/b/c", ""), Applies),
            (get("GET", "/w/", ""), Applies),
            (get("GET", "/w", ""), Passes),
            (get("GET", "/wx/a", ""), Passes),
            (get("GET", "/x?/w/a", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path_glob": "/q?"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/qa", ""), Applies),
            (get("GET", "/q%", ""), Applies),
            (get("GET", "/q?", ""), Passes),
            (get("GET", "/q?a", ""), Passes),
            (get("GET", "/qab", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"path_glob": "/{a,b}/[0-9]*"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/a/1", ""), Applies),
            (get("GET", "/b/9x?y", ""), Applies),
            (get("GET", "/c/1", ""), Passes),
            (get("GET", "/a/x1", ""), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_method_is_matched_as_sent_and_head_is_not_get() {
    single_rule(
        r#"{"method": "get"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/m", ""), Applies),
            (get("HEAD", "/m", ""), Passes),
            (get("get", "/m", ""), Passes),
            (get("Get", "/m", ""), Passes),
            (get("GETX", "/m", ""), Passes),
            (post("/m", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"method": "HEAD"}"#,
        ProxyConfig::default(),
        &[
            (get("HEAD", "/m", ""), Applies),
            (get("GET", "/m", ""), Passes),
            (get("head", "/m", ""), Passes),
        ],
    )
    .await;
    single_rule(
        r#"{"method": "purge"}"#,
        ProxyConfig::default(),
        &[
            (get("PURGE", "/m", ""), Applies),
            (get("purge", "/m", ""), Passes),
            (get("PURGEX", "/m", ""), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_idempotency_key_is_read_from_the_configured_key_header_quotes_included() {
    single_rule(
        r#"{"idempotency_key": "k1"}"#,
        ProxyConfig::default(),
        &[
            (get("GET", "/k", "Idempotency-Key: k1\r\n"), Applies),
            (get("GET", "/k", "IDEMPOTENCY-KEY: k1\r\n"), Applies),
            (get("GET", "/k", "idempotency-key: \"k1\"\r\n"), Passes),
            (get("GET", "/k", "Idempotency-Key: K1\r\n"), Passes),
            (
                get(
                    "GET",
                    "/k",
                    "Idempotency-Key: k2\r\nIdempotency-Key: k1\r\n",
                ),
                Passes,
            ),
            (
                get(
                    "GET",
                    "/k",
                    "Idempotency-Key: k1\r\nIdempotency-Key: k2\r\n",
                ),
                Applies,
            ),
            (get("GET", "/k", "PayPal-Request-Id: k1\r\n"), Passes),
            (get("GET", "/k?Idempotency-Key=k1", ""), Passes),
        ],
    )
    .await;
    let paypal = || ProxyConfig {
        key_at: idemspec_scenarios::profile::KeyAt::Header("PayPal-Request-Id".into()),
        ..ProxyConfig::default()
    };
    single_rule(
        r#"{"idempotency_key": "\"abc\""}"#,
        paypal(),
        &[
            (get("POST", "/k", "PayPal-Request-Id: \"abc\"\r\n"), Applies),
            (get("GET", "/k", "paypal-request-id:\"abc\"\r\n"), Applies),
            (get("GET", "/k", "PAYPAL-REQUEST-ID: \"abc\"\r\n"), Applies),
            (get("GET", "/k", "PayPal-Request-Id: abc\r\n"), Passes),
            (get("GET", "/k", "PayPal-Request-Id: 'abc'\r\n"), Passes),
            (get("GET", "/k", "Idempotency-Key: \"abc\"\r\n"), Passes),
            (
                get(
                    "GET",
                    "/k",
                    "Idempotency-Key: \"abc\"\r\nPayPal-Request-Id: x\r\n",
                ),
                Passes,
            ),
        ],
    )
    .await;
    // A header condition on the default key header still reads that header, not the key header.
    single_rule(
        r#"{"header": {"name": "idempotency-key", "equals": "abc"}}"#,
        paypal(),
        &[
            (get("GET", "/k", "Idempotency-Key: abc\r\n"), Applies),
            (get("GET", "/k", "PayPal-Request-Id: abc\r\n"), Passes),
        ],
    )
    .await;
}

#[tokio::test]
async fn every_condition_of_a_combined_rule_must_fit() {
    single_rule(
        r#"{"method": "POST", "path_glob": "/p/*", "header": {"name": "x-t", "equals": "1"}, "idempotency_key": "k"}"#,
        ProxyConfig::default(),
        &[
            (post("/p/a?z", "x-t: 1\r\nidempotency-key: k\r\n"), Applies),
            (post("/p/a/b", "x-t: 1\r\nidempotency-key: k\r\n"), Passes),
            (post("/p/a", "x-t: 2\r\nidempotency-key: k\r\n"), Passes),
            (post("/p/a", "x-t: 1\r\nidempotency-key: K\r\n"), Passes),
            (post("/p/a", "x-t: 1\r\n"), Passes),
            (get("GET", "/p/a", "x-t: 1\r\nidempotency-key: k\r\n"), Passes),
            (post("/q/a", "x-t: 1\r\nidempotency-key: k\r\n"), Passes),
        ],
    )
    .await;
}

/// A request of a counter sequence: its bytes, and whether it is a `HEAD`.
type Step = (Vec<u8>, bool);

/// The rules of the counter tests: each counts only the requests its conditions fit, and a
/// request one of them fits but that it does not apply to is judged by the next.
const COUNTED: &str = r#"[
    {"name": "third", "match": {"path_prefix": "/n", "nth": 3}, "fault": {"respond": {"status": 471}}},
    {"name": "coin", "match": {"header": {"name": "x-p"}, "probability": 0.5, "seed": 7}, "fault": {"respond": {"status": 472}}},
    {"name": "twice", "match": {"method": "POST"}, "fault": {"respond": {"status": 473}}, "times": 2},
    {"name": "key", "match": {"idempotency_key": "k", "nth": 2}, "fault": {"respond": {"status": 474}}}
]"#;

/// 60 requests: misses of every kind interleaved with requests each rule's conditions fit.
fn counted_sequence() -> Vec<Step> {
    let kinds: [Step; 12] = [
        (get("GET", "/z", ""), false),
        (get("GET", "/n/1", ""), false),
        (get("GET", "/z", "x-p: 1\r\n"), false),
        (post("/z", ""), false),
        (get("GET", "/zz?x=/n", "X-P-Other: 1\r\n"), false),
        (get("GET", "/n", "X-P: 1\r\n"), false),
        (post("/n/x", "x-p:\r\n"), false),
        (get("HEAD", "/z", "X-p: 2\r\n"), false),
        (get("GET", "/N", "idempotency-key: K\r\n"), false),
        (get("GET", "/z", "Idempotency-Key: k\r\n"), false),
        (get("get", "/z", ""), false),
        (get("HEAD", "/m", ""), false),
    ];
    (0..60)
        .map(|i| {
            // A fixed shuffle, so that kinds meet in varying orders.
            let (bytes, _) = &kinds[(i * 7 + i / 12) % kinds.len()];
            (bytes.clone(), bytes.starts_with(b"HEAD "))
        })
        .collect()
}

/// How a sequence is sent.
#[derive(Debug, Clone, Copy)]
enum Send {
    /// All on one keep-alive connection.
    OneConnection,
    /// Each on a fresh connection (each starts on the fast path).
    FreshConnections,
    /// Pipelined in batches of `n`, each batch on a fresh connection.
    Pipelined(usize),
}

/// Sends `steps` to `proxy` as `how` says; the answers in order.
async fn run(proxy: &ProxyHandle, steps: &[Step], how: Send) -> Vec<Answer> {
    let mut answers = Vec::new();
    match how {
        Send::OneConnection => {
            let mut c = Client::connect(proxy).await;
            for (bytes, head) in steps {
                c.send(bytes).await;
                answers.extend(c.answers(1, *head).await);
            }
        }
        Send::FreshConnections => {
            for (bytes, head) in steps {
                let mut c = Client::connect(proxy).await;
                c.send(bytes).await;
                answers.extend(c.answers(1, *head).await);
            }
        }
        Send::Pipelined(n) => {
            for batch in steps.chunks(n) {
                let mut c = Client::connect(proxy).await;
                c.send(&batch.concat_bytes()).await;
                for (_, head) in batch {
                    answers.extend(c.answers(1, *head).await);
                }
            }
        }
    }
    answers
}

trait ConcatBytes {
    fn concat_bytes(&self) -> Vec<u8>;
}

impl ConcatBytes for [Step] {
    fn concat_bytes(&self) -> Vec<u8> {
        self.iter().flat_map(|(b, _)| b.clone()).collect()
    }
}

/// Runs [`counted_sequence`] through a fresh pair as `how` says and checks that both proxies
/// made the same decision for every request, in the same order, and that every rule did apply.
async fn counters_agree(how: Send) {
    let steps = counted_sequence();
    let pair = Pair::new(COUNTED, ProxyConfig::default()).await;
    let fast = run(&pair.fast, &steps, how).await;
    let hyper = run(&pair.hyper, &steps, how).await;
    let statuses = |a: &[Answer]| a.iter().map(|a| a.status).collect::<Vec<_>>();
    assert_eq!(
        statuses(&fast),
        statuses(&hyper),
        "{how:?}: the fast path's proxy decided unlike hyper's path"
    );
    let fast_events = events(&pair.fast, steps.len()).await;
    let hyper_events = events(&pair.hyper, steps.len()).await;
    let rules = |e: &[ProxyEvent]| e.iter().map(|e| e.rule.clone()).collect::<Vec<_>>();
    assert_eq!(rules(&fast_events), rules(&hyper_events), "{how:?}");
    let applied = |name: &str| {
        hyper_events
            .iter()
            .filter(|e| e.rule.as_deref() == Some(name))
            .count()
    };
    assert_eq!(applied("third"), 1, "{how:?}: nth 3 applies once");
    assert_eq!(applied("twice"), 2, "{how:?}: times 2 applies twice");
    assert_eq!(applied("key"), 1, "{how:?}: nth 2 applies once");
    let coin = applied("coin");
    let fit_coin = steps
        .iter()
        .filter(|(b, _)| {
            String::from_utf8_lossy(b)
                .to_ascii_lowercase()
                .contains("\r\nx-p:")
        })
        .count();
    assert!(
        coin > 0 && coin < fit_coin,
        "{how:?}: probability 0.5 over {fit_coin} requests applied {coin} times"
    );
    if !matches!(how, Send::OneConnection) {
        assert!(
            fast.iter().any(|a| a.hinted),
            "{how:?}: the fast path served none of the misses"
        );
    }
    pair.shutdown().await;
}

#[tokio::test]
async fn counters_move_as_on_hyper_s_path_with_misses_interleaved_on_one_connection() {
    counters_agree(Send::OneConnection).await;
}

#[tokio::test]
async fn counters_move_as_on_hyper_s_path_with_misses_on_fresh_connections() {
    counters_agree(Send::FreshConnections).await;
}

#[tokio::test]
async fn counters_move_as_on_hyper_s_path_with_misses_pipelined_between_matches() {
    for n in [2, 3, 5] {
        counters_agree(Send::Pipelined(n)).await;
    }
}

/// A miss and a match in both orders, pipelined in one write or with the second head split
/// across writes: the match gets its fault, the miss its upstream answer, on both proxies.
#[tokio::test]
async fn a_pipelined_match_behind_a_miss_and_a_miss_behind_a_match_are_each_judged_by_their_own_head(
) {
    let pair = Pair::new(
        r#"[{"name": "r", "match": {"path": "/hit", "header": {"name": "x-f", "equals": "1"}}, "fault": {"respond": {"status": 470}}}]"#,
        ProxyConfig::default(),
    )
    .await;
    let hit = get("GET", "/hit", "x-f: 1\r\n");
    let miss_path = get("GET", "/hit?x", "x-f: 2\r\n");
    let miss_header = get("GET", "/miss", "x-f: 1\r\n");
    let orders: Vec<(Vec<&[u8]>, Vec<u16>)> = vec![
        (vec![&miss_header, &hit], vec![200, 470]),
        (vec![&hit, &miss_header], vec![470, 200]),
        (
            vec![&miss_path, &miss_header, &hit, &miss_path],
            vec![200, 200, 470, 200],
        ),
        (
            vec![&miss_header, &miss_header, &miss_header],
            vec![200, 200, 200],
        ),
    ];
    let mut logged = 0;
    for (requests, want) in &orders {
        for split in [false, true] {
            let mut got = Vec::new();
            for proxy in [&pair.fast, &pair.hyper] {
                let mut c = Client::connect(proxy).await;
                let bytes: Vec<u8> = requests.concat();
                if split {
                    // The first head whole and half of the second, then the rest.
                    let cut = requests[0].len() + requests[1].len() / 2;
                    c.send(&bytes[..cut]).await;
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    c.send(&bytes[cut..]).await;
                } else {
                    c.send(&bytes).await;
                }
                got.push(c.answers(requests.len(), false).await);
            }
            logged += requests.len();
            let statuses = |a: &[Answer]| a.iter().map(|a| a.status).collect::<Vec<_>>();
            assert_eq!(&statuses(&got[0]), want, "fast, split {split}");
            assert_eq!(&statuses(&got[1]), want, "hyper, split {split}");
            let bodies = |a: &[Answer]| a.iter().map(|a| a.body.clone()).collect::<Vec<_>>();
            assert_eq!(bodies(&got[0]), bodies(&got[1]), "split {split}");
            // On the fast path's proxy, misses before the first match stay on the fast path.
            let first_hit = want.iter().position(|&s| s == 470).unwrap_or(want.len());
            for (i, a) in got[0].iter().enumerate().take(first_hit) {
                assert!(
                    a.hinted,
                    "request {i} of {want:?}, split {split}: handed over"
                );
            }
            let fast_events = events(&pair.fast, logged).await;
            let hyper_events = events(&pair.hyper, logged).await;
            for (f, h) in fast_events.iter().zip(&hyper_events) {
                assert_eq!((&f.path, &f.rule), (&h.path, &h.rule));
                assert_eq!(f.rule.is_some(), f.path == "/hit", "{f:?}");
            }
        }
    }
    pair.shutdown().await;
}

/// What a request of the concurrent test is: which of the swapped rules' conditions fit it.
fn kind_of(key: &str) -> u32 {
    key.rsplit('k')
        .next()
        .and_then(|k| k.parse().ok())
        .expect("a kind")
}

/// The request of kind `kind` (its key names the client, the request and the kind):
/// 0 fits `x` (path prefix `/x`), 1 fits `y` (header), 2 fits neither, 3 fits both.
fn kinded(client: usize, j: usize, kind: u32) -> Vec<u8> {
    let key = format!("idempotency-key: c{client}-j{j}-k{kind}\r\n");
    match kind {
        0 => get("GET", "/x/1", &key),
        1 => get("GET", "/z?x/1", &format!("{key}X-Y: 1\r\n")),
        2 => get("GET", "/z/x", &format!("{key}x-y: 0\r\nX-Y: 1\r\n")),
        _ => post("/x/1?a", &format!("{key}x-y: 1\r\n")),
    }
}

/// Rules replaced over and over while many connections (started together by a barrier) send
/// requests: a fault only ever answers a request its rule's conditions fit, and the event log
/// names a rule only for such a request, whichever path judged it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_replaced_under_concurrent_connections_apply_only_to_requests_they_fit() {
    const CLIENTS: usize = 12;
    const REQUESTS: usize = 25;
    let up = hinting_upstream().await;
    let proxy = start(ProxyConfig {
        upstream: format!("http://{up}"),
        io_threads: 2,
        ..ProxyConfig::default()
    })
    .await
    .expect("proxy starts");
    let sets: Vec<Vec<Rule>> = [
        r#"[{"name": "x", "match": {"path_prefix": "/x"}, "fault": {"respond": {"status": 471}}}]"#,
        r#"[{"name": "y", "match": {"header": {"name": "x-y", "equals": "1"}}, "fault": {"respond": {"status": 472}}}]"#,
        "[]",
        r#"[{"name": "xn", "match": {"path": "/x/1", "nth": 2}, "fault": {"respond": {"status": 473}}},
            {"name": "y", "match": {"header": {"name": "X-Y", "equals": "1"}, "probability": 0.5, "seed": 3}, "fault": {"respond": {"status": 472}}}]"#,
    ]
    .iter()
    .map(|json| rules(json))
    .collect();
    let proxy = Arc::new(proxy);
    let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS + 1));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (proxy, barrier, done) = (proxy.clone(), barrier.clone(), done.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            let mut i = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                proxy.set_rules(sets[i % sets.len()].clone()).unwrap();
                i += 1;
                tokio::time::sleep(Duration::from_micros(300)).await;
            }
            i
        })
    };
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (proxy, barrier) = (proxy.clone(), barrier.clone());
        clients.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut got = Vec::new();
            // Even clients keep one connection (it moves to hyper's path at its first fit);
            // odd ones open one per request, so each request is judged by the fast path.
            let mut kept = Client::connect(&proxy).await;
            for j in 0..REQUESTS {
                let kind = ((client + j * 3) % 4) as u32;
                let bytes = kinded(client, j, kind);
                let answer = if client % 2 == 0 {
                    kept.send(&bytes).await;
                    kept.answers(1, false).await.remove(0)
                } else {
                    let mut c = Client::connect(&proxy).await;
                    c.send(&bytes).await;
                    c.answers(1, false).await.remove(0)
                };
                got.push((format!("c{client}-j{j}-k{kind}"), answer));
            }
            got
        }));
    }
    let mut answers = Vec::new();
    for c in clients {
        answers.extend(
            tokio::time::timeout(PATIENCE, c)
                .await
                .expect("clients finish")
                .unwrap(),
        );
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let swaps = tokio::time::timeout(PATIENCE, swapper)
        .await
        .expect("the swapper stops")
        .unwrap();
    assert!(swaps > 4, "the rules were replaced only {swaps} times");
    let fits = |rule: &str, kind: u32| match rule {
        "x" | "xn" => kind == 0 || kind == 3,
        "y" => kind == 1 || kind == 3,
        other => panic!("unknown rule {other}"),
    };
    let status_rule = |status: u16| match status {
        471 => Some("x"),
        472 => Some("y"),
        473 => Some("xn"),
        200 => None,
        other => panic!("unexpected status {other}"),
    };
    for (key, answer) in &answers {
        if let Some(rule) = status_rule(answer.status) {
            assert!(fits(rule, kind_of(key)), "{key} got {rule}'s fault");
        }
    }
    let events = events(&proxy, CLIENTS * REQUESTS).await;
    let mut faults = 0;
    for e in &events {
        let key = e
            .idempotency_key
            .as_deref()
            .expect("every request has a key");
        if let Some(rule) = e.rule.as_deref() {
            faults += 1;
            assert!(fits(rule, kind_of(key)), "{key} ({}) logged {rule}", e.path);
        }
        let (_, answer) = answers.iter().find(|(k, _)| k == key).expect("answered");
        assert_eq!(e.client_status, Some(answer.status), "{key}");
        assert_eq!(e.rule.as_deref(), status_rule(answer.status), "{key}");
    }
    assert!(faults > 0, "no rule applied while they were swapped");
    assert!(
        answers.iter().any(|(_, a)| a.hinted),
        "the fast path served none of the requests"
    );
    proxy.shutdown().await;
}

/// Counters under concurrency: while a crowd of connections sends requests (misses the fast
/// path serves among requests the counted rules fit) and rules are added beside them (which keeps
/// their counters), `nth: 5` applies exactly once and `times: 3` exactly three times: no miss
/// moved a counter, whichever path judged it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_stay_exact_under_concurrent_misses_while_rules_are_added() {
    const CLIENTS: usize = 10;
    const REQUESTS: usize = 20;
    let up = hinting_upstream().await;
    let proxy = Arc::new(
        start(ProxyConfig {
            upstream: format!("http://{up}"),
            io_threads: 2,
            rules: rules(
                r#"[{"name": "fifth", "match": {"path": "/n", "nth": 5}, "fault": {"respond": {"status": 471}}},
                    {"name": "thrice", "match": {"header": {"name": "x-t", "equals": "1"}}, "fault": {"respond": {"status": 472}}, "times": 3}]"#,
            ),
            ..ProxyConfig::default()
        })
        .await
        .expect("proxy starts"),
    );
    let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS + 1));
    let adder = {
        let (proxy, barrier) = (proxy.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            for i in 0..50 {
                // Never fits a request of this test: only its presence changes.
                let rule = rules(&format!(
                    r#"[{{"name": "added-{i}", "match": {{"path": "/never/{i}"}}, "fault": {{"respond": {{"status": 479}}}}}}]"#
                ));
                proxy.add_rule(rule.into_iter().next().unwrap()).unwrap();
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        })
    };
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (proxy, barrier) = (proxy.clone(), barrier.clone());
        clients.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut statuses = Vec::new();
            for j in 0..REQUESTS {
                let bytes = match (client + j) % 5 {
                    0 => get("GET", "/n?x", ""),
                    1 => get("GET", "/z", "x-t: 1\r\n"),
                    2 => get("GET", "/n/", "x-t: 2\r\n"),
                    3 => get("GET", "/never/3/?", "x-T: 0\r\nx-t: 1\r\n"),
                    _ => get("HEAD", "/N", "X-T: 11\r\n"),
                };
                let mut c = Client::connect(&proxy).await;
                c.send(&bytes).await;
                let head = bytes.starts_with(b"HEAD ");
                statuses.push(c.answers(1, head).await.remove(0));
            }
            statuses
        }));
    }
    let mut answers = Vec::new();
    for c in clients {
        answers.extend(
            tokio::time::timeout(PATIENCE, c)
                .await
                .expect("clients finish")
                .unwrap(),
        );
    }
    tokio::time::timeout(PATIENCE, adder)
        .await
        .expect("the adder finishes")
        .unwrap();
    let count = |status: u16| answers.iter().filter(|a| a.status == status).count();
    assert_eq!(count(471), 1, "nth 5 applies exactly once");
    assert_eq!(count(472), 3, "times 3 applies exactly three times");
    assert_eq!(count(479), 0, "the added rules fit nothing");
    assert_eq!(count(200), CLIENTS * REQUESTS - 4);
    assert!(
        answers.iter().any(|a| a.hinted),
        "the fast path served none of the misses"
    );
    let events = events(&proxy, CLIENTS * REQUESTS).await;
    for e in &events {
        match e.rule.as_deref() {
            None => {}
            Some("fifth") => assert_eq!(e.path, "/n?x", "{e:?}"),
            Some("thrice") => assert_eq!(e.path, "/z", "{e:?}"),
            Some(other) => panic!("{other} applied to {e:?}"),
        }
    }
    proxy.shutdown().await;
}

/// A rule built in code skips the schema's lower-casing of a header name: both paths still
/// compare the name case-insensitively (hyper's `HeaderMap` normalises the name it is asked
/// for, the fast path compares ASCII case-insensitively), and agree on a name that is no token.
#[tokio::test]
async fn a_code_built_rule_with_a_mixed_case_header_name_is_judged_alike() {
    let pair = Pair::new("[]", ProxyConfig::default()).await;
    let mut built = rules(
        r#"[{"name": "r", "match": {"path_prefix": "/"}, "fault": {"respond": {"status": 470}}}]"#,
    );
    built[0].matcher.path_prefix = None;
    built[0].matcher.header = Some(idemspec_scenarios::rules::HeaderMatch {
        name: "X-Flag".into(),
        equals: Some("on".into()),
    });
    let mut odd = built[0].clone();
    odd.name = "odd".into();
    odd.matcher.header = Some(idemspec_scenarios::rules::HeaderMatch {
        name: "x-flag ".into(),
        equals: None,
    });
    let mut everything_on_hyper = vec![built[0].clone()];
    everything_on_hyper.extend(rules(HYPER_PATH_RULE));
    let with_odd = |mut set: Vec<Rule>| {
        set.insert(0, odd.clone());
        set
    };
    let (fast_ok, hyper_ok) = (
        pair.fast.set_rules(with_odd(built.clone())),
        pair.hyper.set_rules(with_odd(everything_on_hyper.clone())),
    );
    assert_eq!(fast_ok.is_ok(), hyper_ok.is_ok());
    if fast_ok.is_err() {
        // Refused as a rule: the mixed-case one alone.
        pair.fast.set_rules(built).unwrap();
        pair.hyper.set_rules(everything_on_hyper).unwrap();
    }
    let cases = [
        (get("GET", "/c", "x-flag: on\r\n"), 470),
        (get("GET", "/c", "X-FLAG: on\r\n"), 470),
        (get("GET", "/c", "x-flag: off\r\n"), 200),
        (get("GET", "/c", ""), 200),
    ];
    for (i, (request, want)) in cases.iter().enumerate() {
        for proxy in [&pair.fast, &pair.hyper] {
            let mut c = Client::connect(proxy).await;
            c.send(request).await;
            let answer = c.answers(1, false).await.remove(0);
            assert_eq!(answer.status, *want, "case {i}");
            let e = events(proxy, i + 1).await.remove(i);
            assert_eq!(e.rule.as_deref(), (*want == 470).then_some("r"), "case {i}");
        }
    }
    pair.shutdown().await;
}
