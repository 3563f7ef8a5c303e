//! The idempotency contract a target claims: a named preset and the fields it overrides.

use serde::{Deserialize, Serialize};

use crate::load::Spanned;
use crate::value::HumanDuration;

use super::key_at::KeyAt;

/// A named starting point for a contract (README "Point it at your own API"; each preset's values in `ContractSpec::resolve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The article's contract (leasebroker's): 409 for mismatch and in flight, 5xx never stored,
    /// per-principal and per-endpoint scope, 400 for a missing key.
    #[default]
    Article,
    /// draft-ietf-httpapi-idempotency-key-header: 400 missing key, 422 mismatch, 409 in flight,
    /// Structured Fields string keys.
    IetfDraft,
    /// Stripe's API (stripe: idempotency): 400 mismatch, 409 in flight, a 500 is replayed,
    /// `Idempotent-Replayed` on replays, keys optional.
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
}

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

/// The `contract:` block of a profile: a preset and optional overrides.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContractSpec {
    /// The preset the overrides apply to (default `article`).
    #[serde(default)]
    pub preset: Preset,
    /// The request header carrying the key (default `Idempotency-Key`).
    pub header: Option<String>,
    /// Where a request carries the key, when not in `header`: `{query: requestId}` (a query
    /// parameter), `{form: ClientToken}` (a field of a form body), `{json: clientToken}` (a member
    /// of a JSON body; `a.b` for one inside another), or `{header: X-Client-Token}`.
    pub key_at: Option<KeyAt>,
    /// Statuses accepted for "same key, different request" (see [`refusals`] for the form).
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
    /// How long an abandoned in-flight record locks its key (e.g. `3s`).
    pub in_flight_ttl: Option<HumanDuration>,
    /// How long completed records are kept (e.g. `24h`).
    pub retention: Option<HumanDuration>,
    /// Whether mutating requests without a key are rejected.
    pub key_required: Option<bool>,
    /// Whether a 5xx outcome is stored and replayed (`true`, Stripe) or the retry re-runs (`false`).
    pub replays_5xx: Option<bool>,
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
    pub replayed_header: Option<String>,
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
    pub key_max_len: Option<u32>,
    /// Whether an empty key header counts as no key at all (some libraries document this) rather
    /// than an invalid key (default `false`).
    pub empty_key_is_missing: Option<bool>,
    /// Statuses a replay of a completed success may come under besides the original's own (a
    /// middleware that answers a completed key `409` with the original body): each a 2xx or 4xx
    /// (see [`replay_statuses`]). Default: none (a replay keeps the original's status).
    #[serde(default, deserialize_with = "replay_statuses")]
    pub replay_status: Option<Vec<u16>>,
    /// What the body of a replay under `replay_status` says (`{at: $.cached, is: true}`), where
    /// its status alone does not tell it from a refusal with that status.
    pub replay_body: Option<BodyCondition>,
    /// What a replay of a created resource's answer shows: the stored response byte for byte
    /// (`stored`, the default) or the same resource in its current state (`current_state`, as AWS
    /// and Google Cloud document).
    pub replays: Option<Replays>,
    /// Where a replay carries the original body, for a layer that wraps its replays in an
    /// envelope (`{"cached": true, "data": {…}}`: `data`): a member name, `a.b` for one inside
    /// another. A body is such an envelope where `replay_body` says so (or, without it, where the
    /// replay marker header does).
    pub replay_envelope: Option<String>,
    /// The mutating operations the idempotency layer covers (default: all three under `article`
    /// and `ietf-draft`; `create` and `action` — POST — under `stripe-v1`). A check of an uncovered
    /// operation is SKIP.
    pub covers: Option<Vec<Covered>>,
}

/// Reads a contract's refusal statuses: one code (`422`) or a non-empty list (`[409, 423]`), each
/// a 4xx or 5xx, since each names how the API refuses a request; a null keeps the preset's.
///
/// # Errors
/// A message naming the value: a class such as `4xx` (the codes themselves are needed), a number
/// that is no HTTP status, a code below 400, or an empty list.
fn refusals<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u16>>, D::Error> {
    status_codes(d, |c| match c {
        400..=599 => Ok(()),
        _ => Err(format!(
            "{c} is not a refusal: these statuses say how the API refuses a request, a 4xx or \
             5xx such as 409 or 422"
        )),
    })
}

/// Reads `replay_status`: one code or a non-empty list, each a 2xx or 4xx (a replay of a success,
/// answered as a success or under a client error such as `409`); a null keeps the preset's.
///
/// # Errors
/// As [`refusals`], and a code that is a 1xx, 3xx or 5xx (a 5xx says the server failed, which
/// no replay of a success is).
fn replay_statuses<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u16>>, D::Error> {
    status_codes(d, |c| match c {
        200..=299 | 400..=499 => Ok(()),
        _ => Err(format!(
            "{c} is not a status a replay of a success comes under: expected a 2xx or 4xx such \
             as 200 or 409"
        )),
    })
}

