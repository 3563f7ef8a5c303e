//! retry-storm: many clients, one key each, seeded random faults from the proxy; each client retries
//! with exponential backoff and jitter, keeping its key, until it gets a 2xx. Afterwards the resources
//! created equal the keys, exactly, and every client holds the same id for its key (article: retries
//! with backoff; ietf-draft-07 §2.6).

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemspec_scenarios::scenario::{KeySpec, Operation, Scenario, Step, Via};
use rand::{Rng, SeedableRng};

use super::judgement;
use crate::client::Exchange;
use crate::model::Evidence;
use crate::runner::context::{CheckState, Env};
use crate::runner::observe;
use crate::runner::steps::send_one;
use crate::runner::verdict::{Finding, Judgement};

/// Defaults when the scenario gives no parameters.
const CLIENTS: u32 = 12;
const ATTEMPTS: u32 = 40;
const WITHIN: Duration = Duration::from_secs(30);
const BASE_BACKOFF_MS: u64 = 40;
const MAX_BACKOFF_MS: u64 = 640;

/// What one client ended with.
struct ClientRun {
    key: String,
    exchanges: Vec<Exchange>,
    id: Option<String>,
    confirm: Option<Exchange>,
}

pub(crate) async fn run(
    env: &Arc<Env>,
    scenario: &Scenario,
    state: &CheckState,
    proxy_urls: Option<&[String]>,
) -> (Vec<Judgement>, Vec<Evidence>) {
    let p = &scenario.parameters;
    let clients = p.clients.unwrap_or(CLIENTS);
    let attempts = p.attempts.unwrap_or(ATTEMPTS);
    let within = p.within.map_or(WITHIN, |w| w.0);
    let seed = p.seed.unwrap_or(0);
    let barrier = Arc::new(tokio::sync::Barrier::new(clients as usize));
    let state = Arc::new(CheckState {
        marker: state.marker.clone(),
        results: Default::default(),
        counters_before: None,
        list_before_delete: None,
    });
    let proxy_urls: Option<Arc<Vec<String>>> = proxy_urls.map(|u| Arc::new(u.to_vec()));
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let env = env.clone();
            let state = state.clone();
            let barrier = barrier.clone();
            let urls = proxy_urls.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                client(
                    &env,
                    &state,
                    i,
                    seed,
                    attempts,
                    within,
                    urls.as_deref().map(Vec::as_slice),
                )
                .await
            })
        })
        .collect();
    let mut runs = Vec::new();
    for t in tasks {
        if let Ok(run) = t.await {
            runs.push(run);
        }
    }
    judge(env, scenario, &state, clients, runs).await
}

#[allow(clippy::too_many_arguments)]
async fn client(
    env: &Env,
    state: &CheckState,
    index: u32,
    seed: u64,
    attempts: u32,
    within: Duration,
    proxy_urls: Option<&[String]>,
) -> ClientRun {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(u64::from(index)));
    let name = format!("storm-{index}");
    let key = KeySpec::Named(name.clone());
    let mut step = Step {
        index: 0,
        name: Some(name.clone()),
        op: Some(Operation::Create),
        wait: None,
        hook: None,
        principal: None,
        key: Some(key.clone()),
        body: Default::default(),
        on: None,
        concurrency: 1,
        timeout: Some(idemspec_scenarios::value::HumanDuration(
            Duration::from_secs(5),
        )),
        via: Via::Proxy,
        background: false,
        retry: None,
    };
    let started = Instant::now();
    let mut exchanges = Vec::new();
    let mut id = None;
    for attempt in 0..attempts {
        let ex = send_one(env, state, &step, proxy_urls).await;
        let ok = ex.is_success();
        if ok {
            id = env.created_id(&ex);
        }
        exchanges.push(ex);
        if ok || started.elapsed() > within {
            break;
        }
        let backoff = (BASE_BACKOFF_MS << attempt.min(4)).min(MAX_BACKOFF_MS);
        let jittered = rng.gen_range(backoff / 2..=backoff + backoff / 2);
        tokio::time::sleep(Duration::from_millis(jittered)).await;
    }
    // Once the storm is over, the key must still name the same resource.
    step.via = Via::Direct;
    let confirm = match id {
        Some(_) => Some(send_one(env, state, &step, None).await),
        None => None,
    };
    ClientRun {
        key: state.key_value(&key, &env.contract).unwrap_or_default(),
        exchanges,
        id,
        confirm,
    }
}

async fn judge(
    env: &Env,
    scenario: &Scenario,
    state: &CheckState,
    clients: u32,
    runs: Vec<ClientRun>,
) -> (Vec<Judgement>, Vec<Evidence>) {
    let mut judgements = Vec::new();
    let mut evidence = Vec::new();
    let sent: usize = runs.iter().map(|r| r.exchanges.len()).sum();
    let lost = runs
        .iter()
        .flat_map(|r| &r.exchanges)
        .filter(|e| e.status.is_none())
        .count();
    let unfinished: Vec<&ClientRun> = runs.iter().filter(|r| r.id.is_none()).collect();
    if !unfinished.is_empty() {
        for r in &unfinished {
            evidence.extend(r.exchanges.iter().map(|e| e.evidence.clone()));
        }
        judgements.push(judgement(
            scenario,
            Finding::Undecided(format!(
                "{} of {clients} clients never got a 2xx within their attempts",
                unfinished.len()
            )),
        ));
    }
    let mut inconsistent = Vec::new();
    for r in runs.iter().filter(|r| r.id.is_some()) {
        let confirmed = r.confirm.as_ref().and_then(|c| env.created_id(c));
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
            evidence.extend(r.exchanges.iter().map(|e| e.evidence.clone()));
            evidence.extend(r.confirm.iter().map(|e| e.evidence.clone()));
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
    judgements.push(judgement(
        scenario,
        if inconsistent.is_empty() {
            Finding::Held(format!("{finished} clients each kept one id for their key"))
        } else {
            Finding::Broken(inconsistent.join("; "))
        },
    ));
    let principal = env
        .principal(None)
        .expect("validated profiles have principal A");
    let count = observe::count_created(
        env,
        principal,
        &state.marker,
        runs.iter().flat_map(|r| r.exchanges.iter()),
    )
    .await;
    judgements.push(judgement(
        scenario,
        match count {
            Err(e) => Finding::Undecided(format!("could not count resources: {e}")),
            Ok(n) if n == u64::from(clients) => Finding::Held(format!(
                "{n} resources for {clients} keys after {sent} requests ({lost} without a response)"
            )),
            Ok(n) => Finding::Broken(format!(
                "{n} resources exist for {clients} keys after {sent} requests ({lost} without a response); expected exactly {clients}"
            )),
        },
    ));
    (judgements, evidence)
}
