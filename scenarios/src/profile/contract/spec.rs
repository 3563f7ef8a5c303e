//! The `contract:` block as a profile writes it: the preset, the fields that override it, and the
//! vocabulary of those fields (the key's form, the operations a layer covers).

use serde::{Deserialize, Serialize};

use super::statuses::{refusals, replay_statuses, stored_statuses};
use super::{BodyCondition, ErrorShape, MismatchAnswer, Preset, ReplayBody, Replays, StoredStatus};
use crate::load::Spanned;
use crate::profile::KeyAt;
use crate::value::HumanDuration;

/// The form of key an API accepts; every key a check sends is of this form, unique per check and
/// per run (key-validation still sends the invalid ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyForm {
    /// Any 1–255 visible ASCII characters: `m1a2b3c4d5-K1` (the check's marker and the key's name).
    #[default]
    Opaque,
    /// A UUID (`8-4-4-4-12` hex), derived from the marker and the name so a retry keeps it.
    Uuid,
    /// `key_template`, with `{{key}}` (the opaque form) and `{{uuid}}` (the UUID form) filled in,
    /// e.g. `ord_{{uuid}}`.
    Template,
}

impl KeyForm {
    /// The form as written in profiles.
    pub fn name(self) -> &'static str {
        match self {
            KeyForm::Opaque => "opaque",
            KeyForm::Uuid => "uuid",
            KeyForm::Template => "template",
        }
    }
}

/// A mutating operation an idempotency layer may or may not cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Covered {
    /// `operations.create`.
    Create,
    /// `operations.delete`.
    Delete,
    /// `operations.action`.
    Action,
}

