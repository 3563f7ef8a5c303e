//! The idempotency middleware: an axum `route_layer` on the mutating routes, one driver whose
//! phases read top down (docs/design/leasebroker.md draws them, with the [`Rules`](super::Rules)
//! method asked in each):
//!
//! 1. admit: a safe method, one the rules do not cover (`Rules::covers`) or a request without a
//!    key passes through; otherwise the key is validated, the endpoint read from `MatchedPath`,
//!    the body buffered (over 1 MiB → 413) and fingerprinted, and the rules give the record's
//!    scope (`Rules::scope`) and the sub-keys' seed (`Rules::seed`);
//! 2. claim, where the route writes it ([`ClaimSite`]): a statement of its own (`Rules::claim`),
//!    or the create's first transaction, through the [`UnitOfWork`] the handler writes through,
//!    which reports the claim's outcome as that write returns. Either way: owned, or found
//!    (someone else's record); on the create also not written (the handler answered before its
//!    first write: the claim is then written alone) or failed (its transaction rolled back);
//! 3. decide (`decide.rs`): an owned claim runs; over a found record the state machine decides
//!    (`Rules::on_mismatch`, `Rules::on_in_flight`);
//! 4. run or replay: the owner runs the handler (on the create, it already has); a completed
//!    record replays status, `Location`, `Content-Type` and body byte for byte with
//!    `Idempotent-Replayed: true`; a refusal is `409 request-in-progress` or
//!    `409 key-reused-with-different-request`;
//! 5. record (`completion.rs`): a terminal answer (`Rules::stores`) is stored, anything else marks
//!    the record failed; a panic marks it failed too.
//!
//! From the claim on, the request runs in a task of its own: a client that disconnects cancels
//! none of it. The layer never knows which rules it follows: the
//! [`ArticleRules`](super::ArticleRules) keep them all, a `--flaw` bends one (`crate::flaw`).
//!
//! A handler whose work outlives its answer (an asynchronous create) gets a [`KeyRelease`] for its
//! record and attaches the work as an [`AfterAnswer`], which the layer starts once the answer is
//! recorded (`after_answer.rs`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use tokio::sync::oneshot;

use super::after_answer::{AfterAnswer, KeyRelease};
use super::completion::OwnedClaim;
use super::config::{AnswerFor, ClaimSite, LayerState};
use super::decide::{decide, Decision, Owned};
use super::record::replay;
use super::rules::{ClaimOf, ClaimStores, Claimed, Keyed};
use super::unit_of_work::{Reported, UnitOfWork};
use super::{Fingerprint, IdempotencyKey, OpSeed};
use crate::auth::Principal;
use crate::clock::now_ms;
use crate::edge::{read_body, ApiError};
use crate::injection::CrashPoint;
use crate::metrics::KeyOutcome;
use crate::store::{ClaimRequest, CreateStore, IdempotencyRecord, Scope};

/// The middleware (`axum::middleware::from_fn_with_state`), on every mutating route; where the
/// route writes its claim is the state's [`ClaimSite`]. Safe methods pass through untouched. The
/// handler's [`AfterAnswer`] work starts once the answer is recorded (or not kept).
pub async fn enforce(State(state): State<LayerState>, req: Request, next: Next) -> Response {
    match admit(state, req, next).await {
        Ok(response) => {
            AfterAnswer::start(&response);
            response
        }
        Err(err) => err.into_response(),
    }
}

