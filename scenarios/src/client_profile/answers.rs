//! What `idemspec client`'s faults answer, in the client's vendor's words (`answers:`): for each
//! kind of answer (the mismatch, the in-flight conflict, a rate limit, a 503, a 502, another
//! permanent 4xx) a status, headers, a content type and a body, taken from a preset of a
//! documented API's shapes and overridden field by field by the profile. The preset also gives
//! the success's defaults, so an SDK that parses only its vendor's answers (XML for EC2) is
//! judged on answers it understands.
//!
//! Each preset's shapes and the documentation they follow are in docs/client.md, "Answers in the
//! vendor's words". The wording of every message is idemspec's own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::load::Spanned;
use crate::profile::{Contract, Preset, Refusal};

/// A set of answer shapes (`answers.preset`). Omitted, the contract's preset picks it: `article`
/// and `ietf-draft` answer RFC 9457 problems, the others their own API's shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnswersPreset {
    /// RFC 9457 problem details (`application/problem+json`); the statuses alone tell the
    /// answers apart, so the permanent 4xx takes a status neither refusal uses.
    Problem,
    /// Stripe's error object, `{"error": {"type", "code", "message"}}` (stripe: errors).
    StripeV1,
    /// AWS's JSON protocol: `{"__type", "message"}` with `X-Amzn-ErrorType`
    /// (`application/x-amz-json-1.1`).
    AwsClientToken,
    /// EC2's Query protocol: `<Response><Errors><Error><Code>` in XML.
    AwsQuery,
    /// Google's error model, `{"error": {"code", "message", "status", "errors"}}`, and an
    /// Operation as the success.
    GcpRequestId,
}

impl AnswersPreset {
    /// Its name as written in profiles.
    pub fn name(self) -> &'static str {
        match self {
            AnswersPreset::Problem => "problem",
            AnswersPreset::StripeV1 => "stripe-v1",
            AnswersPreset::AwsClientToken => "aws-client-token",
            AnswersPreset::AwsQuery => "aws-query",
            AnswersPreset::GcpRequestId => "gcp-request-id",
        }
    }

    /// The shapes a contract preset's API answers in.
    pub fn of(contract: Preset) -> Self {
        match contract {
            Preset::Article | Preset::IetfDraft => AnswersPreset::Problem,
            Preset::StripeV1 => AnswersPreset::StripeV1,
            Preset::AwsClientToken => AnswersPreset::AwsClientToken,
            Preset::GcpRequestId => AnswersPreset::GcpRequestId,
        }
    }
}

/// The kinds of answer the client checks give, each a field of `answers:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// The key was reused with another request (`no-retry-4xx`); its status is the contract's.
    Mismatch,
    /// The key's first request is still in flight (`in-flight`, `same-key`, `backoff`); its
    /// status is the contract's, and the check adds `Retry-After`.
    InFlight,
    /// Too many requests (`backoff`, with `Retry-After`).
    RateLimited,
    /// The service is unavailable (`key-present`, `same-key`, `backoff`).
    Unavailable,
    /// A gateway error (`bounded-retries`, `backoff`, `key-present`, `same-key`).
    BadGateway,
    /// Another permanent 4xx: the request is invalid (`no-retry-4xx`).
    Invalid,
}

impl AnswerKind {
    /// Every kind, in the order of `answers:`'s fields.
    pub const ALL: [AnswerKind; 6] = [
        AnswerKind::Mismatch,
        AnswerKind::InFlight,
        AnswerKind::RateLimited,
        AnswerKind::Unavailable,
        AnswerKind::BadGateway,
        AnswerKind::Invalid,
    ];

    /// Its field name in `answers:`.
    pub fn field(self) -> &'static str {
        match self {
            AnswerKind::Mismatch => "mismatch",
            AnswerKind::InFlight => "in_flight",
            AnswerKind::RateLimited => "rate_limited",
            AnswerKind::Unavailable => "unavailable",
            AnswerKind::BadGateway => "bad_gateway",
            AnswerKind::Invalid => "invalid",
        }
    }

    /// The statuses an answer of this kind may have.
    fn statuses(self) -> std::ops::RangeInclusive<u16> {
        match self {
            AnswerKind::Mismatch | AnswerKind::InFlight | AnswerKind::Invalid => 400..=499,
            // AWS's JSON services throttle with a 400 as often as with a 429.
            AnswerKind::RateLimited => 400..=599,
            AnswerKind::Unavailable | AnswerKind::BadGateway => 500..=599,
        }
    }
}

