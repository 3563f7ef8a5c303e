//! The idempotency middleware: an axum `route_layer` on the mutating routes.
//!
//! validate the key → endpoint from `MatchedPath` → buffer the body (over 1 MiB → 413) → fingerprint →
//! ONE atomic claim statement (on the route of a synchronous create, [`enforce_in_unit_of_work`],
//! written in the create's first transaction by the [`UnitOfWork`](super::UnitOfWork) the handler
//! writes through) → then, by the record found:
//! - inserted (or reclaimed): run the handler in its own task (a client that disconnects does not
//!   cancel it), store a terminal outcome or mark the record failed; a panic marks it failed too;
//! - in flight, younger than the in-flight TTL: `409 request-in-progress` + `Retry-After`, at once;
//! - in flight past the TTL, or failed: optimistic reclaim (`UPDATE … WHERE started_at = ?`), one winner;
//! - completed, same fingerprint: replay status, `Location`, `Content-Type` and body byte for byte,
//!   with `Idempotent-Replayed: true`;
//! - any state, different fingerprint: `409 key-reused-with-different-request`.
//!
//! At each point where a server could get this wrong, the layer asks its [`Rules`] (`rules.rs`):
//! the [`Contract`](super::Contract) keeps them all; a `--flaw` bends one (`crate::flaw`), and
//! the layer never knows which.
//!
//! A handler whose work outlives its answer (an asynchronous create) gets a
//! [`KeyRelease`](super::KeyRelease) for its record and attaches the work as an
//! [`AfterAnswer`](super::AfterAnswer), which the layer starts once the answer is recorded
//! (`after_answer.rs`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{Method, StatusCode};

use super::after_answer::{AfterAnswer, KeyRelease};
use super::record::{encode, replay};
use super::rules::{ClaimOf, Claimed, Keyed, OnInFlight, OnMismatch, Rules};
use super::unit_of_work::{AnswerFor, Progress, UnitOfWork, UnitSettings};
use super::{Fingerprint, IdempotencyKey, OpSeed};
use crate::auth::Principal;
use crate::clock::now_ms;
use crate::edge::{read_body, ApiError};
use crate::faults::CrashPoint;
use crate::faults::Faults;
use crate::metrics::{KeyOutcome, Metrics};
use crate::store::{ClaimRequest, CreateStore, IdempotencyRecord, RecordState, RecordStore, Scope};

/// How the layer behaves.
#[derive(Debug, Clone)]
pub struct IdempotencyConfig {
    /// How long a completed record is kept and replayed (default 24 h).
    pub retention: Duration,
    /// How long an in-flight record blocks its key before a retry may reclaim it (default 30 s).
    pub in_flight_ttl: Duration,
    /// Whether `POST` endpoints (create, reboot) require a key (400 `missing-idempotency-key`).
    pub require_key_on_post: bool,
    /// Whether `DELETE` requires a key.
    pub require_key_on_delete: bool,
    /// The seconds sent in `Retry-After` with `request-in-progress`.
    pub retry_after_secs: u64,
}

impl IdempotencyConfig {
    fn requires_key(&self, method: &Method) -> bool {
        if method == Method::DELETE {
            self.require_key_on_delete
        } else {
            self.require_key_on_post
        }
    }
}

/// What to do with a request after the claim.
enum Decision {
    /// This request owns the record (claim token `started_at`): run it and record the outcome.
    /// Its side-effect sub-keys are salted with the record's `nonce`: kept across retries of one
    /// record (they resume), new for a record created after the old one expired (a new operation).
    /// `how` is [`KeyOutcome::Claimed`] or [`KeyOutcome::Reclaimed`] (an in-flight record past the TTL);
    /// `first` says the nonce is new (no attempt of this operation ran before: nothing to resume).
    Run {
        started_at: i64,
        nonce: String,
        how: KeyOutcome,
        first: bool,
    },
    /// Run without owning the record (only where the rules are bent): fresh sub-keys, nothing recorded.
    RunUnowned,
    /// Replay a stored outcome.
    Replay(IdempotencyRecord),
    /// Refuse (in progress, mismatch).
    Refuse(ApiError),
}

