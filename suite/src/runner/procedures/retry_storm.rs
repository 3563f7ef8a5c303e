//! retry-storm: many clients on one key each, or sharing keys (`parameters.keys`: client N uses key
//! N mod keys), seeded random faults from the proxy; each client retries with exponential backoff and
//! jitter, keeping its key, until it gets a 2xx. Afterwards the resources created equal the keys,
//! exactly, and every client of a key holds the same id, before and after the storm (article: retries
//! with backoff; ietf-draft-07 §2.6).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{KeySpec, Operation, Via};
use rand::{Rng, SeedableRng};

use super::Procedure;
use crate::engine::{Finding, Judgement};
use crate::http_client::Exchange;
use crate::runner::context::reading::refused;
use crate::runner::context::{CheckRun, Sender};

/// `retry-storm`: many clients retrying through seeded random faults.
pub(crate) struct RetryStorm;

/// The built-in check: its header as a scenario has it.
const SCENARIO: &str = r#"version: 1
id: retry-storm
title: Many clients retrying through random faults with backoff create exactly one resource per key
level: MUST
reference: "article: retries with backoff and jitter, keeping the key; ietf-draft-07 §2.6"
procedure: retry-storm
parameters: {clients: 12, attempts: 40, seed: 42, within: 30s}
faults:
  - name: storm-refuse
    match: {probability: 0.15, seed: 7}
    fault: {refuse: {}}
  - name: storm-drop-response
    match: {probability: 0.2, seed: 11}
    fault: {drop_response: {}}
  - name: storm-bad-gateway
    match: {probability: 0.1, seed: 13}
    fault: {respond: {status: 502, body: "bad gateway (injected by idemspec)"}}
"#;

impl Procedure for RetryStorm {
    fn name(&self) -> &'static str {
        "retry-storm"
    }

    fn scenario(&self) -> &'static str {
        SCENARIO
    }

    fn parameters(&self) -> &'static [&'static str] {
        &["clients", "keys", "attempts", "seed", "within"]
    }

    fn judge<'a>(&'a self, check: &'a CheckRun) -> BoxFuture<'a, Vec<Judgement>> {
        Box::pin(run(check))
    }
}

/// Defaults when the scenario gives no parameters.
const CLIENTS: u32 = 12;
const ATTEMPTS: u32 = 40;
const WITHIN: Duration = Duration::from_secs(30);
const BASE_BACKOFF_MS: u64 = 40;
const MAX_BACKOFF_MS: u64 = 640;

/// What one client ended with.
struct StormClient {
    /// The client's step name (`storm-N`), which tags its requests.
    step: String,
    /// Which of the storm's keys the client uses (0-based; client N uses N mod keys).
    key_index: u32,
    key: String,
    exchanges: Vec<Exchange>,
    id: Option<String>,
    confirm: Option<Exchange>,
}

impl StormClient {
    /// The permanent refusal this client ended with, if it ended with one.
    fn refusal(&self, contract: &Contract) -> Option<&Exchange> {
        match self.exchanges.last() {
            Some(e) if self.id.is_none() && is_permanent_refusal(e, contract) => Some(e),
            _ => None,
        }
    }
}

/// Whether `exchange` got a 4xx a client must not retry: every 4xx but 408, 409, 425 and 429,
/// which say "try again" (RFC 9110 §15.5; the article's list of what is never stored), and the
/// contract's `in_flight_status`, which says the key's first request is still running (an API that
/// answers 423 there asks for a retry as surely as one that answers 409).
fn is_permanent_refusal(exchange: &Exchange, contract: &Contract) -> bool {
    exchange.status.is_some_and(|status| {
        (400..500).contains(&status)
            && !matches!(status, 408 | 409 | 425 | 429)
            && !refused(exchange, contract)
    })
}

/// How each client behaves.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// How many keys the clients share (client N uses key N mod keys).
    keys: u32,
    seed: u64,
    attempts: u32,
    within: Duration,
}

async fn run(run: &CheckRun) -> Vec<Judgement> {
    let p = &run.scenario.parameters;
    let clients = p.clients.as_ref().map_or(CLIENTS, |n| n.value);
    let plan = Plan {
        // The loader holds `keys` to at most `clients`; `min` keeps every key used all the same.
        keys: p
            .keys
            .as_ref()
            .map_or(clients, |n| n.value)
            .clamp(1, clients.max(1)),
        seed: p.seed.as_ref().map_or(0, |n| n.value),
        attempts: p.attempts.as_ref().map_or(ATTEMPTS, |n| n.value),
        within: p.within.as_ref().map_or(WITHIN, |w| w.value.0),
    };
    let barrier = Arc::new(tokio::sync::Barrier::new(clients as usize));
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let sender = run.sender.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                client(&sender, i, plan).await
            })
        })
        .collect();
    let mut runs = Vec::new();
    for t in tasks {
        if let Ok(run) = t.await {
            runs.push(run);
        }
    }
    judge(run, clients, plan.keys, runs).await
}