/// One code (`422`) or a non-empty list of them (`[409, 423]`), each an HTTP status that
/// `allowed` accepts (its error says why not); a null is `None`.
fn status_codes<'de, D: serde::Deserializer<'de>>(
    d: D,
    allowed: fn(u16) -> Result<(), String>,
) -> Result<Option<Vec<u16>>, D::Error> {
    let code = move |v: &str| match v.trim().parse::<i128>() {
        Ok(n) => match u16::try_from(n) {
            Ok(c @ 100..=599) => allowed(c).map(|()| c),
            _ => Err(format!(
                "{n} is not an HTTP status code (100-599); expected a code such as 409"
            )),
        },
        Err(_) => Err(format!(
            "`{v}` is not a status code; list the codes themselves, e.g. [409, 423]"
        )),
    };
    one_or_list(
        d,
        ListForm {
            parse: code,
            one: "a status code such as 409",
            many: "a status code such as 422, or a list of them such as [409, 423]",
            empty: "an empty list: give at least one status code",
        },
    )
}

/// How [`one_or_list`] reads an element (a number is read as its decimal text), and what it says
/// it expected.
#[derive(Clone, Copy)]
struct ListForm<P> {
    /// An element from its text; the error names the value.
    parse: P,
    /// What one element looks like.
    one: &'static str,
    /// What the whole value looks like.
    many: &'static str,
    /// The error for an empty list.
    empty: &'static str,
}

/// One element or a non-empty list of them, each read as `form` says, duplicates dropped; a null
/// is `None` (the preset's value stands).
fn one_or_list<'de, D, T, P>(d: D, form: ListForm<P>) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: PartialEq,
    P: Fn(&str) -> Result<T, String> + Copy,
{
    use serde::de::{Error, SeqAccess, Visitor};
    /// One element, where a list element is expected.
    struct One<P>(ListForm<P>);
    impl<'de, T, P: Fn(&str) -> Result<T, String> + Copy> serde::de::DeserializeSeed<'de> for One<P> {
        type Value = T;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<T, P: Fn(&str) -> Result<T, String> + Copy> Visitor<'_> for One<P> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0.one)
        }
        fn visit_u64<E: Error>(self, n: u64) -> Result<T, E> {
            (self.0.parse)(&n.to_string()).map_err(E::custom)
        }
        fn visit_i64<E: Error>(self, n: i64) -> Result<T, E> {
            (self.0.parse)(&n.to_string()).map_err(E::custom)
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<T, E> {
            (self.0.parse)(v).map_err(E::custom)
        }
    }
    /// The whole form.
    struct Many<P>(ListForm<P>);
    impl<'de, T: PartialEq, P: Fn(&str) -> Result<T, String> + Copy> Visitor<'de> for Many<P> {
        type Value = Option<Vec<T>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0.many)
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: Error>(self, n: u64) -> Result<Self::Value, E> {
            One(self.0).visit_u64(n).map(|t| Some(vec![t]))
        }
        fn visit_i64<E: Error>(self, n: i64) -> Result<Self::Value, E> {
            One(self.0).visit_i64(n).map(|t| Some(vec![t]))
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            One(self.0).visit_str(v).map(|t| Some(vec![t]))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(t) = seq.next_element_seed(One(self.0))? {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            if out.is_empty() {
                return Err(A::Error::custom(self.0.empty));
            }
            Ok(Some(out))
        }
    }
    d.deserialize_any(Many(form))
}

/// A status, or a class of them, that an idempotency layer stores and replays
/// (`contract.stores`): `201`, or `4xx`. Written as a number or a string (`"201"`, `2xx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredStatus {
    /// One status code, 200–599.
    Code(u16),
    /// A class: 2 (`2xx`), 4 (`4xx`) or 5 (`5xx`).
    Class(u8),
}

impl StoredStatus {
    /// Whether it is a 5xx, or the 5xx class.
    pub fn is_5xx(self) -> bool {
        match self {
            Self::Code(c) => (500..=599).contains(&c),
            Self::Class(c) => c == 5,
        }
    }

    /// `text` as a stored status: `2xx`/`4xx`/`5xx`, or a code 200–599 other than a 3xx.
    ///
    /// # Errors
    /// What was expected, naming `text`.
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let class = match t.to_ascii_lowercase().as_str() {
            "2xx" => Some(2),
            "4xx" => Some(4),
            "5xx" => Some(5),
            _ => None,
        };
        if let Some(class) = class {
            return Ok(Self::Class(class));
        }
        match t.parse::<u16>() {
            Ok(c @ (200..=299 | 400..=599)) => Ok(Self::Code(c)),
            _ => Err(format!(
                "`{text}` is not an answer a layer stores: expected a class (`2xx`, `4xx`, \
                 `5xx`) or a 2xx, 4xx or 5xx code such as 201"
            )),
        }
    }
}

impl std::fmt::Display for StoredStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(c) => write!(f, "{c}"),
            Self::Class(c) => write!(f, "{c}xx"),
        }
    }
}

impl Serialize for StoredStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Reads `stores`: one stored status or a non-empty list of them; a null keeps the preset's.
///
/// # Errors
/// A message naming the value ([`StoredStatus::parse`]), or an empty list.
fn stored_statuses<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<StoredStatus>>, D::Error> {
    one_or_list(
        d,
        ListForm {
            parse: StoredStatus::parse,
            one: "a status class such as 2xx or a code such as 201",
            many: "a status class or code, or a list of them such as [2xx, 4xx]",
            empty: "an empty list: a layer that stores nothing keeps no key; list what it \
                    stores, e.g. [2xx]",
        },
    )
}

