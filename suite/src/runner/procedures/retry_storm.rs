//! retry-storm: many clients, one key each, seeded random faults from the proxy; each client retries
//! with exponential backoff and jitter, keeping its key, until it gets a 2xx. Afterwards the resources
//! created equal the keys, exactly, and every client holds the same id for its key (article: retries
//! with backoff; ietf-draft-07 §2.6).

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemspec_scenarios::scenario::{KeySpec, Operation, Via};
use rand::{Rng, SeedableRng};

use crate::client::Exchange;
use crate::runner::check::{CheckRun, Sender};
use crate::runner::verdict::{Finding, Judgement};

/// Defaults when the scenario gives no parameters.
const CLIENTS: u32 = 12;
const ATTEMPTS: u32 = 40;
const WITHIN: Duration = Duration::from_secs(30);
const BASE_BACKOFF_MS: u64 = 40;
const MAX_BACKOFF_MS: u64 = 640;

/// What one client ended with.
struct ClientRun {
    /// The client's step name (`storm-N`), which tags its requests.
    step: String,
    key: String,
    exchanges: Vec<Exchange>,
    id: Option<String>,
    confirm: Option<Exchange>,
}

impl ClientRun {
    /// The permanent refusal this client ended with, if it ended with one.
    fn refusal(&self) -> Option<&Exchange> {
        match self.exchanges.last() {
            Some(e) if self.id.is_none() && e.status.is_some_and(is_permanent_refusal) => Some(e),
            _ => None,
        }
    }
}

/// A 4xx a client must not retry: every 4xx but 408, 409, 425 and 429, which say "try again"
/// (RFC 9110 §15.5; the article's list of what is never stored).
fn is_permanent_refusal(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 408 | 409 | 425 | 429)
}

/// How each client behaves.
#[derive(Debug, Clone, Copy)]
struct Plan {
    seed: u64,
    attempts: u32,
    within: Duration,
}