/// The `contract:` block of a profile: a preset and optional overrides. The fields a rule of the
/// contract may find in conflict keep where they were written ([`Spanned`]), so its error points
/// at the field's line.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContractSpec {
    /// The preset the overrides apply to (default `article`).
    #[serde(default)]
    pub preset: Preset,
    /// The request header carrying the key (default `Idempotency-Key`).
    pub header: Option<Spanned<String>>,
    /// Where a request carries the key, when not in `header`: `{query: requestId}` (a query
    /// parameter), `{form: ClientToken}` (a field of a form body), `{json: clientToken}` (a member
    /// of a JSON body; `a.b` for one inside another), or `{header: X-Client-Token}`.
    pub key_at: Option<Spanned<KeyAt>>,
    /// Statuses accepted for "same key, different request": one code (`422`) or a list
    /// (`[409, 423]`), each a 4xx or 5xx; a null keeps the preset's.
    #[serde(default, deserialize_with = "refusals")]
    pub mismatch_status: Option<Vec<u16>>,
    /// Statuses accepted for "same key while the first is in flight".
    #[serde(default, deserialize_with = "refusals")]
    pub in_flight_status: Option<Vec<u16>>,
    /// Statuses accepted when a required key is missing.
    #[serde(default, deserialize_with = "refusals")]
    pub missing_key_status: Option<Vec<u16>>,
    /// What else the body of a mismatch refusal says, where its status alone does not tell it
    /// from other refusals (a 400 for any bad request): `{at: $.error.type, is:
    /// idempotency_error}`.
    pub mismatch_body: Option<BodyCondition>,
    /// What else the body of an in-flight refusal says (`{at: $.error.code, is: ...}`).
    pub in_flight_body: Option<BodyCondition>,
    /// What else the body of a missing-key refusal says.
    pub missing_key_body: Option<BodyCondition>,
    /// What a refusal's body is promised to look like: `problem` (RFC 9457), `{at: $.error.type}`
    /// (a vendor's error object with a member there; one JSONPath or a list), or `none`.
    pub error_shape: Option<ErrorShape>,
    /// Whether an in-flight refusal carries `Retry-After` (`true` under `article`, which asks for
    /// it; `false` where the documentation does not promise it).
    pub in_flight_retry_after: Option<bool>,
    /// How long an abandoned in-flight record locks its key (e.g. `3s`).
    pub in_flight_ttl: Option<Spanned<HumanDuration>>,
    /// Whether a same-key request arriving while the first runs waits for it instead of being
    /// refused at once: `{up_to: 10s, then: [408]}` (it gets the first's answer, or `then` when
    /// the wait runs out). Default: no wait, a refusal with `in_flight_status`.
    pub in_flight_wait: Option<super::InFlightWaitSpec>,
    /// How long completed records are kept: a duration (`24h`), or `while_resource_exists` (a
    /// key lives as long as the resource its request created).
    pub retention: Option<Spanned<super::Retention>>,
    /// Whether mutating requests without a key are rejected.
    pub key_required: Option<bool>,
    /// Whether a 5xx outcome is stored and replayed (`true`, Stripe) or the retry re-runs (`false`).
    pub replays_5xx: Option<Spanned<bool>>,
    /// The answers the idempotency layer stores and replays: codes (`201`) and classes (`2xx`,
    /// `4xx`, `5xx`), one or a list (see [`StoredStatus`]). Default: `[2xx, 4xx]`, with `5xx`
    /// where the preset replays a 5xx (`stripe-v1`).
    #[serde(default, deserialize_with = "stored_statuses")]
    pub stores: Option<Vec<StoredStatus>>,
    /// Whether keys are scoped per principal (two principals may use one key independently).
    pub per_principal: Option<bool>,
    /// Whether keys are scoped per endpoint: one key on a create and on an action is two
    /// operations, each run (`true`, the article); `false` leaves it to the server, which may also
    /// refuse the second as a mismatch (Stripe refuses a key reused on another endpoint).
    pub per_endpoint: Option<bool>,
    /// Whether Structured Fields string keys (`"abc"`, RFC 8941) are accepted and unquoted.
    pub sf_string_keys: Option<bool>,
    /// The header a replay carries (default `Idempotent-Replayed`), checked at SHOULD level; `""`:
    /// the API marks no replay, and none is looked for.
    pub replayed_header: Option<Spanned<String>>,
    /// The form of key the API accepts (default `opaque`).
    pub key_form: Option<KeyForm>,
    /// With `key_form: template`: the key's text, e.g. `ord_{{uuid}}` or `{{key}}-v1`.
    pub key_template: Option<Spanned<String>>,
    /// How the API answers a reused key with another request (default `reject`: a refusal, with
    /// `mismatch_status`; `original`: the original request's answer, as Google Cloud documents
    /// for a repeated `requestId`).
    pub mismatch_answer: Option<MismatchAnswer>,
    /// The longest key the API accepts, in characters (default 255, the IETF draft's advice;
    /// AWS documents 64 for a client token): key-validation sends one character more as the key
    /// too long.
    pub key_max_len: Option<Spanned<u32>>,
    /// Whether an empty key header counts as no key at all (some libraries document this) rather
    /// than an invalid key (default `false`).
    pub empty_key_is_missing: Option<bool>,
    /// Statuses a replay of a completed success may come under besides the original's own (a
    /// middleware that answers a completed key `409` with the original body): one code or a
    /// list, each a 2xx or 4xx. Default: none (a replay keeps the original's status).
    #[serde(default, deserialize_with = "replay_statuses")]
    pub replay_status: Option<Spanned<Vec<u16>>>,
    /// What the body of a replay under `replay_status` says (`{at: $.cached, is: true}`), or
    /// `original` (it is the original answer's body, byte for byte), where its status alone does
    /// not tell it from a refusal with that status.
    pub replay_body: Option<Spanned<ReplayBody>>,
    /// Where the body of a replay under `replay_status` names the original's resource
    /// (`$.Error.ResourceId`): an answer naming the original's id there is its replay, however
    /// the rest of its body differs (an "already exists" error naming the resource).
    pub replay_id_at: Option<Spanned<crate::value::JsonPathExpr>>,
    /// What a replay of a created resource's answer shows: the stored response byte for byte
    /// (`stored`, the default) or the same resource in its current state (`current_state`, as AWS
    /// and Google Cloud document).
    pub replays: Option<Replays>,
    /// Where a replay carries the original body, for a layer that wraps its replays in an
    /// envelope (`{"cached": true, "data": {…}}`: `data`): a member name, `a.b` for one inside
    /// another. A body is such an envelope where `replay_body` says so (or, without it, where the
    /// replay marker header does).
    pub replay_envelope: Option<Spanned<String>>,
    /// The mutating operations the idempotency layer covers (default: all three under `article`
    /// and `ietf-draft`; `create` and `action` — POST — under `stripe-v1`). A check of an uncovered
    /// operation is SKIP.
    pub covers: Option<Vec<Covered>>,
}
