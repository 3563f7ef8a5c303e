//! `idemspec client --discover`: where does this client put its key? The command runs three
//! times against canned upstreams of their own, through the proxy: two clean runs (two logical
//! operations) and one whose first attempt's response is lost after the upstream answered it (so
//! the client retries). Every place the operation's requests carry a value (each header, query
//! parameter, form field and JSON member, [`KeyAt::every_place`]) is a candidate when its value
//! is fresh per operation (the two clean runs differ) and kept across the retry (the retried
//! run's attempts agree). Candidates are ranked by their names and values, most key-like first.
//! Headers that are known to carry something else ([`NOT_KEYS`]: request ids, traces, dates,
//! signatures, telemetry) are never ranked: they are listed as seen, not a key, unless the
//! profile's `contract.key_at` names one (an API may document its request id as its key).

use idemspec_scenarios::profile::KeyAt;
use idemspec_scenarios::rules::Fault;

use super::canned::{CannedUpstream, Received};
use super::command::Exit;
use super::situation::{Situation, Times};
use super::Ctx;

/// A place whose value behaves like an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Where it is, as `contract.key_at` writes it.
    pub at: KeyAt,
    /// Its value in the first and the second clean run.
    pub values: (String, String),
    /// Whether the retried run's attempts carried it, each with the same value (`None`: the
    /// client did not retry, so constancy was not seen).
    pub kept_on_retry: Option<bool>,
    /// How key-like its name and value look; higher first.
    pub score: i32,
    /// Why its name says it is no key ([`NOT_KEYS`]), when it does.
    pub not_a_key: Option<&'static str>,
}

/// What the three runs showed.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The candidates, most key-like first: none of them is in [`NOT_KEYS`] unless the profile's
    /// `contract.key_at` names it.
    pub candidates: Vec<Candidate>,
    /// The places that behaved like a key but whose names say they are not one ([`NOT_KEYS`]),
    /// in the order the requests carried them.
    pub not_keys: Vec<Candidate>,
    /// Why nothing could be learned, when the command did not make its requests.
    pub problem: Option<String>,
    /// Whether the client retried after the lost response.
    pub retried: bool,
    /// Why idemspec could not read some of the operation's request bodies, when it could not
    /// (`the bodies of 3 of 4 requests: the body is over 1024 KiB, …`): a key in them was not seen.
    pub unread_bodies: Option<String>,
}

impl Ctx {
    /// Runs the discovery (see the module documentation).
    pub async fn discover(&self) -> Discovery {
        let clean = || Situation::new("discover", Vec::new());
        let lost = Situation::new(
            "discover",
            vec![self.plan("lost", Fault::DropResponse {}, Times::First(1))],
        );
        let mut seen: Vec<Vec<Received>> = Vec::new();
        for situation in [clean(), clean(), lost] {
            let upstream = match CannedUpstream::start(&self.profile).await {
                Ok(upstream) => upstream,
                Err(e) => {
                    return Discovery::failed(format!("the canned upstream did not start: {e}"))
                }
            };
            let run = self
                .once(&situation, &upstream.url(), std::future::pending())
                .await;
            let received = upstream.received();
            if received.is_empty() {
                let exit = match &run.output.exit {
                    Exit::Code(0) => "exited 0".to_owned(),
                    other => other.to_string(),
                };
                return Discovery::failed(format!(
                    "the command made no {} request ({exit}){}",
                    self.operation_label(),
                    run.output
                        .excerpt()
                        .map(|o| format!("; output: {o}"))
                        .unwrap_or_default()
                ));
            }
            seen.push(received);
        }
        let (not_keys, mut candidates): (Vec<Candidate>, Vec<Candidate>) =
            candidates(&seen).into_iter().partition(|c| match &c.at {
                KeyAt::Header(name) => {
                    c.not_a_key.is_some() && !self.contract.key_at.matches_header(name)
                }
                _ => false,
            });
        candidates.sort_by_key(|c| std::cmp::Reverse(c.score));
        Discovery {
            candidates,
            not_keys,
            problem: None,
            retried: seen[2].len() > 1,
            unread_bodies: unread_bodies(&seen),
        }
    }
}

