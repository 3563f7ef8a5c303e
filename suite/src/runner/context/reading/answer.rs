//! What one answer is under the contract, read once per exchange: a success, a replay of one (and
//! what told it a replay), a refusal the contract names, a declared wait that ran out, a crash,
//! another failure, or no answer.
//! The part of the reading that needs the check's other answers — whether an answer carries the
//! original's body or id, where the contract recognises a replay by that — is made once, when the
//! exchange is recorded ([`read_replay`], [`read_again`]), and kept on the exchange
//! ([`Exchange::declared_replay`]); [`read`] derives the rest from the exchange and the contract
//! alone, so every check that asks gets the same reading.

use idemspec_scenarios::profile::{Contract, Refusal, ReplayBody, ReplayBy};

use crate::http_client::Exchange;
use crate::runner::api_ctx::{id_text, ApiCtx};
use crate::runner::context::member_bytes;

/// An answer as the contract reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// No complete response arrived (a transport failure, a timeout).
    NoAnswer,
    /// A 2xx that is no replay the contract can tell.
    Success,
    /// A replay of a completed success, and what told it one.
    Replay {
        /// The marker, the declared status, the declared body, the original's body or id.
        by: ReplayBy,
    },
    /// A refusal the contract declares, by status and body, for a mismatch and for a request in
    /// flight alike (the article's one `409`): either.
    Conflict,
    /// The contract's refusal of a reused key with another request (`mismatch_status`).
    MismatchRefusal,
    /// The contract's refusal of a request whose key's first request is in flight
    /// (`in_flight_status`).
    InFlightRefusal,
    /// The contract's refusal of a request without a required key (`missing_key_status`).
    MissingKeyRefusal,
    /// A status a declared wait ends in when it runs out (`in_flight_wait.then`): the request
    /// waited for its key's first request, which was still in flight.
    WaitRanOut,
    /// The server failed: a 5xx the contract declares for no refusal, or a 2xx naming a
    /// long-running operation that settled failed.
    Crash,
    /// Any other answer (a 3xx, a 4xx the contract names for nothing).
    OtherFailure,
}

/// What `e` is under `contract`.
pub(crate) fn read(e: &Exchange, contract: &Contract) -> Reading {
    let Some(status) = e.status else {
        return Reading::NoAnswer;
    };
    if e.operation_failed.is_some() {
        return Reading::Crash;
    }
    if let Some(by) = e.declared_replay {
        return Reading::Replay { by };
    }
    let marker = &contract.replayed_header;
    let refuses = |r: Refusal| contract.refuses(r, status, e.json.as_deref());
    match status {
        200..=299 if !marker.is_empty() && e.marks_replay(marker) => Reading::Replay {
            by: ReplayBy::Marker,
        },
        200..=299 => Reading::Success,
        _ if refuses(Refusal::InFlight) && refuses(Refusal::Mismatch) => Reading::Conflict,
        _ if refuses(Refusal::InFlight) => Reading::InFlightRefusal,
        _ if refuses(Refusal::Mismatch) => Reading::MismatchRefusal,
        _ if contract.wait_ran_out(status) => Reading::WaitRanOut,
        _ if refuses(Refusal::MissingKey) => Reading::MissingKeyRefusal,
        500.. => Reading::Crash,
        _ => Reading::OtherFailure,
    }
}

/// Reads what the contract says of a replay into `exchange`, once, as it is recorded among the
/// check's answers so far (`earlier`): a replay under another status it declares
/// (`replay_status`) gets [`Exchange::declared_replay`], with what told it one; a replay wrapped
/// in its declared envelope (`replay_envelope`) becomes the original body it carries, byte for
/// byte as the envelope holds it, so every check compares and reads ids from the original's body
/// (the evidence keeps the envelope as sent).
pub(crate) fn read_replay(exchange: &mut Exchange, ctx: &ApiCtx, earlier: &[Exchange]) {
    let contract = &ctx.contract;
    let Some(status) = exchange.status else {
        return;
    };
    let marker = &contract.replayed_header;
    let marked = !marker.is_empty() && exchange.marks_replay(marker);
    let content = match original_of(exchange, earlier) {
        Some(original) => carries(exchange, original, ctx),
        None => carries_unseen(exchange, ctx),
    };
    exchange.declared_replay =
        contract.replays_under(status, marked, exchange.json.as_deref(), content);
    let inner = contract
        .replay_envelope
        .as_deref()
        .filter(|_| contract.envelops(marked, exchange.json.as_deref()))
        .and_then(|at| member_bytes(&exchange.body, at));
    if let Some(inner) = inner {
        exchange.json = serde_json::from_slice(&inner).ok().map(std::sync::Arc::new);
        exchange.body = inner;
    }
}

