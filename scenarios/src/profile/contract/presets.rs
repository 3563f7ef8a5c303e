//! The presets a contract starts from (`contract.preset:`): the name a profile writes, and each
//! preset's contract, with the documentation each value comes from.

use serde::{Deserialize, Serialize};

use super::{
    BodyCondition, Contract, Covered, ErrorShape, KeyForm, MismatchAnswer, Replays, Retention,
    StoredStatus,
};
use crate::profile::KeyAt;

/// A named starting point for a contract (README "Point it at your own API"; each preset's values
/// in [`Preset::contract`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The article's contract (leasebroker's): 409 for mismatch and in flight (with
    /// `Retry-After`), every refusal an RFC 9457 problem, 5xx never stored, per-principal and
    /// per-endpoint scope, 400 for a missing key.
    #[default]
    Article,
    /// draft-ietf-httpapi-idempotency-key-header: 400 missing key, 422 mismatch, 409 in flight,
    /// Structured Fields string keys.
    IetfDraft,
    /// Stripe's API (stripe: idempotency): 400 mismatch, 409 in flight, a 500 is replayed,
    /// `Idempotent-Replayed` on replays, keys optional, every error Stripe's `error` object.
    StripeV1,
    /// AWS's client token (EC2 "Ensuring idempotency", and the JSON-protocol services'
    /// `clientToken`): in a JSON body, at most 64 ASCII characters, optional; a reused token with
    /// other parameters is a 400 `IdempotentParameterMismatch`; no header marks a replay.
    AwsClientToken,
    /// Google Cloud's `requestId` (Compute Engine's API reference): a UUID in the query, optional;
    /// a repeated one gets the original operation, other parameters ignored; no header marks a
    /// replay.
    GcpRequestId,
}

impl Preset {
    /// The preset's name as written in profiles (`article`, `ietf-draft`, `stripe-v1`).
    pub fn name(self) -> &'static str {
        match self {
            Preset::Article => "article",
            Preset::IetfDraft => "ietf-draft",
            Preset::StripeV1 => "stripe-v1",
            Preset::AwsClientToken => "aws-client-token",
            Preset::GcpRequestId => "gcp-request-id",
        }
    }

    /// Where the preset's `error_shape` comes from, to cite beside a refusal judged by it.
    pub fn error_source(self) -> &'static str {
        match self {
            Preset::Article => "article: every error a problem document; RFC 9457",
            Preset::IetfDraft => "ietf-draft-07 §2.7 (error scenarios); RFC 9457",
            Preset::StripeV1 => "stripe: errors (the error object and its type)",
            Preset::AwsClientToken => "AWS JSON protocol: the error named in __type",
            Preset::GcpRequestId => "Google Cloud APIs: errors (the error object)",
        }
    }

    /// The preset's contract, before any override: what a profile that names only the preset
    /// claims.
    pub fn contract(self) -> Contract {
        match self {
            Preset::Article => article(),
            Preset::IetfDraft => ietf_draft(),
            Preset::StripeV1 => stripe_v1(),
            Preset::AwsClientToken => aws_client_token(),
            Preset::GcpRequestId => gcp_request_id(),
        }
    }
}

/// The article's contract (leasebroker's), the one every other preset changes a few fields of.
fn article() -> Contract {
    Contract {
        preset: Preset::Article,
        header: "Idempotency-Key".into(),
        key_at: KeyAt::Header("Idempotency-Key".into()),
        mismatch_status: vec![409],
        in_flight_status: vec![409],
        missing_key_status: vec![400],
        mismatch_body: None,
        in_flight_body: None,
        missing_key_body: None,
        // Every refusal an RFC 9457 problem, and `409` + `Retry-After` while in flight.
        error_shape: ErrorShape::Problem,
        in_flight_retry_after: true,
        in_flight_ttl: None,
        in_flight_wait: None,
        retention: None,
        key_required: true,
        replays_5xx: false,
        stores: vec![StoredStatus::Class(2), StoredStatus::Class(4)],
        per_principal: true,
        per_endpoint: true,
        sf_string_keys: false,
        replayed_header: "Idempotent-Replayed".into(),
        key_form: KeyForm::Opaque,
        key_template: None,
        key_max_len: 255,
        mismatch_answer: MismatchAnswer::Reject,
        empty_key_is_missing: false,
        covers: vec![Covered::Create, Covered::Delete, Covered::Action],
        replay_status: Vec::new(),
        replay_body: None,
        replay_id_at: None,
        replay_envelope: None,
        replays: Replays::Stored,
        overridden: Vec::new(),
    }
}

