//! The crash soak: leasebroker runs as a child process on one database and is killed mid-create,
//! again and again, while clients keep creating workers and retrying each with its own key; then a
//! last process on the same database lets every client finish, and the soak checks what is left.
//!
//! Each kill is one of six kinds, a shuffled round so a short soak meets every kind: an abort armed
//! at each [`CrashPoint`] of a create (before the claim, after the lease, after the hypervisor call,
//! before the record is completed), a SIGKILL while boots hang inside the hypervisor call, and a
//! SIGKILL at a random moment. Afterwards it must hold that resources = keys: every key answered
//! 201, and its retry replays the same worker; each worker is one key's; one node, one lease and one
//! hypervisor instance per worker; no pending boot; no record in flight or failed; and no key was
//! refused as in flight for longer than the in-flight TTL (plus slack) at a stretch.
//!
//! Used by leasebroker's integration tests (a short soak per store) and by
//! `examples/soak.rs` (the long one). Bounded: a kill whose crash point is never reached, a server
//! that does not start and the whole run each have a time limit.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{ServerCommand, ServerProcess, SpawnError};
use crate::injection::CrashPoint;

/// How long a refusal as in flight may outlast the in-flight TTL at a stretch: a client's retry
/// interval, a request's time and the scheduling of a loaded machine.
pub const LOCKOUT_SLACK: Duration = Duration::from_secs(2);

/// The servers' node pool: far more than a soak creates, so running out means nodes leaked.
const POOL_SIZE: u32 = 20_000;

/// How long an armed crash point may wait for a create to reach it.
const CRASH_LIMIT: Duration = Duration::from_secs(30);

/// A client's pause after an answer that asks it to retry (a 409 in flight, a 5xx, no answer).
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// How long a restarted server may take to complete creates again (one per client) before it is
/// killed: keys a crash left in flight are free again after the in-flight TTL, so this bounds the
/// lockout too.
const PROGRESS_LIMIT: Duration = Duration::from_secs(20);

/// What to soak.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// How to start a server.
    pub server: ServerCommand,
    /// The database every server process opens (`--database-url`): a SQLite file or a PostgreSQL URL.
    pub database_url: String,
    /// How many servers are killed.
    pub kills: u32,
    /// How many clients create workers at once (each its own principal, keys in sequence).
    pub clients: usize,
    /// The seed of every random choice (kill order, delays).
    pub seed: u64,
    /// The servers' `--in-flight-ttl`.
    pub in_flight_ttl: Duration,
    /// The servers' `--boot-latency`.
    pub boot_latency: Duration,
    /// The most the whole soak may take.
    pub time_limit: Duration,
}

/// How a server was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kill {
    /// An abort armed at a crash point, when the next create reached it.
    Crash(CrashPoint),
    /// SIGKILL while boots hang inside the hypervisor call.
    SigkillInBoot,
    /// SIGKILL at a random moment.
    SigkillAtRandom,
}

impl Kill {
    /// Every kind, in a fixed order.
    pub const ALL: [Self; 6] = [
        Self::Crash(CrashPoint::BeforeClaim),
        Self::Crash(CrashPoint::AfterLease),
        Self::Crash(CrashPoint::AfterBootCall),
        Self::Crash(CrashPoint::BeforeComplete),
        Self::SigkillInBoot,
        Self::SigkillAtRandom,
    ];
}

/// What a soak did and saw; returned only when every check held.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// Servers killed, by kind.
    pub kills: BTreeMap<Kill, u32>,
    /// Keys created (each one worker).
    pub keys: usize,
    /// Requests the clients sent.
    pub attempts: u64,
    /// Answers `409 request-in-progress`.
    pub refused_in_flight: u64,
    /// Attempts with no answer (the server was dead or dying).
    pub unanswered: u64,
    /// Answers with a 5xx (retried).
    pub server_errors: u64,
    /// The longest stretch of `409 request-in-progress` one key met.
    pub longest_lockout: Duration,
    /// The soak's wall time.
    pub elapsed: Duration,
    /// The last server's admin statistics, after every client finished.
    pub stats: Value,
}