/// `answers:` as the profile writes it: a preset, and answers whose fields override it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AnswersSpec {
    /// The shapes to start from; omitted, the contract preset's.
    #[serde(default)]
    pub preset: Option<AnswersPreset>,
    /// The mismatch rejection.
    #[serde(default)]
    pub mismatch: Option<Spanned<AnswerSpec>>,
    /// The in-flight conflict.
    #[serde(default)]
    pub in_flight: Option<Spanned<AnswerSpec>>,
    /// The rate limit.
    #[serde(default)]
    pub rate_limited: Option<Spanned<AnswerSpec>>,
    /// The 503.
    #[serde(default)]
    pub unavailable: Option<Spanned<AnswerSpec>>,
    /// The 502.
    #[serde(default)]
    pub bad_gateway: Option<Spanned<AnswerSpec>>,
    /// Another permanent 4xx.
    #[serde(default)]
    pub invalid: Option<Spanned<AnswerSpec>>,
}

impl AnswersSpec {
    /// The profile's override of `kind`, if it gives one.
    pub fn of(&self, kind: AnswerKind) -> Option<&Spanned<AnswerSpec>> {
        match kind {
            AnswerKind::Mismatch => self.mismatch.as_ref(),
            AnswerKind::InFlight => self.in_flight.as_ref(),
            AnswerKind::RateLimited => self.rate_limited.as_ref(),
            AnswerKind::Unavailable => self.unavailable.as_ref(),
            AnswerKind::BadGateway => self.bad_gateway.as_ref(),
            AnswerKind::Invalid => self.invalid.as_ref(),
        }
    }
}

/// One answer as the profile writes it; each field it omits is the preset's.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerSpec {
    /// The status (the kind's range: a 4xx for the refusals and `invalid`, a 5xx for
    /// `unavailable` and `bad_gateway`, either for `rate_limited`).
    #[serde(default)]
    pub status: Option<u16>,
    /// Response headers besides `Content-Type` and `Retry-After` (which the checks set); they
    /// replace the preset's.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// The body's type.
    #[serde(default)]
    pub content_type: Option<String>,
    /// The body, sent as is.
    #[serde(default)]
    pub body: Option<String>,
}

/// An answer, resolved: what the proxy sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// Headers besides `Content-Type`.
    pub headers: Vec<(String, String)>,
    /// The body's type.
    pub content_type: String,
    /// The body.
    pub body: String,
}

