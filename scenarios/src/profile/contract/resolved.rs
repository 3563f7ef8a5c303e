//! The resolved contract, what checks judge against: the preset with every override applied, and
//! what it says of an answer (a refusal, a replay under another status, a stored status) and of
//! the key a check sends.

use serde::{Deserialize, Serialize};

use super::{
    BodyCondition, Covered, ErrorShape, KeyForm, Preset, ReplayBody, ReplayBy, StoredStatus,
};
use crate::profile::KeyAt;

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
    /// What a refusal's body is promised to look like (key-validation's SHOULD of an error body;
    /// what tells two refusals apart).
    pub error_shape: ErrorShape,
    /// Whether an in-flight refusal is promised to carry `Retry-After` (a SHOULD of
    /// concurrent-same-key and client-timeout-in-flight where it is).
    pub in_flight_retry_after: bool,
    /// Declared in-flight TTL, if any.
    pub in_flight_ttl: Option<std::time::Duration>,
    /// How a same-key request arriving while the first runs waits for it, if the contract says
    /// it waits (otherwise it is refused at once, with `in_flight_status`).
    pub in_flight_wait: Option<super::InFlightWait>,
    /// How long a completed key's record is kept, if declared: a window, or while its resource
    /// exists.
    pub retention: Option<super::Retention>,
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
    /// What the body of a replay under `replay_status` says, if declared: a value at a place,
    /// or the original answer's body itself.
    pub replay_body: Option<ReplayBody>,
    /// Where a replay under `replay_status` names the original's resource (`$.Error.ResourceId`),
    /// if declared: an answer naming the original's id there is its replay.
    pub replay_id_at: Option<crate::value::JsonPathExpr>,
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

/// A rule some contracts promise and others do not, named by the contract field that says
/// whether it does (a scenario assertion's `if_contract`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Promise {
    /// An in-flight refusal carries `Retry-After` (`in_flight_retry_after`).
    InFlightRetryAfter,
}

impl Promise {
    /// The contract field that says whether it is promised.
    pub fn field(self) -> &'static str {
        match self {
            Promise::InFlightRetryAfter => "in_flight_retry_after",
        }
    }

    /// What is promised, for a sentence.
    pub fn what(self) -> &'static str {
        match self {
            Promise::InFlightRetryAfter => "`Retry-After` on an in-flight refusal",
        }
    }
}

impl Contract {
    /// Whether the contract promises `promise`.
    pub fn promises(&self, promise: Promise) -> bool {
        match promise {
            Promise::InFlightRetryAfter => self.in_flight_retry_after,
        }
    }

    /// Where the contract does not promise `promise`, the sentence that says it is not looked
    /// for and who says so; `None` where it does.
    pub fn unpromised(&self, promise: Promise) -> Option<String> {
        if self.promises(promise) {
            return None;
        }
        let field = promise.field();
        let written = if self.overridden.contains(&field) {
            String::new()
        } else {
            format!(" (`{field}: false`)")
        };
        Some(format!(
            "{} is not looked for: {} does not promise it{written}",
            promise.what(),
            self.who_says(field, "false")
        ))
    }

    /// The source of `promise`'s rule where the profile, not the preset, promises it: the
    /// profile's field over the preset, to cite in place of the preset's source.
    pub fn promised_by_profile(&self, promise: Promise) -> Option<String> {
        let field = promise.field();
        (self.promises(promise) && self.overridden.contains(&field))
            .then(|| self.who_says(field, "true"))
    }

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

    /// Whether an answer of `status` is one a declared wait ends in when it runs out
    /// (`in_flight_wait.then`): like an in-flight refusal, it says the key was still in flight.
    pub fn wait_ran_out(&self, status: u16) -> bool {
        self.in_flight_wait
            .as_ref()
            .is_some_and(|w| w.then.contains(&status))
    }

    /// Whether an answer of `status` with `body` says the key was in flight: the contract's
    /// in-flight refusal, or the status a declared wait ends in.
    pub fn holds_in_flight(&self, status: u16, body: Option<&serde_json::Value>) -> bool {
        self.refuses(Refusal::InFlight, status, body) || self.wait_ran_out(status)
    }