/// One line: the kills by kind, the keys and what they came to, the clients' attempts, the longest
/// lockout and the wall time.
impl std::fmt::Display for SoakReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kills: u32 = self.kills.values().sum();
        let by_kind: Vec<String> = self
            .kills
            .iter()
            .map(|(k, n)| format!("{k:?} {n}"))
            .collect();
        let count = |pointer: &str| self.stats.pointer(pointer).cloned().unwrap_or(Value::Null);
        write!(
            f,
            "{kills} kills ({}); {} keys: {} workers, {} nodes, {} leases, {} instances, \
             {} pending boots, {} records completed, {} in flight, {} failed; {} attempts: \
             {} refused in flight, {} unanswered, {} 5xx; longest lockout {} ms; {:.1} s",
            by_kind.join(", "),
            self.keys,
            count("/workers"),
            count("/nodes_allocated"),
            count("/leases"),
            count("/boots"),
            count("/pending_boots"),
            count("/idempotency_records/completed"),
            count("/idempotency_records/in_flight"),
            count("/idempotency_records/failed"),
            self.attempts,
            self.refused_in_flight,
            self.unanswered,
            self.server_errors,
            self.longest_lockout.as_millis(),
            self.elapsed.as_secs_f64(),
        )
    }
}

/// Why a soak failed.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// A server process could not be started.
    #[error("start a leasebroker process")]
    Start(#[from] SpawnError),
    /// A bound was exceeded: a crash point never reached, a client that never finished, the run.
    #[error("finish in time: {0}")]
    Stuck(String),
    /// The admin API could not be read or changed.
    #[error("reach the admin API: {0}")]
    Admin(String),
    /// A check failed: what should hold after the crashes does not.
    #[error("keep the invariants after the crashes: {}", .0.join("; "))]
    Violations(Vec<String>),
}

/// The soak's HTTP client: no pooled connections, since a pooled connection outlives the process
/// it was made to.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client without TLS builds")
}

/// A create of a worker labelled with its key, as `principal` with `key`.
fn create(
    http: &reqwest::Client,
    base: &str,
    principal: &str,
    key: &str,
) -> reqwest::RequestBuilder {
    http.post(format!("{base}/v1/workers"))
        .bearer_auth(principal)
        .header("idempotency-key", key)
        .json(&json!({"image": "soak", "cpu": 1, "memory_gb": 1, "labels": {"soak_key": key}}))
}

/// Runs a soak (see the module docs).
pub async fn run(config: &SoakConfig) -> Result<SoakReport, SoakError> {
    let limit = config.time_limit;
    tokio::time::timeout(limit, soak(config))
        .await
        .map_err(|_| SoakError::Stuck(format!("the soak took over {limit:?}")))?
}