/// The success a preset answers when the profile gives none of its own: status, type, body
/// (`{{id}}` and `{{key}}` filled in by the canned upstream).
pub(super) fn success(preset: AnswersPreset) -> (u16, &'static str, &'static str) {
    match preset {
        AnswersPreset::Problem => (201, "application/json", r#"{"id":"idemspec-1"}"#),
        AnswersPreset::StripeV1 => (
            200,
            "application/json",
            r#"{"id":"idemspec_{{id}}","object":"idemspec"}"#,
        ),
        AnswersPreset::AwsClientToken => (
            200,
            AWS_JSON,
            r#"{"id":"idemspec-{{id}}","clientToken":"{{key}}"}"#,
        ),
        AnswersPreset::AwsQuery => (
            200,
            XML,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<IdemspecResponse \
             xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>\
             00000000-0000-4000-8000-000000000001</requestId><id>idemspec-{{id}}</id>\
             <clientToken>{{key}}</clientToken></IdemspecResponse>",
        ),
        // A finished Operation (Compute Engine's `compute#operation`).
        AnswersPreset::GcpRequestId => (
            200,
            "application/json",
            r#"{"kind":"compute#operation","id":"{{id}}","name":"operation-{{id}}","operationType":"insert","status":"DONE","progress":100,"targetLink":"https://compute.googleapis.com/compute/v1/projects/p/zones/z/instances/idemspec-{{id}}"}"#,
        ),
    }
}

/// The type AWS's JSON protocol answers with.
const AWS_JSON: &str = "application/x-amz-json-1.1";
/// The type EC2's Query protocol answers with.
const XML: &str = "text/xml;charset=UTF-8";

/// The answer of `kind` under `preset` and `contract` (whose statuses the refusals keep), with
/// the profile's `spec` laid over it field by field.
pub fn resolve(
    preset: AnswersPreset,
    contract: &Contract,
    kind: AnswerKind,
    spec: Option<&AnswerSpec>,
) -> Answer {
    let mut answer = preset_answer(preset, contract, kind);
    if let Some(spec) = spec {
        if let Some(status) = spec.status {
            answer.status = status;
        }
        if let Some(headers) = &spec.headers {
            answer.headers = headers.clone().into_iter().collect();
        }
        if let Some(t) = &spec.content_type {
            answer.content_type.clone_from(t);
        }
        if let Some(b) = &spec.body {
            answer.body.clone_from(b);
        }
    }
    answer
}

/// What the contract's refusal of `kind` is, if `kind` is one.
fn refusal(kind: AnswerKind) -> Option<Refusal> {
    match kind {
        AnswerKind::Mismatch => Some(Refusal::Mismatch),
        AnswerKind::InFlight => Some(Refusal::InFlight),
        _ => None,
    }
}

/// Whether `answer`, given as `kind`, is what `contract` calls that refusal (its status declared
/// for it and, where the contract names a body condition, its body saying it). `None` for a kind
/// that is no refusal.
pub fn is_the_refusal(contract: &Contract, kind: AnswerKind, answer: &Answer) -> Option<bool> {
    let refusal = refusal(kind)?;
    let body = serde_json::from_str::<serde_json::Value>(&answer.body).ok();
    Some(contract.refuses(refusal, answer.status, body.as_ref()))
}

/// The preset's answer of `kind`.
fn preset_answer(preset: AnswersPreset, contract: &Contract, kind: AnswerKind) -> Answer {
    let refusal_status = |statuses: &[u16]| statuses.first().copied().unwrap_or(409);
    let status = match kind {
        AnswerKind::Mismatch => refusal_status(&contract.mismatch_status),
        AnswerKind::InFlight => refusal_status(&contract.in_flight_status),
        AnswerKind::RateLimited => 429,
        AnswerKind::Unavailable => 503,
        AnswerKind::BadGateway => 502,
        AnswerKind::Invalid => match preset {
            // Status alone tells a problem apart: one the refusals do not use.
            AnswersPreset::Problem => {
                let taken = |s: &u16| {
                    contract.mismatch_status.contains(s) || contract.in_flight_status.contains(s)
                };
                [400, 422, 404]
                    .into_iter()
                    .find(|s| !taken(s))
                    .unwrap_or(404)
            }
            _ => 400,
        },
    };
    match preset {
        AnswersPreset::Problem => problem(kind, status),
        AnswersPreset::StripeV1 => stripe(kind, status),
        AnswersPreset::AwsClientToken => aws_json(kind, status),
        AnswersPreset::AwsQuery => aws_query(kind, status),
        AnswersPreset::GcpRequestId => gcp(kind, status),
    }
}

/// An RFC 9457 problem whose `type` ends in the kind's name.
fn problem(kind: AnswerKind, status: u16) -> Answer {
    let (name, title) = match kind {
        AnswerKind::Mismatch => (
            "key-reused-with-different-request",
            "The key was used with a different request",
        ),
        AnswerKind::InFlight => (
            "request-in-progress",
            "A request with this key is in progress",
        ),
        AnswerKind::RateLimited => ("rate-limited", "Too Many Requests"),
        AnswerKind::Unavailable => ("unavailable", "Service Unavailable"),
        AnswerKind::BadGateway => ("bad-gateway", "Bad Gateway"),
        AnswerKind::Invalid => ("invalid-request", "The request is invalid"),
    };
    Answer {
        status,
        headers: Vec::new(),
        content_type: "application/problem+json".into(),
        body: serde_json::json!({
            "type": format!("https://idemspec.dev/problems/{name}"),
            "title": title,
            "status": status,
            "detail": format!("idemspec answered {status} on purpose ({name})"),
        })
        .to_string(),
    }
}

/// Stripe's error object: `type` tells the class (`idempotency_error`, `invalid_request_error`,
/// `api_error`), `code` the case (`idempotency_key_in_use`, `rate_limit`).
fn stripe(kind: AnswerKind, status: u16) -> Answer {
    let (ty, code, message) = match kind {
        AnswerKind::Mismatch => (
            "idempotency_error",
            None,
            "This idempotency key was used with other parameters; send a new key for a new request.",
        ),
        AnswerKind::InFlight => (
            "idempotency_error",
            Some("idempotency_key_in_use"),
            "A request with this idempotency key is still being processed; try again shortly.",
        ),
        AnswerKind::RateLimited => (
            "invalid_request_error",
            Some("rate_limit"),
            "Too many requests arrived too quickly; slow down.",
        ),
        AnswerKind::Unavailable | AnswerKind::BadGateway => (
            "api_error",
            None,
            "The API could not answer this time; the request may be retried.",
        ),
        AnswerKind::Invalid => (
            "invalid_request_error",
            Some("parameter_invalid_empty"),
            "A required parameter was empty.",
        ),
    };
    let mut error = serde_json::json!({ "type": ty, "message": message });
    if let Some(code) = code {
        error["code"] = code.into();
    }
    Answer {
        status,
        headers: vec![("Request-Id".into(), "req_idemspec".into())],
        content_type: "application/json".into(),
        body: serde_json::json!({ "error": error }).to_string(),
    }
}

/// The AWS error code of `kind` under either protocol: the codes the AWS SDKs classify (a
/// throttling code and `PriorRequestNotComplete` are retried, `IdempotentParameterMismatch` and
/// a validation error are not). `json` picks the JSON protocol's spelling.
fn aws_code(kind: AnswerKind, json: bool) -> &'static str {
    match (kind, json) {
        (AnswerKind::Mismatch, true) => "IdempotentParameterMismatchException",
        (AnswerKind::Mismatch, false) => "IdempotentParameterMismatch",
        (AnswerKind::InFlight, _) => "PriorRequestNotComplete",
        (AnswerKind::RateLimited, true) => "ThrottlingException",
        (AnswerKind::RateLimited, false) => "RequestLimitExceeded",
        (AnswerKind::Unavailable, true) => "ServiceUnavailableException",
        (AnswerKind::Unavailable, false) => "Unavailable",
        (AnswerKind::BadGateway, true) => "InternalFailure",
        (AnswerKind::BadGateway, false) => "InternalError",
        (AnswerKind::Invalid, true) => "ValidationException",
        (AnswerKind::Invalid, false) => "InvalidParameterValue",
    }
}