/// A resolved contract: the preset with every override applied. Checks judge against this.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contract {
    /// The preset it started from.
    pub preset: Preset,
    /// Request header carrying the key.
    pub header: String,
    /// Where a request carries the key (`KeyAt::Header` of `header` unless the profile says).
    pub key_at: KeyAt,
    /// Accepted "mismatch" statuses.
    pub mismatch_status: Vec<u16>,
    /// Accepted "in flight" statuses.
    pub in_flight_status: Vec<u16>,
    /// Accepted "missing key" statuses.
    pub missing_key_status: Vec<u16>,
    /// What a mismatch refusal's body says besides its status, if the profile declares it.
    pub mismatch_body: Option<BodyCondition>,
    /// What an in-flight refusal's body says besides its status, if declared.
    pub in_flight_body: Option<BodyCondition>,
    /// What a missing-key refusal's body says besides its status, if declared.
    pub missing_key_body: Option<BodyCondition>,
    /// Declared in-flight TTL, if any.
    pub in_flight_ttl: Option<std::time::Duration>,
    /// Declared retention window, if any.
    pub retention: Option<std::time::Duration>,
    /// Keys required on mutating requests.
    pub key_required: bool,
    /// A 5xx is replayed rather than re-run: some 5xx is in `stores`.
    pub replays_5xx: bool,
    /// The answers the idempotency layer stores and replays ([`Contract::stores_status`]).
    pub stores: Vec<StoredStatus>,
    /// Keys scoped per principal.
    pub per_principal: bool,
    /// Keys scoped per endpoint (a key reused on another endpoint is an operation of its own).
    pub per_endpoint: bool,
    /// Structured Fields string keys accepted.
    pub sf_string_keys: bool,
    /// Header marking a replay.
    pub replayed_header: String,
    /// The form of key the API accepts.
    pub key_form: KeyForm,
    /// The template of `KeyForm::Template`.
    pub key_template: Option<String>,
    /// The longest key the API accepts, in characters.
    pub key_max_len: u32,
    /// How the API answers a reused key with another request.
    pub mismatch_answer: MismatchAnswer,
    /// An empty key header counts as no key.
    pub empty_key_is_missing: bool,
    /// The mutating operations the idempotency layer covers.
    pub covers: Vec<Covered>,
    /// Statuses a replay of a completed success may come under besides the original's own.
    pub replay_status: Vec<u16>,
    /// What the body of a replay under `replay_status` says, if declared.
    pub replay_body: Option<BodyCondition>,
    /// Where a replay wrapped in an envelope carries the original body (`data`), if declared.
    pub replay_envelope: Option<String>,
    /// What a replay of a created resource's answer shows.
    pub replays: Replays,
    /// The fields the profile set over the preset (`replays_5xx`, `mismatch_status` …), so a
    /// sentence names who set the rule it judges by ([`Contract::who_says`]).
    pub overridden: Vec<&'static str>,
}

/// What a replay of a created resource's answer shows (`contract.replays`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Replays {
    /// The stored response, byte for byte (the article, the IETF draft, Stripe).
    Stored,
    /// The same resource in its current state: its body may differ from the original's where
    /// the resource changed since (AWS: "the result might contain updated information, such as
    /// the current creation status"; Google Cloud: the original operation, as it stands).
    CurrentState,
}

/// How an API answers a reused key with another request (`contract.mismatch_answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchAnswer {
    /// A refusal, with the contract's `mismatch_status` (the article, the IETF draft, Stripe).
    Reject,
    /// The original request's answer, the other request ignored (Google Cloud's `requestId`).
    Original,
}

/// The largest `key_max_len` a profile may declare: key-validation sends a key one longer.
pub const MAX_KEY_MAX_LEN: u32 = 65_535;

/// A refusal the contract names, each known by its statuses and, where declared, its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The key was reused with another request.
    Mismatch,
    /// The key's first request is still in flight.
    InFlight,
    /// A required key is missing.
    MissingKey,
}

impl Refusal {
    /// Every refusal the contract names.
    pub const ALL: [Refusal; 3] = [Refusal::Mismatch, Refusal::InFlight, Refusal::MissingKey];

    /// The contract field of its statuses (`in_flight_status`).
    pub fn status_field(self) -> &'static str {
        match self {
            Refusal::Mismatch => "mismatch_status",
            Refusal::InFlight => "in_flight_status",
            Refusal::MissingKey => "missing_key_status",
        }
    }
}

/// What a refusal's body says besides its status: the JSON value at `at` is one of `is` (a string
/// is compared as it is, a number or a boolean as written in JSON). A body that is not JSON, or
/// has nothing at `at`, does not say it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BodyCondition {
    /// Where in the body (a JSONPath, RFC 9535), e.g. `$.error.type` or `$.type`.
    pub at: crate::value::JsonPathExpr,
    /// The value (or any of the values) it must have there.
    #[serde(deserialize_with = "one_or_many")]
    pub is: Vec<String>,
}