/// Reads `earlier`, an answer recorded before `original` arrived, again against it: where the
/// contract recognises a replay by what it carries of the original (`replay_body: original`,
/// `replay_id_at`) and `earlier` has `original`'s key and was read as no replay, it may be one
/// whose original completed after it (in a burst, a replay can reach its client first).
pub(crate) fn read_again(earlier: &mut Exchange, original: &Exchange, ctx: &ApiCtx) {
    let contract = &ctx.contract;
    let Some(status) = earlier.status else {
        return;
    };
    if earlier.declared_replay.is_some()
        || !contract.recognises_replay_by_content()
        || !may_be_original(original)
        || earlier.evidence.request.idempotency_key.is_none()
        || earlier.evidence.request.idempotency_key != original.evidence.request.idempotency_key
    {
        return;
    }
    let content = carries(earlier, original, ctx);
    earlier.declared_replay =
        contract.replays_under(status, false, earlier.json.as_deref(), content);
}

/// Whether `e` may be the original answer a later one replays: a 2xx of its own, with a key.
pub(crate) fn may_be_original(e: &Exchange) -> bool {
    matches!(e.status, Some(200..=299))
        && e.declared_replay.is_none()
        && e.evidence.request.idempotency_key.is_some()
}

/// The original answer `e` would replay among `earlier`: the first recorded 2xx of its own sent
/// with `e`'s key (by whichever principal, on whichever endpoint: a replay that crosses them is
/// still that original's, and the checks of scope judge it).
fn original_of<'a>(e: &Exchange, earlier: &'a [Exchange]) -> Option<&'a Exchange> {
    let key = e.evidence.request.idempotency_key.as_ref()?;
    earlier
        .iter()
        .filter(|o| may_be_original(o) && o.evidence.request.idempotency_key.as_ref() == Some(key))
        .min_by_key(|o| o.started)
}

/// What `e` carries of `original`, where the contract recognises a replay by it: the original's
/// body byte for byte (`replay_body: original`), or the original's id at `replay_id_at`.
fn carries(e: &Exchange, original: &Exchange, ctx: &ApiCtx) -> Option<ReplayBy> {
    let contract = &ctx.contract;
    if contract.replay_body == Some(ReplayBody::Original) && e.body == original.body {
        return Some(ReplayBy::OriginalBody);
    }
    let id = replay_id(e, contract)?;
    (Some(id) == ctx.created_id(original)).then_some(ReplayBy::OriginalId)
}

/// What `e` carries of an original answer the check never got (its response was lost, or its
/// client gave up), where the contract recognises a replay by it: under `replay_body: original`, a
/// body naming a created resource at the profile's `create.id`, or no body at all and no
/// `Retry-After` (the replay of a `204`; an empty answer that asks to be retried later is an
/// in-flight refusal): a refusal names no resource and says why; or an id at `replay_id_at`.
fn carries_unseen(e: &Exchange, ctx: &ApiCtx) -> Option<ReplayBy> {
    let contract = &ctx.contract;
    let empty_final = e.body.is_empty() && e.retry_after().is_none();
    if contract.replay_body == Some(ReplayBody::Original)
        && (empty_final || ctx.created_id(e).is_some())
    {
        return Some(ReplayBy::OriginalBody);
    }
    replay_id(e, contract).map(|_| ReplayBy::OriginalId)
}

/// The non-empty id `e` names at `contract.replay_id_at`, if declared.
fn replay_id(e: &Exchange, contract: &Contract) -> Option<String> {
    let at = contract.replay_id_at.as_ref()?;
    let id = e
        .json
        .as_deref()
        .and_then(|j| at.first(j))
        .and_then(id_text)?;
    (!id.is_empty()).then_some(id)
}