/// A sentence for an AWS error of `kind`.
fn aws_message(kind: AnswerKind) -> &'static str {
    match kind {
        AnswerKind::Mismatch => "The client token was used with other parameters.",
        AnswerKind::InFlight => "A request with this client token has not completed yet.",
        AnswerKind::RateLimited => "Request rate exceeded.",
        AnswerKind::Unavailable => "The service is unavailable. Try again later.",
        AnswerKind::BadGateway => "The service encountered an internal error.",
        AnswerKind::Invalid => "A parameter value is not valid.",
    }
}

/// AWS's JSON protocol: the code in `__type` and in `X-Amzn-ErrorType`.
fn aws_json(kind: AnswerKind, status: u16) -> Answer {
    let code = aws_code(kind, true);
    Answer {
        status,
        headers: vec![
            ("X-Amzn-ErrorType".into(), code.into()),
            (
                "X-Amzn-RequestId".into(),
                "00000000-0000-4000-8000-000000000001".into(),
            ),
        ],
        content_type: AWS_JSON.into(),
        body: serde_json::json!({ "__type": code, "message": aws_message(kind) }).to_string(),
    }
}

/// EC2's Query protocol: an XML `Response` with one `Error`.
fn aws_query(kind: AnswerKind, status: u16) -> Answer {
    Answer {
        status,
        headers: Vec::new(),
        content_type: XML.into(),
        body: format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{}</Code>\
             <Message>{}</Message></Error></Errors>\
             <RequestID>00000000-0000-4000-8000-000000000001</RequestID></Response>",
            aws_code(kind, false),
            aws_message(kind)
        ),
    }
}

/// Google's error model: the HTTP status in `code`, the canonical code in `status`, a reason in
/// `errors[0].reason`.
fn gcp(kind: AnswerKind, status: u16) -> Answer {
    let (canonical, reason, message) = match kind {
        // Compute Engine answers a repeated request id with the original operation; a client
        // that is told otherwise gets the conflict code a repeated name gets.
        AnswerKind::Mismatch => (
            "ALREADY_EXISTS",
            "alreadyExists",
            "The request id was used with another request.",
        ),
        AnswerKind::InFlight => (
            "ABORTED",
            "aborted",
            "A request with this request id is still running.",
        ),
        AnswerKind::RateLimited => (
            "RESOURCE_EXHAUSTED",
            "rateLimitExceeded",
            "Rate limit exceeded.",
        ),
        AnswerKind::Unavailable => ("UNAVAILABLE", "backendError", "The service is unavailable."),
        AnswerKind::BadGateway => ("UNAVAILABLE", "backendError", "Bad gateway."),
        AnswerKind::Invalid => ("INVALID_ARGUMENT", "invalid", "A field is not valid."),
    };
    Answer {
        status,
        headers: Vec::new(),
        content_type: "application/json".into(),
        body: serde_json::json!({
            "error": {
                "code": status,
                "message": message,
                "status": canonical,
                "errors": [{ "message": message, "domain": "global", "reason": reason }],
            }
        })
        .to_string(),
    }
}