impl BodyCondition {
    /// Whether `body` (parsed JSON, if it parsed) says it.
    pub fn holds(&self, body: Option<&serde_json::Value>) -> bool {
        let Some(found) = body.and_then(|b| self.at.first(b)) else {
            return false;
        };
        let found = match found {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.is.contains(&found)
    }

    /// `$.error.type is idempotency_error` (for sentences).
    pub fn describe(&self) -> String {
        format!("{} is {}", self.at.source(), self.is.join(" or "))
    }
}

/// One value or a non-empty list of them, as strings.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Ok(v.to_string()),
        _ => Err(serde::de::Error::custom(
            "`is` takes a string, a number or a boolean, or a list of them",
        )),
    };
    let values = match serde_json::Value::deserialize(d)? {
        serde_json::Value::Array(list) if list.is_empty() => {
            return Err(serde::de::Error::custom("`is` needs at least one value"))
        }
        serde_json::Value::Array(list) => list,
        one => vec![one],
    };
    values.into_iter().map(text).collect()
}

impl Contract {
    /// Whether an answer of `status` with `body` (parsed JSON, if it parsed) is the contract's
    /// `refusal`: its status is one declared for it and, where the profile declares what its body
    /// says, the body says it. Status alone is the default.
    pub fn refuses(&self, refusal: Refusal, status: u16, body: Option<&serde_json::Value>) -> bool {
        let (statuses, condition) = match refusal {
            Refusal::Mismatch => (&self.mismatch_status, &self.mismatch_body),
            Refusal::InFlight => (&self.in_flight_status, &self.in_flight_body),
            Refusal::MissingKey => (&self.missing_key_status, &self.missing_key_body),
        };
        statuses.contains(&status) && condition.as_ref().is_none_or(|c| c.holds(body))
    }

    /// Whether an answer of `status` is a replay of a completed success under another status, as
    /// the contract declares (`replay_status`): a middleware that answers a completed key `409`
    /// with the original body. `marked` says whether the answer carries the contract's replay
    /// marker (`replayed_header`), `body` is its JSON, if it parsed.
    ///
    /// Where `replay_body` is declared, the body must say it. Otherwise an answer a refusal's body
    /// condition recognises is that refusal, and a status that is also a refusal's, with nothing
    /// in the body to tell them apart, is a replay only with the marker. [`Contract::ambiguous_replay`]
    /// refuses at load a contract where nothing could tell them apart.
    pub fn replays_under(
        &self,
        status: u16,
        marked: bool,
        body: Option<&serde_json::Value>,
    ) -> bool {
        if !self.replay_status.contains(&status) {
            return false;
        }
        if let Some(condition) = &self.replay_body {
            return condition.holds(body);
        }
        if Refusal::ALL
            .iter()
            .any(|r| self.body_of(*r).is_some() && self.refuses(*r, status, body))
        {
            return false;
        }
        let shared = Refusal::ALL
            .iter()
            .any(|r| self.body_of(*r).is_none() && self.refuses(*r, status, body));
        !shared || marked
    }

    /// Whether an answer is a replay wrapped in the declared envelope: `replay_envelope` is
    /// declared and `replay_body` says so (without it, `marked`: the replay marker header).
    pub fn envelops(&self, marked: bool, body: Option<&serde_json::Value>) -> bool {
        self.replay_envelope.is_some()
            && self
                .replay_body
                .as_ref()
                .map_or(marked, |condition| condition.holds(body))
    }

    /// Where a `replay_status` code is also a refusal's status with nothing declared to tell the
    /// two apart (no `replay_body`, no body condition of that refusal's, no `replayed_header`),
    /// the code and the refusal's field (`(409, "in_flight_status")`).
    pub fn ambiguous_replay(&self) -> Option<(u16, &'static str)> {
        if self.replay_body.is_some() || !self.replayed_header.is_empty() {
            return None;
        }
        self.replay_status.iter().find_map(|&code| {
            Refusal::ALL.iter().find_map(|&r| {
                (self.body_of(r).is_none() && self.refuses(r, code, None))
                    .then_some((code, r.status_field()))
            })
        })
    }

    /// The body condition declared for `refusal`, if any.
    pub fn body_of(&self, refusal: Refusal) -> Option<&BodyCondition> {
        match refusal {
            Refusal::Mismatch => self.mismatch_body.as_ref(),
            Refusal::InFlight => self.in_flight_body.as_ref(),
            Refusal::MissingKey => self.missing_key_body.as_ref(),
        }
    }

    /// Who sets the rule of `field`, for a verdict's sentence: `the article contract` where the
    /// preset does, or `` the profile's `replays_5xx: true` (over the article preset) `` where the
    /// profile overrode it with `shown` (the field's value as the profile wrote it).
    pub fn who_says(&self, field: &str, shown: &str) -> String {
        if self.overridden.contains(&field) {
            format!(
                "the profile's `{field}: {shown}` (over the {} preset)",
                self.preset.name()
            )
        } else {
            format!("the {} contract", self.preset.name())
        }
    }

    /// Whether the layer stores (and replays) an answer with `status`: a listed code, or a status
    /// of a listed class, except that a class never takes in `408`, `409`, `425` and `429`,
    /// answers that ask the client to try again (the article stores "4xx that are permanent");
    /// list one of them as a code to say the layer stores it.
    pub fn stores_status(&self, status: u16) -> bool {
        let transient = matches!(status, 408 | 409 | 425 | 429);
        self.stores.iter().any(|s| match *s {
            StoredStatus::Code(code) => code == status,
            StoredStatus::Class(class) => u16::from(class) == status / 100 && !transient,
        })
    }