/// draft-ietf-httpapi-idempotency-key-header-07 §2.7: 422 for a reused key with a different
/// request, its errors described as problem documents and nothing said of `Retry-After`; §2.1:
/// the key is an sf-string.
fn ietf_draft() -> Contract {
    Contract {
        preset: Preset::IetfDraft,
        mismatch_status: vec![422],
        in_flight_retry_after: false,
        sf_string_keys: true,
        // §2.2 asks a key be unique per request payload; across resources it says nothing.
        per_endpoint: false,
        ..article()
    }
}

/// stripe: idempotency — 400 for a mismatch, keys optional, results (500s included) stored for
/// 24 hours; stripe: errors — every error the `error` object, its `type` always there; no
/// `Retry-After` promised on the in-flight 409.
fn stripe_v1() -> Contract {
    Contract {
        preset: Preset::StripeV1,
        mismatch_status: vec![400],
        error_shape: ErrorShape::at(&["$.error.type"]),
        in_flight_retry_after: false,
        retention: Some(Retention::For(std::time::Duration::from_secs(24 * 3600))),
        key_required: false,
        replays_5xx: true,
        stores: vec![
            StoredStatus::Class(2),
            StoredStatus::Class(4),
            StoredStatus::Class(5),
        ],
        // A key reused on another endpoint is refused as a reused key.
        per_endpoint: false,
        // Stripe accepts keys on POST requests; a DELETE is idempotent by its own nature.
        covers: vec![Covered::Create, Covered::Action],
        ..article()
    }
}

/// EC2: the token is optional (an SDK fills one in), at most 64 ASCII characters, and the same
/// token with other parameters fails with IdempotentParameterMismatch (a 400); the JSON-protocol
/// services put it in the body as `clientToken` and name every error in `__type`. Nothing marks a
/// replay, and no `Retry-After` is promised.
fn aws_client_token() -> Contract {
    Contract {
        preset: Preset::AwsClientToken,
        error_shape: ErrorShape::at(&["$.__type"]),
        in_flight_retry_after: false,
        replays: Replays::CurrentState,
        key_at: KeyAt::Json("clientToken".into()),
        key_max_len: 64,
        key_required: false,
        mismatch_status: vec![400],
        mismatch_body: Some(BodyCondition {
            at: crate::value::JsonPathExpr::parse("$.__type")
                .expect("a JSONPath written here parses"),
            is: vec![
                "IdempotentParameterMismatch".into(),
                "IdempotentParameterMismatchException".into(),
            ],
        }),
        replayed_header: String::new(),
        covers: vec![Covered::Create, Covered::Action],
        // A token identifies one call of one action; reuse elsewhere is not documented.
        per_endpoint: false,
        ..article()
    }
}

/// Compute Engine: `requestId` is an optional query parameter, a UUID (not the zero UUID); a
/// request whose id the server has seen is ignored and the original operation returned, whatever
/// else it carries. Nothing marks a replay. Google's APIs answer every error with the `error`
/// object, its `code` always there and its `status` in the newer format; no `Retry-After` is
/// promised.
fn gcp_request_id() -> Contract {
    Contract {
        preset: Preset::GcpRequestId,
        error_shape: ErrorShape::at(&["$.error.status", "$.error.code"]),
        in_flight_retry_after: false,
        replays: Replays::CurrentState,
        key_at: KeyAt::Query("requestId".into()),
        key_form: KeyForm::Uuid,
        key_required: false,
        mismatch_answer: MismatchAnswer::Original,
        replayed_header: String::new(),
        // A request id is per request; reuse on another method is not documented.
        per_endpoint: false,
        ..article()
    }
}