/// What is wrong with the profile's `spec` of `kind` resolved as `answer`, each in words: a status
/// out of the kind's range, the wait header (`wait_header`, the checks' to send), a refusal the
/// contract would not call one.
pub(super) fn problems(
    kind: AnswerKind,
    spec: &AnswerSpec,
    answer: &Answer,
    contract: &Contract,
    wait_header: &str,
) -> Vec<String> {
    let field = kind.field();
    let mut out = Vec::new();
    if let Some(status) = spec.status {
        let range = kind.statuses();
        if !range.contains(&status) {
            out.push(format!(
                "answers.{field}.status {status} is not {} to {}",
                range.start(),
                range.end()
            ));
        }
    }
    for (name, _) in &answer.headers {
        if name.eq_ignore_ascii_case("retry-after") || name.eq_ignore_ascii_case(wait_header) {
            out.push(format!(
                "answers.{field}.headers: `{name}` is the checks' to send (the profile's \
                 `retry_after`), not the answer's"
            ));
        }
    }
    // A body condition reads JSON; an XML refusal is told apart by the client alone.
    let json = answer.content_type.contains("json");
    if json && is_the_refusal(contract, kind, answer) == Some(false) {
        let condition = refusal(kind)
            .and_then(|r| contract.body_of(r))
            .map(|c| format!(" with {}", c.describe()))
            .unwrap_or_default();
        out.push(format!(
            "answers.{field} answers {} but the contract calls its {} {:?}{condition}; a client \
             written for it could not tell what this answer is",
            answer.status,
            match kind {
                AnswerKind::Mismatch => "mismatch",
                _ => "in-flight conflict",
            },
            match kind {
                AnswerKind::Mismatch => &contract.mismatch_status,
                _ => &contract.in_flight_status,
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ContractSpec;

    fn contract(preset: &str) -> Contract {
        serde_saphyr::from_str::<ContractSpec>(&format!("preset: {preset}"))
            .expect("a preset")
            .resolve()
    }

    #[test]
    fn each_presets_refusals_are_what_its_contract_calls_them() {
        for (name, preset) in [
            ("article", AnswersPreset::Problem),
            ("ietf-draft", AnswersPreset::Problem),
            ("stripe-v1", AnswersPreset::StripeV1),
            ("aws-client-token", AnswersPreset::AwsClientToken),
            ("aws-client-token", AnswersPreset::AwsQuery),
            ("gcp-request-id", AnswersPreset::GcpRequestId),
        ] {
            let c = contract(name);
            for kind in AnswerKind::ALL {
                let answer = resolve(preset, &c, kind, None);
                assert!(
                    kind.statuses().contains(&answer.status),
                    "{name}/{}: {}",
                    kind.field(),
                    answer.status
                );
                if preset != AnswersPreset::AwsQuery {
                    assert_ne!(
                        is_the_refusal(&c, kind, &answer),
                        Some(false),
                        "{name}/{}",
                        kind.field()
                    );
                    serde_json::from_str::<serde_json::Value>(&answer.body).expect("JSON");
                }
            }
        }
    }

    #[test]
    fn the_problem_presets_permanent_4xx_takes_a_status_no_refusal_uses() {
        let stripe_statuses = contract("stripe-v1");
        let invalid = resolve(
            AnswersPreset::Problem,
            &stripe_statuses,
            AnswerKind::Invalid,
            None,
        );
        assert_eq!(invalid.status, 422, "400 is stripe-v1's mismatch");
        let stripe = resolve(
            AnswersPreset::StripeV1,
            &stripe_statuses,
            AnswerKind::Invalid,
            None,
        );
        assert_eq!(stripe.status, 400, "the body tells it from the mismatch");
    }

    #[test]
    fn a_profiles_fields_override_the_presets_one_by_one() {
        let c = contract("stripe-v1");
        let spec = AnswerSpec {
            status: Some(402),
            body: Some("{}".into()),
            ..AnswerSpec::default()
        };
        let answer = resolve(
            AnswersPreset::StripeV1,
            &c,
            AnswerKind::Invalid,
            Some(&spec),
        );
        assert_eq!((answer.status, answer.body.as_str()), (402, "{}"));
        assert_eq!(answer.content_type, "application/json", "the preset's");
        assert_eq!(answer.headers[0].0, "Request-Id", "the preset's");
    }
}