pub(crate) async fn run(run: &CheckRun) -> Vec<Judgement> {
    let p = &run.scenario.parameters;
    let clients = p.clients.unwrap_or(CLIENTS);
    let plan = Plan {
        seed: p.seed.unwrap_or(0),
        attempts: p.attempts.unwrap_or(ATTEMPTS),
        within: p.within.map_or(WITHIN, |w| w.0),
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
    judge(run, clients, runs).await
}

/// One client: retries its create with exponential backoff and jitter, keeping its key, until a
/// 2xx, its attempts or its time run out; then asks once more, direct, whether the key still names
/// the same resource.
async fn client(sender: &Sender, index: u32, plan: Plan) -> ClientRun {
    let mut rng = rand::rngs::StdRng::seed_from_u64(plan.seed.wrapping_add(u64::from(index)));
    let step = format!("storm-{index}");
    let key = KeySpec::Named(step.clone());
    let request = |via: Via| {
        sender
            .request(&step, Operation::Create)
            .key(Some(&key))
            .via(via)
            .timeout(Some(Duration::from_secs(5)))
    };
    let started = Instant::now();
    let mut exchanges = Vec::new();
    let mut id = None;
    for attempt in 0..plan.attempts {
        let ex = request(Via::Proxy).send().await;
        let ok = ex.is_success();
        if ok {
            id = sender.env().created_id(&ex);
        }
        let refused = ex.status.is_some_and(is_permanent_refusal);
        exchanges.push(ex);
        if ok || refused || started.elapsed() > plan.within {
            break;
        }
        let backoff = (BASE_BACKOFF_MS << attempt.min(4)).min(MAX_BACKOFF_MS);
        let jittered = rng.gen_range(backoff / 2..=backoff + backoff / 2);
        tokio::time::sleep(Duration::from_millis(jittered)).await;
    }
    // Once the storm is over, the key must still name the same resource.
    let confirm = match id {
        Some(_) => Some(request(Via::Direct).send().await),
        None => None,
    };
    ClientRun {
        key: sender.key_value(&key).unwrap_or_default(),
        step,
        exchanges,
        id,
        confirm,
    }
}

async fn judge(run: &CheckRun, clients: u32, runs: Vec<ClientRun>) -> Vec<Judgement> {
    let scenario = &run.scenario;
    let mut judgements = Vec::new();
    let sent: usize = runs.iter().map(|r| r.exchanges.len()).sum();
    let lost = runs
        .iter()
        .flat_map(|r| &r.exchanges)
        .filter(|e| e.status.is_none())
        .count();
    // A client refused with a permanent 4xx got a definitive answer: it stops, as a client should,
    // and its key must have created nothing.
    let refused: Vec<&ClientRun> = runs.iter().filter(|r| r.refusal().is_some()).collect();
    if !refused.is_empty() {
        let mut seen: Vec<String> = Vec::new();
        for r in &refused {
            let d = r.refusal().map(Exchange::describe).unwrap_or_default();
            if !seen.contains(&d) {
                seen.push(d);
            }
        }
        let finding = Finding::Held(format!(
            "{} of {clients} clients were refused for good ({}), so their keys count for no resource",
            refused.len(),
            seen.join(", ")
        ));
        let steps = refused.iter().map(|r| r.step.clone());
        judgements.push(Judgement::new(scenario, finding).on_steps(steps));
    }
    let unfinished: Vec<&ClientRun> = runs
        .iter()
        .filter(|r| r.id.is_none() && r.refusal().is_none())
        .collect();
    if !unfinished.is_empty() {
        let finding = Finding::Undecided(format!(
            "{} of {clients} clients got neither a 2xx nor a permanent refusal within their attempts",
            unfinished.len()
        ));
        let steps = unfinished.iter().map(|r| r.step.clone());
        judgements.push(Judgement::new(scenario, finding).on_steps(steps));
    }
    let mut inconsistent = Vec::new();
    let mut inconsistent_steps = Vec::new();
    for r in runs.iter().filter(|r| r.id.is_some()) {
        let confirmed = r.confirm.as_ref().and_then(|c| run.env().created_id(c));
        if confirmed != r.id {
            inconsistent.push(format!(
                "key {} got {} during the storm but {} afterwards",
                r.key,
                r.id.as_deref().unwrap_or("?"),
                r.confirm
                    .as_ref()
                    .map(Exchange::describe)
                    .unwrap_or_default()
            ));
            inconsistent_steps.push(r.step.clone());
        }
    }
    let mut ids: Vec<&str> = runs.iter().filter_map(|r| r.id.as_deref()).collect();
    ids.sort_unstable();
    ids.dedup();
    let finished = runs.iter().filter(|r| r.id.is_some()).count();
    if ids.len() != finished {
        inconsistent.push(format!(
            "{finished} keys got only {} distinct ids",
            ids.len()
        ));
    }
    let finding = if inconsistent.is_empty() {
        Finding::Held(format!("{finished} clients each kept one id for their key"))
    } else {
        Finding::Broken(inconsistent.join("; "))
    };
    judgements.push(Judgement::new(scenario, finding).on_steps(inconsistent_steps));
    // Every key that was not refused must end as one resource (an unanswered one may still be
    // running, which only makes too few undecidable).
    let expected = u64::from(clients) - refused.len() as u64;
    let finding = match run.count(None).await {
        Err(e) => Finding::Undecided(format!("could not count resources: {e}")),
        Ok(n) if n == expected => Finding::Held(format!(
            "{n} resources for {expected} accepted keys after {sent} requests ({lost} without a response)"
        )),
        Ok(n) if n < expected && !unfinished.is_empty() => Finding::Undecided(format!(
            "{n} resources exist for {expected} accepted keys after {sent} requests, fewer than expected, but {} clients never got an answer, so their work may still be running",
            unfinished.len()
        )),
        Ok(n) => Finding::Broken(format!(
            "{n} resources exist for {expected} accepted keys after {sent} requests ({lost} without a response); expected exactly {expected}"
        )),
    };
    judgements.push(Judgement::new(scenario, finding));
    judgements
}