/// What the idempotency layer works with (cheap to clone): its settings, the rules it follows, the
/// record store, the faults it crashes at, and its metrics.
#[derive(Clone)]
pub struct LayerState {
    /// The layer's settings.
    pub config: Arc<IdempotencyConfig>,
    /// The rules at each point a server could bend them ([`Contract`](super::Contract), or
    /// bent by the `--flaw`s).
    pub rules: Arc<dyn Rules>,
    /// The idempotency records.
    pub records: Arc<dyn RecordStore>,
    /// The process's injected faults (a crash before the claim or the completion).
    pub faults: Arc<Faults>,
    /// The counters and histograms `GET /metrics` serves.
    pub metrics: Arc<Metrics>,
}

/// The middleware (`axum::middleware::from_fn_with_state`). Safe methods pass through untouched.
pub async fn enforce(State(state): State<LayerState>, req: Request, next: Next) -> Response {
    respond(handle(state, req, next, None).await)
}

/// What the layer works with on a route whose handler writes through a unit of work (the create):
/// its own state, the create store the [`UnitOfWork`] wraps, and the route's answer for a new worker
/// (which the unit of work stores as the completion).
#[derive(Clone)]
pub struct UnitOfWorkLayer {
    /// The layer's state, as on every route.
    pub layer: LayerState,
    /// The store whose two create transactions carry the record.
    pub creates: Arc<dyn CreateStore>,
    /// The answer the route gives for a new worker.
    pub answer: AnswerFor,
}

/// The middleware for a route whose handler writes through a unit of work (the create): the claim
/// is not written here; the handler gets an `Arc<`[`UnitOfWork`]`>` (a request extension) to write
/// through, which writes the claim with the create's first transaction and the completion with its
/// last (`unit_of_work.rs`). Where the rules' claim is not atomic
/// ([`Rules::claim_is_atomic`]), no transaction can carry it, and this is [`enforce`].
pub async fn enforce_in_unit_of_work(
    State(route): State<UnitOfWorkLayer>,
    req: Request,
    next: Next,
) -> Response {
    let unit = (route.creates, route.answer);
    respond(handle(route.layer, req, next, Some(unit)).await)
}

/// The answer, once recorded (or not kept), with the handler's [`AfterAnswer`] work started.
fn respond(result: Result<Response, ApiError>) -> Response {
    match result {
        Ok(response) => {
            AfterAnswer::start(&response);
            response
        }
        Err(err) => err.into_response(),
    }
}