/// Phase 1: passes through what the layer does not record; otherwise reads the key, the body and
/// the fingerprint, and drives the rest in a task of its own.
async fn admit(state: LayerState, mut req: Request, next: Next) -> Result<Response, ApiError> {
    let method = req.method().clone();
    if method.is_safe() {
        return Ok(next.run(req).await);
    }
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
        if state.config.requires_key(&method) {
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
    let held = Held {
        parts,
        body,
        seed: rules.seed(keyed),
        next,
    };
    let key = KeyedClaim {
        scope,
        fingerprint,
        endpoint,
    };

    state.injections.crash_if(CrashPoint::BeforeClaim);
    tokio::spawn(drive(state, key, held))
        .await
        .map_err(|err| ApiError::Internal(format!("the handler task ended abnormally: {err}")))?
}

/// What a keyed request claims: the record's scope, the fingerprint stored with it, and the
/// endpoint (`METHOD /route`) the rules judge a mismatch on.
struct KeyedClaim {
    scope: Scope,
    fingerprint: String,
    endpoint: String,
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

/// What a claim found, on either road.
enum ClaimOutcome {
    /// The claim inserted the record: this request owns it.
    Owned(Owned),
    /// A record someone else holds, found by the claim `request` (its time and a new record's
    /// expiry are what the state machine judges the record against).
    Found(IdempotencyRecord, ClaimRequest),
}

/// The handler's answer where the create's road ran it before the claim's outcome was read, and
/// whether the create's last transaction recorded it.
struct Ran {
    response: Response,
    recorded: bool,
}

/// Phases 2–5, top down, in the request's own task.
async fn drive(state: LayerState, key: KeyedClaim, held: Held) -> Result<Response, ApiError> {
    // 2. The claim, where the route writes it; the create's road has run the handler already.
    let (claim, ran) = match &state.site {
        ClaimSite::InCreate { creates, answer } if state.rules.claim_is_atomic() => {
            let (outcome, ran) = claim_in_create(&state, &key, &held, creates, answer).await;
            match outcome {
                Ok(claim @ ClaimOutcome::Owned(_)) => (claim, Some(ran)),
                // The fleet stopped, having written nothing: its answer is no one's.
                Ok(found) => (found, None),
                // The handler answered before its first write: the answer depends on the request
                // alone, so it is what any run by the record's owner would answer.
                Err(NoClaim::NotWritten) => (claim_alone(&state, &key).await?, Some(ran)),
                // The transaction carrying the claim failed: nothing is recorded, and the
                // handler's answer says why.
                Err(NoClaim::Failed) => return Ok(ran.response),
            }
        }
        _ => (claim_alone(&state, &key).await?, None),
    };

    // 3. Decide.
    let decision = match claim {
        ClaimOutcome::Owned(owned) => Decision::Run(owned),
        ClaimOutcome::Found(record, request) => {
            decide(&state, record, &request, &key.endpoint).await?
        }
    };
    decision.count(&state.metrics);

    // 4. Run or replay.
    let owned = match decision {
        Decision::Run(owned) => owned,
        Decision::RunUnowned => {
            return Ok(match ran {
                Some(ran) => ran.response,
                None => held.next.clone().run(held.request(OpSeed::random())).await,
            })
        }
        Decision::Replay(record) => {
            let stored = record
                .response
                .ok_or_else(|| ApiError::Internal("completed record without a response".into()))?;
            return replay(&stored).map_err(ApiError::Internal);
        }
        Decision::Refuse(err) => return Err(err),
    };
    let Ran { response, recorded } = match ran {
        Some(ran) => ran,
        None => Ran {
            response: run_owned(&state, &owned, held).await,
            recorded: false,
        },
    };

    // 5. Record, unless the create's last transaction did.
    if recorded {
        owned.claim.recorded();
        return Ok(response);
    }
    Ok(state.record(owned.claim, response).await)
}

/// The claim in a statement of its own, as the rules make it
/// ([`Rules::claim`](super::Rules::claim): the article's is one atomic statement).
async fn claim_alone(state: &LayerState, key: &KeyedClaim) -> Result<ClaimOutcome, ApiError> {
    let now = now_ms();
    let expires_at = now + state.config.retention_ms();
    let on = ClaimStores {
        records: state.records.as_ref(),
        unguarded: state.unguarded.as_ref(),
    };
    let claim = ClaimOf {
        scope: &key.scope,
        fingerprint: &key.fingerprint,
        now,
        expires_at,
    };
    Ok(
        match state
            .rules
            .claim(on, claim)
            .await
            .map_err(ApiError::internal)?
        {
            Claimed::Owned {
                started_at,
                nonce,
                first,
            } => ClaimOutcome::Owned(Owned {
                claim: OwnedClaim::new(state, key.scope.clone(), started_at),
                nonce,
                first,
                how: KeyOutcome::Claimed,
            }),
            // The store chose the nonce; the state machine takes none from the request.
            Claimed::Found(record) => ClaimOutcome::Found(
                record,
                ClaimRequest {
                    scope: key.scope.clone(),
                    fingerprint: key.fingerprint.clone(),
                    nonce: String::new(),
                    now,
                    expires_at,
                },
            ),
        },
    )
}

/// Why the handler's run through a unit of work left no claim's outcome.
enum NoClaim {
    /// No claim was written: the handler answered before its first write.
    NotWritten,
    /// The transaction carrying the claim failed.
    Failed,
}

/// The claim in the create's first transaction: the handler runs with a [`UnitOfWork`] claiming
/// the key with a new nonce (its sub-keys salted with it, a first attempt), which reports the
/// claim's outcome as that transaction returns. The report is read once the handler answered: on
/// every outcome the layer needs that answer (the owner's, to record) or the handler's end.
async fn claim_in_create(
    state: &LayerState,
    key: &KeyedClaim,
    held: &Held,
    creates: &Arc<dyn CreateStore>,
    answer: &AnswerFor,
) -> (Result<ClaimOutcome, NoClaim>, Ran) {
    let now = now_ms();
    let request = ClaimRequest {
        scope: key.scope.clone(),
        fingerprint: key.fingerprint.clone(),
        nonce: uuid::Uuid::new_v4().to_string(),
        now,
        expires_at: now + state.config.retention_ms(),
    };
    let mut req = held.request(held.seed.salted(&request.nonce).first_attempt());
    let (report, mut reported) = oneshot::channel();
    let work = UnitOfWork::new(
        creates.clone(),
        request.clone(),
        state.clone(),
        answer.clone(),
        report,
    );
    let work = Arc::new(work);
    req.extensions_mut().insert(work.clone());
    let response = held.next.clone().run(req).await;
    let outcome = match reported.try_recv() {
        Ok(Reported::Owned(claim)) => Ok(ClaimOutcome::Owned(Owned {
            claim,
            nonce: request.nonce,
            first: true,
            how: KeyOutcome::Claimed,
        })),
        Ok(Reported::Found(record)) => Ok(ClaimOutcome::Found(record, request)),
        Ok(Reported::Failed) => Err(NoClaim::Failed),
        Err(_) => Err(NoClaim::NotWritten),
    };
    let recorded = work.completed();
    (outcome, Ran { response, recorded })
}

/// Runs the handler for the record's owner, its sub-keys salted with the record's nonce. Work
/// that fails after the answer releases the key as a 5xx does (not kept).
async fn run_owned(state: &LayerState, owned: &Owned, held: Held) -> Response {
    let seed = held.seed.salted(&owned.nonce);
    let seed = if owned.first {
        seed.first_attempt()
    } else {
        seed
    };
    let mut req = held.request(seed);
    if !state.rules.stores(StatusCode::INTERNAL_SERVER_ERROR) {
        let release = KeyRelease::of(owned.claim.scope(), owned.claim.started_at());
        req.extensions_mut().insert(release);
    }
    held.next.run(req).await
}