    /// Who says what the layer stores, for a sentence: the `stores` field where the profile set
    /// it, else `replays_5xx` (naming its value), else the preset.
    pub fn who_says_stores(&self) -> String {
        if self.overridden.contains(&"stores") {
            let listed: Vec<String> = self.stores.iter().map(ToString::to_string).collect();
            self.who_says("stores", &format!("[{}]", listed.join(", ")))
        } else {
            self.who_says("replays_5xx", &self.replays_5xx.to_string())
        }
    }

    /// Whether the idempotency layer covers `op`.
    pub fn covers(&self, op: Covered) -> bool {
        self.covers.contains(&op)
    }

    /// The key a check sends for the opaque text `opaque` (the marker and the key's name), in the
    /// contract's form: itself, a UUID derived from it, or the template filled in.
    pub fn key_of(&self, opaque: &str) -> String {
        match self.key_form {
            KeyForm::Opaque => opaque.to_owned(),
            KeyForm::Uuid => derived_uuid(opaque),
            KeyForm::Template => self
                .key_template
                .as_deref()
                .unwrap_or("{{key}}")
                .replace("{{key}}", opaque)
                .replace("{{uuid}}", &derived_uuid(opaque)),
        }
    }
}

/// The member a `replay_envelope` names: as written, or without the `$.` of a JSONPath that
/// names it (`$.data` is `data`).
fn envelope_member(written: &str) -> &str {
    written.strip_prefix("$.").unwrap_or(written)
}