async fn handle(
    state: LayerState,
    mut req: Request,
    next: Next,
    unit: Option<(Arc<dyn CreateStore>, AnswerFor)>,
) -> Result<Response, ApiError> {
    let method = req.method().clone();
    if method.is_safe() {
        return Ok(next.run(req).await);
    }
    let cfg = state.config.clone();
    let rules = state.rules.clone();
    if !rules.covers(&method) {
        req.extensions_mut().insert(OpSeed::random());
        return Ok(next.run(req).await);
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_else(|| req.uri().path().to_owned());
    let endpoint = format!("{method} {route}");
    let principal = req
        .extensions()
        .get::<Principal>()
        .cloned()
        .ok_or(ApiError::Unauthorized("missing bearer token"))?;
    let Some(key) = IdempotencyKey::from_headers(req.headers())? else {
        if cfg.requires_key(&method) {
            return Err(ApiError::MissingKey);
        }
        req.extensions_mut().insert(OpSeed::random());
        return Ok(next.run(req).await);
    };

    let (parts, body) = req.into_parts();
    let body = read_body(body, &parts).await?;
    let fingerprint = Fingerprint::of(
        method.as_str(),
        parts.uri.path(),
        parts.uri.query().unwrap_or(""),
        &body,
    );
    let keyed = Keyed {
        principal: &principal.0,
        endpoint: &endpoint,
        key: key.as_str(),
        fingerprint: fingerprint.as_str(),
    };
    let (scope, fingerprint) = rules.scope(keyed);
    let seed = rules.seed(keyed);
    let request = Held {
        parts,
        body,
        seed,
        next,
    };

    state.faults.crash_if(CrashPoint::BeforeClaim);
    if let (Some(unit), true) = (unit, rules.claim_is_atomic()) {
        return run_in_unit_of_work(&state, unit, (scope, fingerprint, endpoint), request).await;
    }
    let decision = claim(&state, &scope, &fingerprint, &endpoint).await?;
    count(&state.metrics, &decision);
    act(&state, decision, scope, request).await
}

/// A request held by the layer after its body was read, so its handler can run (again) once the
/// claim decided: the head, the body, the record's seed (before the nonce salts it) and the rest of
/// the middleware stack.
struct Held {
    parts: http::request::Parts,
    body: Bytes,
    seed: OpSeed,
    next: Next,
}

impl Held {
    /// The request again, carrying `seed`.
    fn request(&self, seed: OpSeed) -> Request {
        let mut req = Request::from_parts(self.parts.clone(), Body::from(self.body.clone()));
        req.extensions_mut().insert(seed);
        req
    }
}

/// What the request gets once the claim decided.
async fn act(
    state: &LayerState,
    decision: Decision,
    scope: Scope,
    held: Held,
) -> Result<Response, ApiError> {
    match decision {
        Decision::Run {
            started_at,
            nonce,
            first,
            ..
        } => {
            let seed = held.seed.salted(&nonce);
            let seed = if first { seed.first_attempt() } else { seed };
            let mut req = held.request(seed);
            // Work that fails after the answer releases the key as a 5xx does (not kept).
            if !state.rules.stores(StatusCode::INTERNAL_SERVER_ERROR) {
                req.extensions_mut()
                    .insert(KeyRelease::of(&scope, started_at));
            }
            run_owned(state, scope, started_at, req, held.next).await
        }
        Decision::RunUnowned => {
            let req = held.request(OpSeed::random());
            Ok(held.next.run(req).await)
        }
        Decision::Replay(record) => {
            let stored = record
                .response
                .ok_or_else(|| ApiError::Internal("completed record without a response".into()))?;
            replay(&stored).map_err(ApiError::Internal)
        }
        Decision::Refuse(err) => Err(err),
    }
}

/// Runs the handler with a [`UnitOfWork`] claiming (scope, stored fingerprint, endpoint) with a
/// new nonce and a first-attempt seed, in its own task,
/// then does what the handler left to the layer (see [`Progress`]).
async fn run_in_unit_of_work(
    state: &LayerState,
    (creates, answer): (Arc<dyn CreateStore>, AnswerFor),
    (scope, fingerprint, endpoint): (Scope, String, String),
    held: Held,
) -> Result<Response, ApiError> {
    let retention = ms(state.config.retention);
    let now = now_ms();
    let request = ClaimRequest {
        scope,
        fingerprint,
        nonce: uuid::Uuid::new_v4().to_string(),
        now,
        expires_at: now + retention,
    };
    let mut req = held.request(held.seed.salted(&request.nonce).first_attempt());
    let settings = UnitSettings {
        answer,
        retention_ms: retention,
        rules: state.rules.clone(),
        faults: state.faults.clone(),
        metrics: state.metrics.clone(),
    };
    let work = Arc::new(UnitOfWork::new(creates, request, settings));
    req.extensions_mut().insert(work.clone());
    let state = state.clone();
    let task = tokio::spawn(async move {
        let mut guard = FailOnDrop {
            store: Some(state.records.clone()),
            metrics: state.metrics.clone(),
            owner: Owner::InUnitOfWork(work.clone()),
        };
        let response = held.next.clone().run(req).await;
        guard.store = None;
        after_unit_of_work(&state, &work, &endpoint, response, held).await
    });
    task.await
        .map_err(|err| ApiError::Internal(format!("the handler task ended abnormally: {err}")))?
}

/// What is left to the layer after a handler ran with a [`UnitOfWork`].
async fn after_unit_of_work(
    state: &LayerState,
    work: &UnitOfWork,
    endpoint: &str,
    response: Response,
    held: Held,
) -> Result<Response, ApiError> {
    let request = work.request();
    let scope = &request.scope;
    match work.progress() {
        Progress::Owned {
            completed: true, ..
        }
        | Progress::Taken => Ok(response),
        Progress::Owned {
            started_at,
            completed: false,
        } => Ok(record_outcome(state, scope, started_at, response).await),
        Progress::Existing(record) => {
            let decision = decide(state, record, request, endpoint).await?;
            count(&state.metrics, &decision);
            act(state, decision, scope.clone(), held).await
        }
        Progress::Unsent => {
            // The handler answered before its first write (a body it rejects): the answer depends on
            // the request alone, so it is what any run by the record's owner would answer.
            let decision = claim(state, scope, &request.fingerprint, endpoint).await?;
            count(&state.metrics, &decision);
            match decision {
                Decision::Run { started_at, .. } => {
                    Ok(record_outcome(state, scope, started_at, response).await)
                }
                Decision::RunUnowned => Ok(response),
                other => act(state, other, scope.clone(), held).await,
            }
        }
    }
}

/// Counts the decision's [`KeyOutcome`] (running without owning the record, which only bent rules
/// decide, counts nothing).
fn count(metrics: &Metrics, decision: &Decision) {
    let outcome = match decision {
        Decision::Run { how, .. } => *how,
        Decision::RunUnowned => return,
        Decision::Replay(_) => KeyOutcome::Replayed,
        Decision::Refuse(ApiError::KeyMismatch) => KeyOutcome::Mismatch,
        Decision::Refuse(ApiError::InProgress(_)) => KeyOutcome::InFlightConflict,
        Decision::Refuse(_) => return,
    };
    metrics.outcome(outcome);
}

/// The claim as the rules make it ([`Rules::claim`]: the contract's is one atomic statement),
/// then the state machine over the record it found.
async fn claim(
    state: &LayerState,
    scope: &Scope,
    fingerprint: &str,
    endpoint: &str,
) -> Result<Decision, ApiError> {
    let cfg = &state.config;
    let now = now_ms();
    let expires_at = now + ms(cfg.retention);
    let claimed = state
        .rules
        .claim(
            state.records.as_ref(),
            ClaimOf {
                scope,
                fingerprint,
                now,
                expires_at,
            },
        )
        .await
        .map_err(ApiError::internal)?;
    let record = match claimed {
        Claimed::Owned {
            started_at,
            nonce,
            first,
        } => {
            return Ok(Decision::Run {
                started_at,
                nonce,
                how: KeyOutcome::Claimed,
                first,
            })
        }
        Claimed::Found(record) => record,
    };
    // The claim as `decide` reads it; the store chose the nonce, and `decide` takes none from here.
    let request = ClaimRequest {
        scope: scope.clone(),
        fingerprint: fingerprint.to_owned(),
        nonce: String::new(),
        now,
        expires_at,
    };
    decide(state, record, &request, endpoint).await
}

/// The state machine over an existing `record` that the claim `request` found (it did not insert);
/// of `request`, its scope, fingerprint and times are used, not its nonce (a take-over decides its
/// own from the record).
async fn decide(
    state: &LayerState,
    record: IdempotencyRecord,
    request: &ClaimRequest,
    endpoint: &str,
) -> Result<Decision, ApiError> {
    let (store, cfg, rules) = (state.records.as_ref(), &state.config, &state.rules);
    let ClaimRequest {
        scope,
        fingerprint,
        now,
        expires_at,
        ..
    } = request;
    let (now, expires_at) = (*now, *expires_at);
    let fingerprint = fingerprint.as_str();
    // Reclaiming a failed or stuck record keeps its nonce (the retry resumes its side effects); an
    // expired record is a new operation and gets a new one.
    let record_nonce = record.nonce.as_str();
    let take_over = |nonce: String, how: KeyOutcome| async move {
        // A nonce other than the record's is new: no attempt of this operation ran before.
        let first = nonce != record_nonce;
        let won = store
            .take_over(
                scope,
                record.state,
                record.started_at,
                fingerprint,
                &nonce,
                now,
                expires_at,
            )
            .await
            .map_err(ApiError::internal)?;
        Ok::<_, ApiError>(if won {
            Decision::Run {
                started_at: now.max(record.started_at + 1),
                nonce,
                how,
                first,
            }
        } else {
            Decision::Refuse(ApiError::InProgress(cfg.retry_after_secs))
        })
    };
    // A terminal record past the retention window but not yet swept: as if absent. An in-flight record
    // is never "expired" by retention (its request may still be running, or crashed with side effects
    // to resume): only the in-flight TTL below reclaims it, keeping its nonce.
    // A failed one keeps its nonce: its attempt's node and lease are resumed, not leaked (once swept,
    // the sweeper releases them instead).
    if record.expires_at <= now && record.state != RecordState::InFlight {
        let nonce = if record.state == RecordState::Failed {
            record.nonce.clone()
        } else {
            uuid::Uuid::new_v4().to_string()
        };
        return take_over(nonce, KeyOutcome::Claimed).await;
    }
    if record.fingerprint != fingerprint {
        match rules.on_mismatch(&record, endpoint) {
            OnMismatch::Refuse => return Ok(Decision::Refuse(ApiError::KeyMismatch)),
            OnMismatch::Replay => return Ok(Decision::Replay(record)),
            OnMismatch::Ignore => {}
        }
    }
    match record.state {
        RecordState::Completed => Ok(Decision::Replay(record)),
        RecordState::Failed => take_over(record.nonce.clone(), KeyOutcome::Claimed).await,
        RecordState::InFlight => {
            let past_ttl = now - record.started_at >= ms(cfg.in_flight_ttl);
            match rules.on_in_flight(&record, past_ttl) {
                OnInFlight::Reclaim { nonce } => take_over(nonce, KeyOutcome::Reclaimed).await,
                OnInFlight::Refuse => {
                    Ok(Decision::Refuse(ApiError::InProgress(cfg.retry_after_secs)))
                }
                OnInFlight::RunUnowned => Ok(Decision::RunUnowned),
            }
        }
    }
}

/// Runs the handler for the record's owner in its own task and records the outcome. A drop guard marks
/// the record failed if the task unwinds (a panic), so the row never stays in flight because of one.
async fn run_owned(
    state: &LayerState,
    scope: Scope,
    started_at: i64,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let state = state.clone();
    let task = tokio::spawn(async move {
        let mut guard = FailOnDrop {
            store: Some(state.records.clone()),
            metrics: state.metrics.clone(),
            owner: Owner::Claimed {
                scope: scope.clone(),
                started_at,
            },
        };
        let response = next.run(req).await;
        guard.store = None;
        record_outcome(&state, &scope, started_at, response).await
    });
    task.await
        .map_err(|err| ApiError::Internal(format!("the handler task ended abnormally: {err}")))
}

/// Records the handler's `response` as the outcome of the claim `started_at`: a terminal outcome is
/// stored, anything else marks the record failed.
async fn record_outcome(
    state: &LayerState,
    scope: &Scope,
    started_at: i64,
    response: Response,
) -> Response {
    let store = state.records.as_ref();
    let (parts, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(err) => {
            state.metrics.outcome(KeyOutcome::Failed);
            if let Err(err) = store.fail(scope, started_at).await {
                tracing::error!(error = %err, key = %scope.key, "mark the record failed");
            }
            return ApiError::Internal(format!("read the handler's response body: {err}"))
                .into_response();
        }
    };
    state.faults.crash_if(CrashPoint::BeforeComplete);
    let recorded = if state.rules.stores(parts.status) {
        let stored = encode(parts.status, &parts.headers, &body);
        let expires_at = now_ms() + ms(state.config.retention);
        store.complete(scope, started_at, &stored, expires_at).await
    } else {
        state.metrics.outcome(KeyOutcome::Failed);
        store.fail(scope, started_at).await
    };
    match recorded {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(key = %scope.key, "the claim was reclaimed before this request finished")
        }
        // The record stays in flight; the in-flight TTL lets a retry reclaim it and resume.
        Err(err) => tracing::error!(error = %err, key = %scope.key, "record the outcome"),
    }
    Response::from_parts(parts, Body::from(body))
}