async fn soak(config: &SoakConfig) -> Result<SoakReport, SoakError> {
    let started = Instant::now();
    let http = http();
    let mut rng = StdRng::seed_from_u64(config.seed);
    let (base_tx, base_rx) = watch::channel(None::<String>);
    let (stop_tx, stop_rx) = watch::channel(false);
    let created = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..config.clients)
        .map(|n| {
            let client = Client {
                principal: format!("soak-{n}"),
                http: http.clone(),
                base: base_rx.clone(),
                stop: stop_rx.clone(),
                created: created.clone(),
            };
            tokio::spawn(client.run())
        })
        .collect();
    let mut kills = BTreeMap::<Kill, u32>::new();
    let mut round = Vec::new();
    for _ in 0..config.kills {
        if round.is_empty() {
            round = Kill::ALL.to_vec();
            round.shuffle(&mut rng);
        }
        let kill = round.pop().expect("refilled above");
        let mut process = spawn(config).await?;
        base_tx.send_replace(Some(process.base.clone()));
        // Let the clients get work done on this server before it dies, so each kill interrupts
        // creates at every stage rather than the same few keys over and over.
        let target = created.load(Ordering::SeqCst) + config.clients as u64;
        let progress = async {
            while created.load(Ordering::SeqCst) < target {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        if tokio::time::timeout(PROGRESS_LIMIT, progress)
            .await
            .is_err()
        {
            return Err(SoakError::Stuck(format!(
                "a restarted server completed fewer than {} creates within {PROGRESS_LIMIT:?}",
                config.clients
            )));
        }
        kill_process(&http, &mut process, kill, &mut rng).await?;
        base_tx.send_replace(None);
        *kills.entry(kill).or_default() += 1;
    }
    let mut last = spawn(config).await?;
    base_tx.send_replace(Some(last.base.clone()));
    stop_tx.send_replace(true);
    let mut outcomes = Vec::new();
    for client in clients {
        outcomes.push(
            client
                .await
                .map_err(|err| SoakError::Stuck(format!("a client task ended: {err}")))?,
        );
    }
    let report = check(&http, &last, config, kills, outcomes, started).await;
    let _ = last.child.kill().await;
    report
}

/// Starts a server on the soak's database.
async fn spawn(config: &SoakConfig) -> Result<ServerProcess, SoakError> {
    let duration = |d: Duration| humantime::format_duration(d).to_string();
    let flags = [
        "--in-flight-ttl".to_owned(),
        duration(config.in_flight_ttl),
        "--boot-latency".to_owned(),
        duration(config.boot_latency),
        "--pool-size".to_owned(),
        POOL_SIZE.to_string(),
    ];
    Ok(ServerProcess::start(&config.server, &config.database_url, &flags).await?)
}

/// Kills `process` as `kill` says and waits until it is gone.
async fn kill_process(
    http: &reqwest::Client,
    process: &mut ServerProcess,
    kill: Kill,
    rng: &mut StdRng,
) -> Result<(), SoakError> {
    match kill {
        Kill::Crash(point) => {
            inject(http, process, json!({ "crash_at": point })).await?;
            let exited = tokio::time::timeout(CRASH_LIMIT, process.child.wait()).await;
            if exited.is_err() {
                let _ = process.child.kill().await;
                return Err(SoakError::Stuck(format!(
                    "no create reached {point:?} within {CRASH_LIMIT:?}"
                )));
            }
        }
        Kill::SigkillInBoot => {
            inject(http, process, json!({ "hang_boots": true })).await?;
            tokio::time::sleep(Duration::from_millis(rng.gen_range(50..300))).await;
            let _ = process.child.kill().await;
        }
        Kill::SigkillAtRandom => {
            tokio::time::sleep(Duration::from_millis(rng.gen_range(0..400))).await;
            let _ = process.child.kill().await;
        }
    }
    let _ = process.child.wait().await;
    Ok(())
}

async fn inject(
    http: &reqwest::Client,
    process: &ServerProcess,
    injections: Value,
) -> Result<(), SoakError> {
    let response = http
        .post(format!("{}/v1/admin/faults", process.admin))
        .json(&injections)
        .send()
        .await
        .map_err(|err| SoakError::Admin(err.to_string()))?;
    if response.status().as_u16() == 204 {
        Ok(())
    } else {
        Err(SoakError::Admin(format!(
            "injections {injections} answered {}",
            response.status()
        )))
    }
}

/// One client: creates workers with keys `k-0`, `k-1`, … as its own principal, retrying each key
/// until it is created, across restarts; after `stop`, it finishes its key and returns.
struct Client {
    principal: String,
    http: reqwest::Client,
    base: watch::Receiver<Option<String>>,
    stop: watch::Receiver<bool>,
    /// Creates completed by all clients.
    created: Arc<AtomicU64>,
}

/// What one client did.
#[derive(Debug, Default)]
struct Tally {
    principal: String,
    /// (key, worker id) in creation order.
    created: Vec<(String, String)>,
    attempts: u64,
    refused_in_flight: u64,
    unanswered: u64,
    server_errors: u64,
    longest_lockout: Duration,
    violations: Vec<String>,
}

/// What a create attempt got.
enum Answer {
    Created(String),
    InFlight,
    ServerError,
    Unanswered,
    Other(String),
}

impl Client {
    async fn run(mut self) -> Tally {
        let mut out = Tally {
            principal: self.principal.clone(),
            ..Tally::default()
        };
        for seq in 0.. {
            if *self.stop.borrow() {
                break;
            }
            let key = format!("k-{seq}");
            let id = self.create(&key, &mut out).await;
            if let Some(id) = id {
                out.created.push((key, id));
                self.created.fetch_add(1, Ordering::SeqCst);
            }
        }
        out
    }

    /// Retries `key` until it is created (`Some(id)`) or answered with something no retry changes
    /// (a violation, `None`).
    async fn create(&mut self, key: &str, out: &mut Tally) -> Option<String> {
        let mut locked_since = None::<Instant>;
        loop {
            let answer = self.attempt(key).await;
            out.attempts += 1;
            match answer {
                Answer::InFlight => {
                    out.refused_in_flight += 1;
                    let since = *locked_since.get_or_insert_with(Instant::now);
                    out.longest_lockout = out.longest_lockout.max(since.elapsed());
                }
                // A new process may hold a new claim: the stretch starts again.
                Answer::Unanswered => {
                    out.unanswered += 1;
                    locked_since = None;
                }
                Answer::ServerError => out.server_errors += 1,
                Answer::Created(id) => return Some(id),
                Answer::Other(what) => {
                    out.violations
                        .push(format!("{} key {key}: {what}", self.principal));
                    return None;
                }
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    async fn attempt(&mut self, key: &str) -> Answer {
        let Some(base) = self.current_base().await else {
            return Answer::Unanswered;
        };
        let sent = create(&self.http, &base, &self.principal, key).send().await;
        let Ok(response) = sent else {
            return Answer::Unanswered;
        };
        let status = response.status().as_u16();
        let Ok(body) = response.bytes().await else {
            return Answer::Unanswered;
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match status {
            201 => match body["id"].as_str() {
                Some(id) => Answer::Created(id.to_owned()),
                None => Answer::Other(format!("a 201 without an id: {body}")),
            },
            409 if body["type"] == "https://idemspec.dev/problems/request-in-progress" => {
                Answer::InFlight
            }
            // The pool is sized far beyond the soak: running out means nodes leaked.
            503 if body["type"] == "https://idemspec.dev/problems/pool-exhausted" => {
                Answer::Other(format!("the pool of {POOL_SIZE} nodes ran out"))
            }
            500..=599 => Answer::ServerError,
            _ => Answer::Other(format!("{status} {body}")),
        }
    }

    /// The running server's address, waiting (bounded) while there is none.
    async fn current_base(&mut self) -> Option<String> {
        let wait = self.base.wait_for(Option::is_some);
        match tokio::time::timeout(Duration::from_secs(1), wait).await {
            Ok(Ok(base)) => base.clone(),
            _ => None,
        }
    }
}

/// The checks after the last server let every client finish.
async fn check(
    http: &reqwest::Client,
    last: &ServerProcess,
    config: &SoakConfig,
    kills: BTreeMap<Kill, u32>,
    outcomes: Vec<Tally>,
    started: Instant,
) -> Result<SoakReport, SoakError> {
    let mut violations: Vec<String> = outcomes.iter().flat_map(|o| o.violations.clone()).collect();
    let mut owners = HashMap::<&str, String>::new();
    for outcome in &outcomes {
        for (key, id) in &outcome.created {
            let owner = format!("{} {key}", outcome.principal);
            if let Some(other) = owners.insert(id, owner.clone()) {
                violations.push(format!("{other} and {owner} got one worker, {id}"));
            }
            let replay = replay(http, last, &outcome.principal, key).await?;
            if replay.as_deref() != Some(id) {
                violations.push(format!(
                    "{owner}: created {id}, the retry answered {replay:?}"
                ));
            }
        }
        let listed = list(http, last, &outcome.principal).await?;
        let keys: HashSet<&str> = outcome.created.iter().map(|(k, _)| k.as_str()).collect();
        if listed.len() != keys.len() || listed.iter().any(|k| !keys.contains(k.as_str())) {
            violations.push(format!(
                "{}: {} keys created, workers listed for {listed:?}",
                outcome.principal,
                keys.len()
            ));
        }
    }
    let keys = owners.len();
    let stats = stats(http, last).await?;
    for counter in ["workers", "nodes_allocated", "leases", "boots"] {
        if stats[counter] != json!(keys) {
            violations.push(format!("{counter} is {}, keys {keys}", stats[counter]));
        }
    }
    for (counter, want) in [
        ("/pending_boots", 0),
        ("/idempotency_records/in_flight", 0),
        ("/idempotency_records/failed", 0),
    ] {
        if stats.pointer(counter) != Some(&json!(want)) {
            violations.push(format!("{counter} is {:?}", stats.pointer(counter)));
        }
    }
    let longest_lockout = outcomes
        .iter()
        .map(|o| o.longest_lockout)
        .max()
        .unwrap_or_default();
    if longest_lockout > config.in_flight_ttl + LOCKOUT_SLACK {
        violations.push(format!(
            "a key was refused as in flight for {longest_lockout:?}, in-flight TTL {:?}",
            config.in_flight_ttl
        ));
    }
    if !violations.is_empty() {
        return Err(SoakError::Violations(violations));
    }
    let sum = |f: fn(&Tally) -> u64| outcomes.iter().map(f).sum();
    Ok(SoakReport {
        kills,
        keys,
        attempts: sum(|o| o.attempts),
        refused_in_flight: sum(|o| o.refused_in_flight),
        unanswered: sum(|o| o.unanswered),
        server_errors: sum(|o| o.server_errors),
        longest_lockout,
        elapsed: started.elapsed(),
        stats,
    })
}

/// The worker id a retry of `key` replays (`None` if it is not a replayed 201).
async fn replay(
    http: &reqwest::Client,
    process: &ServerProcess,
    principal: &str,
    key: &str,
) -> Result<Option<String>, SoakError> {
    let response = create(http, &process.base, principal, key)
        .send()
        .await
        .map_err(|err| SoakError::Admin(format!("replay {key}: {err}")))?;
    let replayed = response.status().as_u16() == 201
        && response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
    let body: Value = response.json().await.unwrap_or(Value::Null);
    Ok(replayed
        .then(|| body["id"].as_str().map(str::to_owned))
        .flatten())
}

/// The `soak_key` labels of `principal`'s workers.
async fn list(
    http: &reqwest::Client,
    process: &ServerProcess,
    principal: &str,
) -> Result<Vec<String>, SoakError> {
    let body: Value = http
        .get(format!("{}/v1/workers", process.base))
        .bearer_auth(principal)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|err| SoakError::Admin(format!("list {principal}'s workers: {err}")))?
        .json()
        .await
        .map_err(|err| SoakError::Admin(format!("list {principal}'s workers: {err}")))?;
    Ok(body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            w["labels"]["soak_key"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect())
}

async fn stats(http: &reqwest::Client, process: &ServerProcess) -> Result<Value, SoakError> {
    http.get(format!("{}/v1/admin/stats", process.admin))
        .send()
        .await
        .map_err(|err| SoakError::Admin(err.to_string()))?
        .json()
        .await
        .map_err(|err| SoakError::Admin(err.to_string()))
}