    /// Whether an answer of `status` is a replay of a completed success under another status, as
    /// the contract declares (`replay_status`), and by what: a middleware that answers a
    /// completed key `409` with the original body. `marked` says whether the answer carries the
    /// contract's replay marker (`replayed_header`), `body` is its JSON, if it parsed, and
    /// `content` what the caller found it to carry of the original answer (its body, or its id at
    /// `replay_id_at`), which only the caller, who saw the original, can tell.
    ///
    /// An answer a refusal's declared body condition recognises is that refusal. Otherwise, where
    /// the profile declares how a replay is recognised (`replay_body`, `replay_id_at`), that
    /// decides: a value at a place in the body, or the original's body or id; and a status that is also a
    /// refusal's, with nothing in the body to tell them apart, is a replay only with the marker.
    /// [`Contract::ambiguous_replay`] refuses at load a contract where nothing could tell them
    /// apart.
    pub fn replays_under(
        &self,
        status: u16,
        marked: bool,
        body: Option<&serde_json::Value>,
        content: Option<ReplayBy>,
    ) -> Option<ReplayBy> {
        if !self.replay_status.contains(&status) {
            return None;
        }
        // What a refusal's declared body says decides first: a 409 naming a resource is still the
        // mismatch when its body says `mismatch`, whatever a replay is recognised by.
        if Refusal::ALL
            .iter()
            .any(|r| self.body_of(*r).is_some() && self.refuses(*r, status, body))
        {
            return None;
        }
        if self.replay_body.is_some() || self.replay_id_at.is_some() {
            let says = self
                .replay_body
                .as_ref()
                .and_then(ReplayBody::condition)
                .filter(|c| c.holds(body))
                .map(|_| ReplayBy::DeclaredBody);
            return says.or(content);
        }
        let shared = Refusal::ALL
            .iter()
            .any(|r| self.body_of(*r).is_none() && self.refuses(*r, status, body));
        match (shared, marked) {
            (false, _) => Some(ReplayBy::DeclaredStatus),
            (true, true) => Some(ReplayBy::Marker),
            (true, false) => None,
        }
    }

    /// Whether a replay is recognised by what it carries of the original answer: `replay_body:
    /// original` or a `replay_id_at`, which a reader must compare with the original it saw.
    pub fn recognises_replay_by_content(&self) -> bool {
        self.replay_body == Some(ReplayBody::Original) || self.replay_id_at.is_some()
    }

    /// Whether an answer is a replay wrapped in the declared envelope: `replay_envelope` is
    /// declared and `replay_body: {at, is}` says so (without it, `marked`: the replay marker
    /// header).
    pub fn envelops(&self, marked: bool, body: Option<&serde_json::Value>) -> bool {
        self.replay_envelope.is_some()
            && self
                .replay_body
                .as_ref()
                .and_then(ReplayBody::condition)
                .map_or(marked, |condition| condition.holds(body))
    }

    /// Where a `replay_status` code is also a refusal's status with nothing declared to tell the
    /// two apart (no `replay_body`, no `replay_id_at`, no body condition of that refusal's, no
    /// `replayed_header`), the code and the refusal's field (`(409, "in_flight_status")`).
    pub fn ambiguous_replay(&self) -> Option<(u16, &'static str)> {
        if self.replay_body.is_some()
            || self.replay_id_at.is_some()
            || !self.replayed_header.is_empty()
        {
            return None;
        }
        self.replay_status.iter().find_map(|&code| {
            Refusal::ALL.iter().find_map(|&r| {
                (self.body_of(r).is_none() && self.refuses(r, code, None))
                    .then_some((code, r.status_field()))
            })
        })
    }

    /// Where a `replay_status` code is also a refusal's status and only the preset's replay marker
    /// tells the two apart (the profile declares no `replayed_header`, `replay_body` or
    /// `replay_id_at`, nor that refusal's body): a warning saying what to declare. An API that
    /// sends no such marker has every such answer read as the refusal.
    pub fn replay_marker_warning(&self) -> Option<String> {
        if self.overridden.contains(&"replayed_header")
            || self.replayed_header.is_empty()
            || self.replay_body.is_some()
            || self.replay_id_at.is_some()
        {
            return None;
        }
        let (code, field) = self.replay_status.iter().find_map(|&code| {
            Refusal::ALL.iter().find_map(|&r| {
                (self.body_of(r).is_none() && self.refuses(r, code, None))
                    .then_some((code, r.status_field()))
            })
        })?;
        Some(format!(
            "replay_status {code} is also the contract's `{field}`, and only the {} preset's \
             replay marker (`{}`) tells a replay from that refusal: where the API sends no such \
             header, every {code} is read as the refusal. Declare the header it sends \
             (`replayed_header`), or `replayed_header: \"\"` and how a replay is told: its body \
             is the original's (`replay_body: original`), it names the original's id \
             (`replay_id_at`), or what it says (`replay_body: {{at: …, is: …}}`)",
            self.preset.name(),
            self.replayed_header
        ))
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