impl Discovery {
    pub(super) fn failed(problem: String) -> Self {
        Self {
            candidates: Vec::new(),
            not_keys: Vec::new(),
            problem: Some(problem),
            retried: false,
            unread_bodies: None,
        }
    }
}

/// Every place of the two clean runs' first requests (`seen[0]`, `seen[1]`) whose value is fresh
/// per operation and not seen to change across the retried run's attempts (`seen[2]`).
fn candidates(seen: &[Vec<Received>]) -> Vec<Candidate> {
    let places = |r: &Received| KeyAt::every_place(&r.target, &r.headers, r.body.as_deref());
    let (first, second) = (places(&seen[0][0]), places(&seen[1][0]));
    let retried_places: Vec<Vec<(KeyAt, String)>> = seen[2].iter().map(places).collect();
    first
        .iter()
        .filter(|(at, _)| !framing(at))
        .filter_map(|(at, v1)| {
            let v2 = value_at(&second, at)?;
            if *v1 == v2 || v1.is_empty() {
                return None;
            }
            let kept_on_retry = (retried_places.len() > 1).then(|| {
                let values: Vec<Option<String>> =
                    retried_places.iter().map(|p| value_at(p, at)).collect();
                values[0].is_some() && values.iter().all(|v| *v == values[0])
            });
            if kept_on_retry == Some(false) {
                return None;
            }
            Some(Candidate {
                at: at.clone(),
                score: score(at, v1),
                values: (v1.clone(), v2),
                kept_on_retry,
                not_a_key: not_a_key(at),
            })
        })
        .collect()
}

/// Why the bodies of the requests `seen` could not be read, when some could not: how many, and
/// the first reason.
fn unread_bodies(seen: &[Vec<Received>]) -> Option<String> {
    let all: Vec<&Received> = seen.iter().flatten().collect();
    let unread: Vec<&str> = all
        .iter()
        .filter_map(|r| r.body_unread.as_deref())
        .collect();
    let first = unread.first()?;
    Some(format!(
        "the bodies of {} of {} requests: {first}",
        unread.len(),
        all.len()
    ))
}

/// The value at `at` among `places`.
fn value_at(places: &[(KeyAt, String)], at: &KeyAt) -> Option<String> {
    places.iter().find(|(a, _)| a == at).map(|(_, v)| v.clone())
}

/// Places that cannot carry a key (the key's own rule: framing, connection and idemspec's
/// headers), and the headers every client sends alike for content negotiation.
fn framing(at: &KeyAt) -> bool {
    at.problem().is_some()
        || matches!(at, KeyAt::Header(name)
            if ["accept", "accept-encoding"].contains(&name.as_str()))
}

/// Request headers whose value can be fresh per operation and kept across its retries, and yet
/// is no idempotency key: the server reads it for something else, or not at all, so a key-present
/// check pointed at it would PASS a client that sends no key. Each is a lower-case name, or a
/// prefix ending in `*`, with why. A vendor whose API documents one of these as its key (a few
/// do with `X-Request-Id`) names it in `contract.key_at`, and `--discover` lists it as a place.
pub const NOT_KEYS: &[(&str, &str)] = &[
    ("x-request-id", "a request id for logs and support; most servers do not deduplicate on it"),
    ("x-correlation-id", "a correlation id for logs across services"),
    ("x-client-request-id", "a client's id of one call for logs and support"),
    ("x-ms-client-request-id", "the Azure SDKs' id of one call, kept across its retries for logs"),
    ("x-ms-request-id", "an Azure request id for logs and support"),
    ("sentry-trace", "a Sentry trace and span id"),
    ("x-datadog-*", "a Datadog trace, span or sampling decision"),
    ("uber-trace-id", "a Jaeger trace (Uber's header)"),
    ("x-ot-span-context", "an OpenTracing span context"),
    ("amz-sdk-invocation-id", "the AWS SDKs' id of one call, kept across its retries for their telemetry; AWS deduplicates on a ClientToken"),
    ("amz-sdk-request", "the AWS SDKs' attempt counter (`attempt=1; max=3`)"),
    ("x-amzn-trace-id", "an AWS X-Ray trace id"),
    ("x-amz-date", "the time the request was signed (AWS Signature Version 4)"),
    ("x-amz-security-token", "temporary credentials' session token"),
    ("x-amz-content-sha256", "the body's SHA-256 for the signature: it follows the body, a key in it included"),
    ("authorization", "credentials, or a signature over the request and its date"),
    ("date", "the time the request was sent (RFC 9110 §6.6.1)"),
    ("traceparent", "a W3C Trace Context trace and span id"),
    ("tracestate", "vendor data of a W3C Trace Context trace"),
    ("baggage", "W3C Baggage: context propagated with a trace"),
    ("b3", "a Zipkin B3 trace (single header)"),
    ("x-b3-*", "a Zipkin B3 trace, span or sampling decision"),
    ("x-cloud-trace-context", "a Google Cloud trace id"),
    ("x-stainless-*", "telemetry of SDKs Stainless generates (language, version, retry count)"),
    ("user-agent", "the client's name and version, some with a per-call id"),
];