/// A UUID (version 4 layout) derived from `text` by SHA-256, so the same key name in one check
/// gives the same UUID and different checks or runs (different markers) give different ones.
fn derived_uuid(text: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("idemspec-key:{text}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

impl ContractSpec {
    /// Applies the overrides to the preset.
    pub fn resolve(&self) -> Contract {
        let article = Contract {
            preset: Preset::Article,
            header: "Idempotency-Key".into(),
            key_at: KeyAt::Header("Idempotency-Key".into()),
            mismatch_status: vec![409],
            in_flight_status: vec![409],
            missing_key_status: vec![400],
            mismatch_body: None,
            in_flight_body: None,
            missing_key_body: None,
            in_flight_ttl: None,
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
            replay_envelope: None,
            replays: Replays::Stored,
            overridden: Vec::new(),
        };
        let mut c = match self.preset {
            Preset::Article => article,
            // draft-ietf-httpapi-idempotency-key-header-07 §2.7: 422 for a reused key with a
            // different request; §2.1: the key is an sf-string.
            Preset::IetfDraft => Contract {
                preset: Preset::IetfDraft,
                mismatch_status: vec![422],
                sf_string_keys: true,
                // §2.2 asks a key be unique per request payload; across resources it says nothing.
                per_endpoint: false,
                ..article
            },
            // stripe: idempotency — 400 for a mismatch, keys optional, results (500s included)
            // stored for 24 hours.
            Preset::StripeV1 => Contract {
                preset: Preset::StripeV1,
                mismatch_status: vec![400],
                retention: Some(std::time::Duration::from_secs(24 * 3600)),
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
                ..article
            },
            // EC2: the token is optional (an SDK fills one in), at most 64 ASCII characters, and
            // the same token with other parameters fails with IdempotentParameterMismatch (a
            // 400); the JSON-protocol services put it in the body as `clientToken` and name the
            // error in `__type`. Nothing marks a replay.
            Preset::AwsClientToken => Contract {
                preset: Preset::AwsClientToken,
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
                ..article
            },
            // Compute Engine: `requestId` is an optional query parameter, a UUID (not the zero
            // UUID); a request whose id the server has seen is ignored and the original operation
            // returned, whatever else it carries. Nothing marks a replay.
            Preset::GcpRequestId => Contract {
                preset: Preset::GcpRequestId,
                replays: Replays::CurrentState,
                key_at: KeyAt::Query("requestId".into()),
                key_form: KeyForm::Uuid,
                key_required: false,
                mismatch_answer: MismatchAnswer::Original,
                replayed_header: String::new(),
                // A request id is per request; reuse on another method is not documented.
                per_endpoint: false,
                ..article
            },
        };
        c.overridden = [
            ("header", self.header.is_some()),
            ("key_at", self.key_at.is_some()),
            ("mismatch_status", self.mismatch_status.is_some()),
            ("in_flight_status", self.in_flight_status.is_some()),
            ("missing_key_status", self.missing_key_status.is_some()),
            ("mismatch_body", self.mismatch_body.is_some()),
            ("in_flight_body", self.in_flight_body.is_some()),
            ("missing_key_body", self.missing_key_body.is_some()),
            ("in_flight_ttl", self.in_flight_ttl.is_some()),
            ("retention", self.retention.is_some()),
            ("key_required", self.key_required.is_some()),
            ("replays_5xx", self.replays_5xx.is_some()),
            ("stores", self.stores.is_some()),
            ("per_principal", self.per_principal.is_some()),
            ("per_endpoint", self.per_endpoint.is_some()),
            ("sf_string_keys", self.sf_string_keys.is_some()),
            ("replayed_header", self.replayed_header.is_some()),
            ("key_form", self.key_form.is_some()),
            ("empty_key_is_missing", self.empty_key_is_missing.is_some()),
            ("key_max_len", self.key_max_len.is_some()),
            ("mismatch_answer", self.mismatch_answer.is_some()),
            ("covers", self.covers.is_some()),
            ("replay_status", self.replay_status.is_some()),
            ("replay_body", self.replay_body.is_some()),
            ("replay_envelope", self.replay_envelope.is_some()),
            ("replays", self.replays.is_some()),
        ]
        .into_iter()
        .filter_map(|(field, set)| set.then_some(field))
        .collect();
        if let Some(v) = &self.header {
            c.header = v.clone();
        }
        c.key_at = match &self.key_at {
            Some(KeyAt::Header(name)) => {
                c.header = name.clone();
                KeyAt::Header(name.clone())
            }
            Some(at) => at.clone(),
            // The preset's place, unless the profile named a header.
            None if self.header.is_some() => KeyAt::Header(c.header.clone()),
            None => c.key_at.clone(),
        };
        if let Some(v) = &self.mismatch_status {
            c.mismatch_status = v.clone();
        }
        if let Some(v) = &self.in_flight_status {
            c.in_flight_status = v.clone();
        }
        if let Some(v) = &self.missing_key_status {
            c.missing_key_status = v.clone();
        }
        for (mine, preset) in [
            (&self.mismatch_body, &mut c.mismatch_body),
            (&self.in_flight_body, &mut c.in_flight_body),
            (&self.missing_key_body, &mut c.missing_key_body),
        ] {
            if let Some(condition) = mine {
                *preset = Some(condition.clone());
            }
        }
        if let Some(v) = self.in_flight_ttl {
            c.in_flight_ttl = Some(v.0);
        }
        if let Some(v) = self.retention {
            c.retention = Some(v.0);
        }
        c.key_required = self.key_required.unwrap_or(c.key_required);
        c.key_max_len = self.key_max_len.unwrap_or(c.key_max_len);
        c.mismatch_answer = self.mismatch_answer.unwrap_or(c.mismatch_answer);
        match (&self.stores, self.replays_5xx) {
            (Some(stores), _) => c.stores = stores.clone(),
            // `replays_5xx` alone adds the 5xx class to the preset's, or takes every 5xx out.
            (None, Some(true)) if !c.stores.iter().any(|s| s.is_5xx()) => {
                c.stores.push(StoredStatus::Class(5));
            }
            (None, Some(false)) => c.stores.retain(|s| !s.is_5xx()),
            (None, _) => {}
        }
        c.replays_5xx = c.stores.iter().any(|s| s.is_5xx());
        c.per_principal = self.per_principal.unwrap_or(c.per_principal);
        c.per_endpoint = self.per_endpoint.unwrap_or(c.per_endpoint);
        c.sf_string_keys = self.sf_string_keys.unwrap_or(c.sf_string_keys);
        if let Some(v) = &self.replayed_header {
            c.replayed_header = v.clone();
        }
        c.key_form = self.key_form.unwrap_or(c.key_form);
        c.key_template = self.key_template.as_ref().map(|t| t.value.clone());
        c.empty_key_is_missing = self.empty_key_is_missing.unwrap_or(c.empty_key_is_missing);
        if let Some(v) = &self.covers {
            c.covers = v.clone();
        }
        if let Some(v) = &self.replay_status {
            c.replay_status = v.clone();
        }
        if let Some(v) = &self.replay_body {
            c.replay_body = Some(v.clone());
        }
        if let Some(v) = &self.replay_envelope {
            c.replay_envelope = Some(envelope_member(v).to_owned());
        }
        c.replays = self.replays.unwrap_or(c.replays);
        c
    }

    /// Cross-field rules of the contract: `header` and `replayed_header` are HTTP field names; a
    /// template exactly with `key_form: template`, and one that makes a key of 1–255 visible ASCII
    /// characters and depends on the key.
    pub(crate) fn problems(&self) -> Vec<(Option<&crate::load::Location>, String)> {
        let mut out = Vec::new();
        if let (Some(stores), Some(replays_5xx)) = (&self.stores, self.replays_5xx) {
            if stores.iter().any(|s| s.is_5xx()) != replays_5xx {
                let listed: Vec<String> = stores.iter().map(ToString::to_string).collect();
                out.push((
                    None,
                    format!(
                        "`replays_5xx: {replays_5xx}` and `stores: [{}]` disagree on whether a \
                         5xx is stored; `stores` says it alone (list `5xx`, or a 5xx code, to \
                         store one), so leave `replays_5xx` out",
                        listed.join(", ")
                    ),
                ));
            }
        }
        if self.in_flight_ttl.is_some_and(|t| t.0.is_zero()) {
            out.push((
                None,
                "in_flight_ttl is 0s: a zero TTL would let any retry take over a request that is \
                 still running; give the TTL the API documents (e.g. `30s`), or leave it out if it \
                 has none"
                    .into(),
            ));
        }
        // An empty `replayed_header` says the API marks no replay.
        let replayed = self.replayed_header.as_ref().filter(|h| !h.is_empty());
        if let Some(Err(m)) = replayed.map(|name| super::check_header(name, "k")) {
            out.push((None, m));
        }
        if let Some(m) = self
            .header
            .as_deref()
            .and_then(super::key_at::key_header_problem)
        {
            out.push((None, m));
        }
        if let Some(m) = self.key_at.as_ref().and_then(KeyAt::problem) {
            out.push((None, m));
        }
        // One place for the key: `key_at: {header: NAME}` is `header: NAME`.
        if let (Some(header), Some(at)) = (&self.header, &self.key_at) {
            let same = matches!(at, KeyAt::Header(n) if n.eq_ignore_ascii_case(header));
            if !same {
                out.push((
                    None,
                    format!(
                        "`header: {header}` and `key_at: {}` both say where the key goes; give \
                         one (`key_at: {{header: NAME}}` is the same as `header: NAME`)",
                        at.as_yaml()
                    ),
                ));
            }
        }
        let resolved = self.resolve();
        if let Some(written) = &self.replay_envelope {
            let at = envelope_member(written);
            let bad = |c: char| "[]$*'\"@?() ".contains(c) || c.is_control();
            if at.is_empty()
                || at.len() > 256
                || at.split('.').any(str::is_empty)
                || at.chars().any(bad)
            {
                out.push((
                    None,
                    format!(
                        "replay_envelope `{written}` names no member: give the member that \
                         holds the original body (`data`, or `$.data`), names joined by single \
                         dots for one inside another (`result.data`); no index or filter"
                    ),
                ));
            }
            if resolved.replay_body.is_none() && resolved.replayed_header.is_empty() {
                out.push((
                    None,
                    "replay_envelope needs something that tells an envelope from a first \
                     answer: what a replay's body says (`replay_body: {at: $.cached, is: true}`) \
                     or the header that marks a replay (`replayed_header`)"
                        .into(),
                ));
            }
        }
        if let Some((code, field)) = resolved.ambiguous_replay() {
            out.push((
                None,
                format!(
                    "replay_status {code} is also the contract's `{field}`, and nothing tells a \
                     replay from that refusal: declare what a replay's body says (`replay_body`), \
                     what the refusal's body says (`{}`), or the header that marks a replay \
                     (`replayed_header`)",
                    field.replace("_status", "_body")
                ),
            ));
        }
        // The preset's form counts too: `gcp-request-id` sends UUIDs.
        let uuid_keys = self.key_form == Some(KeyForm::Uuid)
            || (self.key_form.is_none() && resolved.key_form == KeyForm::Uuid);
        if let Some(n) = self.key_max_len.filter(|n| uuid_keys && *n < 36) {
            out.push((
                None,
                format!(
                    "key_max_len: {n} is shorter than the 36 characters of the UUID keys the \
                     checks send (`key_form: uuid`); declare the limit the API documents"
                ),
            ));
        }
        if let Some(n) = self
            .key_max_len
            .filter(|n| !(1..=MAX_KEY_MAX_LEN).contains(n))
        {
            out.push((
                None,
                format!(
                    "key_max_len: {n} is out of range; expected 1 to {MAX_KEY_MAX_LEN} characters"
                ),
            ));
        }
        match (self.key_form, &self.key_template) {
            (Some(KeyForm::Template), None) => out.push((
                None,
                "`key_form: template` needs a `key_template`, e.g. `ord_{{uuid}}`".into(),
            )),
            (Some(KeyForm::Template), Some(t)) => {
                let rendered = t.value.replace("{{key}}", "k").replace("{{uuid}}", "u");
                if !t.value.contains("{{key}}") && !t.value.contains("{{uuid}}") {
                    out.push((Some(&t.referenced), format!(
                        "key_template `{}` has neither `{{{{key}}}}` nor `{{{{uuid}}}}`: every check would send one key",
                        t.value
                    )));
                } else if rendered.contains("{{") || !t.value.chars().all(|c| c.is_ascii_graphic())
                {
                    out.push((Some(&t.referenced), format!(
                        "key_template `{}` must be visible ASCII with only `{{{{key}}}}` and `{{{{uuid}}}}` placeholders",
                        t.value
                    )));
                }
            }
            (_, Some(t)) => out.push((
                Some(&t.referenced),
                "`key_template` applies only with `key_form: template`".into(),
            )),
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_differ_where_real_apis_do() {
        let article = ContractSpec::default().resolve();
        assert_eq!(
            (article.mismatch_status.clone(), article.replays_5xx),
            (vec![409], false)
        );
        let stripe = ContractSpec {
            preset: Preset::StripeV1,
            mismatch_status: Some(vec![422]),
            ..Default::default()
        }
        .resolve();
        assert_eq!(
            (stripe.mismatch_status, stripe.replays_5xx),
            (vec![422], true)
        );
    }

    #[test]
    fn stores_lists_what_the_layer_keeps_and_replays_5xx_is_its_shorthand() {
        let spec = |text: &str| serde_saphyr::from_str::<ContractSpec>(text);
        let c = spec("stores: [200, 201]\n").expect("parses").resolve();
        assert!(c.stores_status(201) && !c.stores_status(204) && !c.stores_status(422));
        assert!(!c.replays_5xx);
        let article = ContractSpec::default().resolve();
        assert!(article.stores_status(422) && article.stores_status(204));
        // A class never takes in the answers that ask the client to try again; a code does.
        assert!(!article.stores_status(409) && !article.stores_status(429));
        assert!(!article.stores_status(500));
        let c = spec("stores: [2xx, 4xx, 409, \"500\"]\n")
            .expect("parses")
            .resolve();
        assert!(c.stores_status(409) && c.stores_status(500) && !c.stores_status(502));
        assert!(c.replays_5xx, "a 5xx code stores a 5xx");
        assert_eq!(
            serde_json::to_value(&c.stores).expect("serialises"),
            serde_json::json!(["2xx", "4xx", "409", "500"])
        );
        let c = spec("stores: 2xx\n").expect("one class").resolve();
        assert_eq!(c.stores, vec![StoredStatus::Class(2)]);
        // `replays_5xx` alone adds the 5xx class, or takes every 5xx out of the preset's.
        let c = spec("replays_5xx: true\n").expect("parses").resolve();
        assert!(c.stores_status(503));
        let c = spec("preset: stripe-v1\nreplays_5xx: false\n")
            .expect("parses")
            .resolve();
        assert!(!c.stores_status(500) && c.stores_status(201));
        for bad in [
            "stores: []",
            "stores: [3xx]",
            "stores: [301]",
            "stores: [2xx, 99]",
        ] {
            assert!(spec(bad).is_err(), "{bad}");
        }
        let both = spec("stores: [2xx]\nreplays_5xx: true\n").expect("parses");
        let problems = both.problems();
        assert!(
            problems.iter().any(|(_, m)| m.contains("disagree")),
            "{problems:?}"
        );
        assert!(spec("stores: [2xx, 5xx]\nreplays_5xx: true\n")
            .expect("parses")
            .problems()
            .is_empty());
    }

    #[test]
    fn a_refusal_declared_by_its_body_is_known_by_status_and_body() {
        let spec: ContractSpec = serde_saphyr::from_str(
            "preset: stripe-v1\nmismatch_body: {at: $.error.type, is: idempotency_error}\n\
             in_flight_body: {at: $.code, is: [1, busy]}\n",
        )
        .expect("parses");
        let c = spec.resolve();
        let body = |v: serde_json::Value| Some(v);
        let reused = body(serde_json::json!({"error": {"type": "idempotency_error"}}));
        let unreadable = body(serde_json::json!({"error": {"type": "invalid_request_error"}}));
        assert!(c.refuses(Refusal::Mismatch, 400, reused.as_ref()));
        assert!(
            !c.refuses(Refusal::Mismatch, 400, unreadable.as_ref()),
            "another 400"
        );
        assert!(
            !c.refuses(Refusal::Mismatch, 400, None),
            "a body that is not JSON"
        );
        assert!(
            !c.refuses(Refusal::Mismatch, 409, reused.as_ref()),
            "another status"
        );
        let numbered = body(serde_json::json!({"code": 1}));
        assert!(
            c.refuses(Refusal::InFlight, 409, numbered.as_ref()),
            "a number as JSON writes it"
        );
        assert!(
            c.refuses(Refusal::MissingKey, 400, None),
            "status alone by default"
        );
        assert!(c.overridden.contains(&"mismatch_body"));
        for bad in [
            "mismatch_body: {at: $.x, is: []}",
            "mismatch_body: {at: '$[', is: a}",
            "mismatch_body: {at: $.x}",
        ] {
            assert!(
                serde_saphyr::from_str::<ContractSpec>(bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_cloud_presets_put_the_key_where_their_apis_document_it() {
        let aws = serde_saphyr::from_str::<ContractSpec>("preset: aws-client-token")
            .expect("parses")
            .resolve();
        assert_eq!(aws.key_at, KeyAt::Json("clientToken".into()));
        assert_eq!((aws.key_max_len, aws.key_required), (64, false));
        let body = serde_json::json!({"__type": "IdempotentParameterMismatch"});
        assert!(aws.refuses(Refusal::Mismatch, 400, Some(&body)));
        assert!(!aws.refuses(Refusal::Mismatch, 400, None), "any other 400");
        let gcp = serde_saphyr::from_str::<ContractSpec>("preset: gcp-request-id")
            .expect("parses")
            .resolve();
        assert_eq!(gcp.key_at, KeyAt::Query("requestId".into()));
        assert_eq!(gcp.key_form, KeyForm::Uuid);
        assert_eq!(gcp.mismatch_answer, MismatchAnswer::Original);
        assert!(gcp.replayed_header.is_empty(), "nothing marks a replay");
        // A header named in the profile still moves the key there.
        let moved =
            serde_saphyr::from_str::<ContractSpec>("preset: gcp-request-id\nheader: X-Request-Id")
                .expect("parses")
                .resolve();
        assert_eq!(moved.key_at, KeyAt::Header("X-Request-Id".into()));
        // A limit shorter than the UUIDs the checks send is refused, the preset's form included.
        for yaml in [
            "key_form: uuid\nkey_max_len: 30",
            "preset: gcp-request-id\nkey_max_len: 30",
        ] {
            let spec = serde_saphyr::from_str::<ContractSpec>(yaml).expect("parses");
            assert!(
                spec.problems()
                    .iter()
                    .any(|(_, m)| m.contains("36 characters")),
                "{yaml}"
            );
        }
    }
}