/// Whose claim a [`FailOnDrop`] guards.
enum Owner {
    /// A claim the layer wrote.
    Claimed { scope: Scope, started_at: i64 },
    /// A claim written by the handler's unit of work: guarded once its write made it the
    /// request's, until its completion is written.
    InUnitOfWork(Arc<UnitOfWork>),
}

impl Owner {
    /// The claim to mark failed, if the request owns one that is not completed.
    fn unfinished(&self) -> Option<(Scope, i64)> {
        match self {
            Self::Claimed { scope, started_at } => Some((scope.clone(), *started_at)),
            Self::InUnitOfWork(work) => match work.progress() {
                Progress::Owned {
                    started_at,
                    completed: false,
                } => Some((work.request().scope.clone(), started_at)),
                _ => None,
            },
        }
    }
}

/// Marks the record failed when dropped while still armed (the handler task unwound).
struct FailOnDrop {
    store: Option<Arc<dyn RecordStore>>,
    metrics: Arc<Metrics>,
    owner: Owner,
}

impl Drop for FailOnDrop {
    fn drop(&mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        let Some((scope, started_at)) = self.owner.unfinished() else {
            return;
        };
        self.metrics.outcome(KeyOutcome::Failed);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(err) = store.fail(&scope, started_at).await {
                    tracing::error!(error = %err, key = %scope.key, "mark the record failed after a panic");
                }
            });
        }
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}