/// Why the place `at` is no key, when its name is in [`NOT_KEYS`] (headers only).
pub fn not_a_key(at: &KeyAt) -> Option<&'static str> {
    let KeyAt::Header(name) = at else { return None };
    let name = name.to_ascii_lowercase();
    NOT_KEYS
        .iter()
        .find(|(known, _)| match known.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *known,
        })
        .map(|(_, why)| *why)
}

/// How key-like a place looks: its name says idempotency, a token, a request id or a key; its
/// value is long and random-looking; names of signatures, dates and traces count against it
/// (they change per request and can repeat within a second).
fn score(at: &KeyAt, value: &str) -> i32 {
    let name = match at {
        KeyAt::Header(n)
        | KeyAt::Query(n)
        | KeyAt::Form(n)
        | KeyAt::Json(n)
        | KeyAt::HeaderMatching(n) => n.to_lowercase(),
    };
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    let mut score = 0;
    if has(&["idempot"]) {
        score += 4;
    }
    if has(&["token", "request", "key", "nonce"]) {
        score += 2;
    }
    if value.len() >= 16
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c))
    {
        score += 1;
    }
    if has(&[
        "authorization",
        "signature",
        "date",
        "sha256",
        "trace",
        "span",
        "invocation",
        "timestamp",
    ]) {
        score -= 3;
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_say_idempotency_rank_above_signatures_and_dates() {
        let uuid = "0b6f1e3a-8c2d-4f5e-9a7b-1c2d3e4f5a6b";
        let key = score(&KeyAt::Header("idempotency-key".into()), uuid);
        let token = score(&KeyAt::Form("ClientToken".into()), uuid);
        let invocation = score(&KeyAt::Header("amz-sdk-invocation-id".into()), uuid);
        let date = score(&KeyAt::Header("x-amz-date".into()), "20261205T101010Z");
        assert!(key > token && token > invocation && token > date);
        assert!(
            invocation < 0 && date < 0,
            "a trace id and a date count against"
        );
    }

    #[test]
    fn request_ids_traces_and_telemetry_are_named_not_keys_and_keys_are_not() {
        let header = |n: &str| not_a_key(&KeyAt::Header(n.into()));
        for name in [
            "X-Request-Id",
            "traceparent",
            "X-B3-TraceId",
            "x-stainless-retry-count",
            "x-ms-client-request-id",
            "sentry-trace",
            "x-datadog-trace-id",
            "uber-trace-id",
            "X-Client-Request-Id",
        ] {
            assert!(header(name).is_some(), "{name}");
        }
        for name in ["Idempotency-Key", "x-b3", "X-Request-Token", "dates"] {
            assert!(header(name).is_none(), "{name}");
        }
        assert!(
            not_a_key(&KeyAt::Json("date".into())).is_none(),
            "only headers"
        );
    }
}