/// Sends `send()` until a 2xx or a permanent refusal, with exponential backoff and jitter, for at
/// most the plan's attempts and time; every exchange, in order.
async fn retry<F: std::future::Future<Output = Exchange>>(
    mut send: impl FnMut() -> F,
    rng: &mut rand::rngs::StdRng,
    plan: Plan,
    contract: &Contract,
) -> Vec<Exchange> {
    let started = Instant::now();
    let mut exchanges = Vec::new();
    for attempt in 0..plan.attempts {
        let ex = send().await;
        let done = ex.is_success() || is_permanent_refusal(&ex, contract);
        exchanges.push(ex);
        if done || started.elapsed() > plan.within {
            break;
        }
        let backoff = (BASE_BACKOFF_MS << attempt.min(4)).min(MAX_BACKOFF_MS);
        let jittered = rng.gen_range(backoff / 2..=backoff + backoff / 2);
        tokio::time::sleep(Duration::from_millis(jittered)).await;
    }
    exchanges
}

/// One client: retries its create with exponential backoff and jitter, keeping its key, until a
/// 2xx, its attempts or its time run out; then asks again, direct, whether the key still names
/// the same resource, until a definitive answer.
async fn client(sender: &Sender, index: u32, plan: Plan) -> StormClient {
    let mut rng = rand::rngs::StdRng::seed_from_u64(plan.seed.wrapping_add(u64::from(index)));
    let step = format!("storm-{index}");
    let key_index = index % plan.keys;
    let key = KeySpec::Named(format!("storm-key-{key_index}"));
    let request = |via: Via| {
        sender
            .request(&step, Operation::Create)
            .key(Some(&key))
            .via(via)
            .timeout(Some(Duration::from_secs(5)))
    };
    let contract = &sender.ctx().contract;
    let exchanges = retry(|| request(Via::Proxy).send(), &mut rng, plan, contract).await;
    let id = exchanges
        .last()
        .filter(|e| e.is_success())
        .and_then(|e| sender.ctx().created_id(e));
    // Once the client is done, the key must still name the same resource. Asked directly, and
    // again while the answer is "try again" (no response: a replica may be down; 409: a record
    // reclaimed after its in-flight TTL is being finished by another request).
    let confirm = match id {
        Some(_) => retry(|| request(Via::Direct).send(), &mut rng, plan, contract)
            .await
            .pop(),
        None => None,
    };
    StormClient {
        key: sender.key_value(&key).unwrap_or_default(),
        key_index,
        step,
        exchanges,
        id,
        confirm,
    }
}

/// What the clients of one key ended with, together.
struct KeyRun<'a> {
    clients: Vec<&'a StormClient>,
}

impl KeyRun<'_> {
    /// The ids the key's clients got during the storm, each once.
    fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .clients
            .iter()
            .filter_map(|r| r.id.as_deref())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Refused for good: no client of the key got a 2xx, one got a permanent 4xx, and the proxy
    /// saw no create with the key succeed upstream (one that did was accepted, whatever its client
    /// heard afterwards: its resource exists).
    fn refused(&self, contract: &Contract, ran_upstream: &[&str]) -> bool {
        self.ids().is_empty()
            && self.clients.iter().any(|r| r.refusal(contract).is_some())
            && !self
                .clients
                .first()
                .is_some_and(|r| ran_upstream.contains(&r.key.as_str()))
    }
}

/// The keys of the creates the proxy saw succeed upstream (a 2xx from the target), each once.
fn ran_upstream(run: &CheckRun) -> Vec<String> {
    // Read from each request as sent, paired with what the proxy saw upstream: the key may ride
    // in a header, a query or a body (`contract.key_at`), and the proxy records only a header.
    let mut keys: Vec<String> = run
        .exchanges_so_far()
        .into_iter()
        .filter(|e| {
            e.evidence
                .proxy
                .as_ref()
                .and_then(|p| p.upstream_status)
                .is_some_and(|s| (200..300).contains(&s))
        })
        .filter_map(|e| e.evidence.request.idempotency_key)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// At most this many of a storm's broken keys are named in its sentence; the evidence has every
/// exchange.
const NAMED_KEYS: usize = 3;

/// `items` as one sentence that leads with their count: the first [`NAMED_KEYS`], then how many
/// more (a 100-key storm is one line, not a paragraph per key).
fn bounded(what: &str, items: &[String]) -> String {
    match cut(items) {
        ([], _) => String::new(),
        (named, 0) => format!("{} {what}: {}", named.len(), named.join("; ")),
        (named, more) => format!(
            "{} {what}, among them: {}; and {more} more (the evidence has every exchange)",
            items.len(),
            named.join("; "),
        ),
    }
}

/// The first [`NAMED_KEYS`] of `items`, and how many are left unnamed.
fn cut<T>(items: &[T]) -> (&[T], usize) {
    let named = &items[..items.len().min(NAMED_KEYS)];
    (named, items.len() - named.len())
}

async fn judge(run: &CheckRun, clients: u32, keys: u32, runs: Vec<StormClient>) -> Vec<Judgement> {
    let contract = run.contract();
    let mut judgements = Vec::new();
    let sent: usize = runs.iter().map(|r| r.exchanges.len()).sum();
    let lost = runs
        .iter()
        .flat_map(|r| &r.exchanges)
        .filter(|e| e.status.is_none())
        .count();
    let by_key: Vec<KeyRun> = (0..keys)
        .map(|k| KeyRun {
            clients: runs.iter().filter(|r| r.key_index == k).collect(),
        })
        .collect();
    // A client refused with a permanent 4xx got a definitive answer: it stops, as a client should,
    // and its key must have created nothing.
    let refused: Vec<&StormClient> = runs
        .iter()
        .filter(|r| r.refusal(contract).is_some())
        .collect();
    let upstream = ran_upstream(run);
    let upstream: Vec<&str> = upstream.iter().map(String::as_str).collect();
    let refused_keys = by_key
        .iter()
        .filter(|k| k.refused(contract, &upstream))
        .count() as u64;
    let refused_but_ran = by_key
        .iter()
        .filter(|k| k.ids().is_empty() && k.clients.iter().any(|r| r.refusal(contract).is_some()))
        .count() as u64
        - refused_keys;
    if !refused.is_empty() {
        let mut seen: Vec<String> = Vec::new();
        for r in &refused {
            let d = r
                .refusal(contract)
                .map(Exchange::describe)
                .unwrap_or_default();
            if !seen.contains(&d) {
                seen.push(d);
            }
        }
        let ran = if refused_but_ran == 0 {
            "so their keys count for no resource".to_owned()
        } else {
            format!(
                "but the proxy saw {refused_but_ran} of their keys' creates succeed upstream, so \
                 those keys count as accepted"
            )
        };
        let finding = Finding::Held(format!(
            "{} of {clients} clients were refused for good ({}), {ran}",
            refused.len(),
            seen.join(", ")
        ));
        let steps = refused.iter().map(|r| r.step.clone());
        judgements.push(Judgement::new(finding).on_steps(steps));
    }
    let unfinished: Vec<&StormClient> = runs
        .iter()
        .filter(|r| r.id.is_none() && r.refusal(contract).is_none())
        .collect();
    if !unfinished.is_empty() {
        let finding = Finding::Undecided(format!(
            "{} of {clients} clients got neither a 2xx nor a permanent refusal within their attempts",
            unfinished.len()
        ));
        let steps = unfinished.iter().map(|r| r.step.clone());
        judgements.push(Judgement::new(finding).on_steps(steps));
    }
    let mut inconsistent = Vec::new();
    let mut inconsistent_steps = Vec::new();
    // A confirmation that never got a definitive answer says nothing about the key.
    let definitive = |c: &Exchange| c.is_success() || is_permanent_refusal(c, contract);
    let unconfirmed: Vec<&StormClient> = runs
        .iter()
        .filter(|r| r.id.is_some() && !r.confirm.as_ref().is_some_and(definitive))
        .collect();
    if !unconfirmed.is_empty() {
        let finding = Finding::Undecided(format!(
            "{} of {clients} clients could not ask again, after the storm, what their key names (last: {})",
            unconfirmed.len(),
            unconfirmed
                .first()
                .and_then(|r| r.confirm.as_ref())
                .map(Exchange::describe)
                .unwrap_or_default()
        ));
        let steps = unconfirmed.iter().map(|r| r.step.clone());
        judgements.push(Judgement::new(finding).on_steps(steps));
    }
    let mut reported_keys = Vec::new();
    for r in runs.iter().filter(|r| r.id.is_some()) {
        let Some(confirm) = r.confirm.as_ref().filter(|c| definitive(c)) else {
            continue;
        };
        let confirmed = run.ctx().created_id(confirm);
        if confirmed != r.id && !reported_keys.contains(&r.key_index) {
            reported_keys.push(r.key_index);
            let afterwards = match (&confirmed, r.confirm.as_ref()) {
                (Some(other), _) => other.clone(),
                (None, Some(c)) => format!("{} without an id", c.describe()),
                (None, None) => "nothing".to_owned(),
            };
            inconsistent.push(format!(
                "key {} got {} during the storm but {afterwards} afterwards",
                r.key,
                r.id.as_deref().unwrap_or("?"),
            ));
            inconsistent_steps.push(r.step.clone());
        }
    }
    for k in &by_key {
        let ids = k.ids();
        let key = k.clients.first().map(|r| r.key.as_str()).unwrap_or("?");
        if ids.len() > 1 {
            let shown = match cut(&ids) {
                (named, 0) => named.join(", "),
                (named, more) => format!("{}, and {more} more", named.join(", ")),
            };
            inconsistent.push(format!(
                "the {} clients of key {key} got {} different ids ({shown})",
                k.clients.len(),
                ids.len(),
            ));
            inconsistent_steps.extend(k.clients.iter().map(|r| r.step.clone()));
        } else if let (Some(id), Some(refusal)) = (
            ids.first(),
            k.clients.iter().find_map(|r| r.refusal(contract)),
        ) {
            inconsistent.push(format!(
                "key {key} created {id} for one client and refused another for good ({})",
                refusal.describe()
            ));
            inconsistent_steps.extend(k.clients.iter().map(|r| r.step.clone()));
        }
    }
    let mut ids: Vec<&str> = by_key.iter().flat_map(KeyRun::ids).collect();
    let finished_keys = by_key.iter().filter(|k| !k.ids().is_empty()).count();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != finished_keys {
        inconsistent.push(format!(
            "{finished_keys} keys got only {} distinct ids",
            ids.len()
        ));
    }
    let finished = runs.iter().filter(|r| r.id.is_some()).count();
    let unread: Vec<&Exchange> = runs
        .iter()
        .filter(|r| r.id.is_none())
        .filter_map(|r| r.exchanges.last().filter(|e| e.is_success()))
        .collect();
    if finished == 0 && !unread.is_empty() {
        // Creates were accepted, but the profile's `create.id` reads no id from them.
        let first = unread[0];
        let body = String::from_utf8_lossy(&first.body[..first.body.len().min(80)]).into_owned();
        judgements.push(Judgement::new(Finding::Undecided(format!(
            "{} client(s) got a {} but {} (first body: `{}`), so the storm judged nothing; \
                 check `operations.create.id` in the target profile",
            unread.len(),
            first.describe(),
            run.ctx().missing_id(first),
            body.trim()
        ))));
        return judgements;
    }
    if finished == 0 {
        // No create was accepted: "one id per key" and "resources = accepted keys" would both
        // hold of nothing.
        let statuses: Vec<String> = refused
            .iter()
            .filter_map(|r| r.refusal(contract).and_then(|e| e.status))
            .map(|s| s.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let hint = if statuses.is_empty() {
            String::new()
        } else {
            format!(
                "; if {} means the key's first request is still running, declare it in \
                 `contract.in_flight_status`",
                statuses.join(" or ")
            )
        };
        judgements.push(Judgement::new(Finding::Undecided(format!(
            "no client's create was accepted, so the storm judged nothing{hint}"
        ))));
        return judgements;
    }
    let consistency = if inconsistent.is_empty() && keys == clients {
        Finding::Held(format!("{finished} clients each kept one id for their key"))
    } else if inconsistent.is_empty() {
        Finding::Held(format!(
            "{finished} clients on {finished_keys} keys kept one id per key"
        ))
    } else {
        Finding::Broken(bounded(
            "signs that keys did not keep one id",
            &inconsistent,
        ))
    };
    // Every key that was not refused must end as one resource (an unanswered one may still be
    // running, which only makes too few undecidable). The totals lead the sentence: they are what
    // a reader needs first.
    let expected = u64::from(keys) - refused_keys;
    let confirmations = runs.iter().filter(|r| r.confirm.is_some()).count();
    let requests = format!(
        "{sent} storm requests ({lost} without a response) and {confirmations} confirmations \
         asked directly afterwards"
    );
    let finding = match run.count(None).await {
        Err(e) => Finding::Undecided(format!("could not count resources: {e}")),
        Ok(n) if n == expected => Finding::Held(format!(
            "{n} resources for {expected} accepted keys after {requests}"
        )),
        Ok(n) if n < expected && !unfinished.is_empty() => Finding::Undecided(format!(
            "{n} resources exist for {expected} accepted keys after {requests}, fewer than expected, but {} clients never got an answer, so their work may still be running",
            unfinished.len()
        )),
        Ok(n) => Finding::Broken(format!(
            "{n} resources exist for {expected} accepted keys after {requests}; expected exactly {expected}"
        )),
    };
    judgements.push(Judgement::new(finding));
    judgements.push(Judgement::new(consistency).on_steps(inconsistent_steps));
    judgements
}
