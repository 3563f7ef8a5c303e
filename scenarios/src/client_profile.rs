//! Client profiles: how `idemspec client` drives an HTTP client (an SDK, a CLI, a service's
//! outbound calls) and judges its retries (`docs/client.md`).
//!
//! A client profile says which requests are the operation under test (method, path), what a
//! success answers (status, headers, a body the client can parse), how many logical operations one
//! run of the user's command performs, how long a run may take, the bound within which the client
//! must give up, and the idempotency contract the client is written for — the same presets as a
//! target profile (`article`, `ietf-draft`, `stripe-v1`): the contract says which header carries
//! the key and which statuses mean "mismatch" and "in flight".
//!
//! Load one with [`ClientProfile::load`]; every field has a default, so `version: 1` and a `name`
//! make a profile ([`ClientProfile::DEFAULT`] is the one `idemspec client` uses without
//! `--profile`).
//!
//! Each part is one file with its rules beside it: `operation.rs` (the requests under test),
//! `upstream.rs` (what the canned upstream answers: the success, the routes), `retries.rs` (the
//! bound on giving up, the wait header), `answers.rs` (what the faults answer).

pub mod answers;
mod operation;
mod retries;
mod upstream;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::load::{check_name, check_version, LoadError, LoadErrors, Spanned};
use crate::profile::{load_profile, Contract, ContractSpec};
use crate::rules::HttpMethod;
use crate::value::HumanDuration;
use answers::{Answer, AnswerKind, AnswersPreset, AnswersSpec};
pub use operation::{OperationMatch, OperationSpec};
pub use retries::{GivesUpSpec, RetryAfterHeader, WaitUnit};
use upstream::{answer_problems, AnswerPart};
pub use upstream::{RouteSpec, SuccessSpec};

/// Who makes an operation's idempotency key (`key_made_by`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyMadeBy {
    /// The SDK makes it, inside the call (Stripe's, PayPal's when none is given).
    #[default]
    Sdk,
    /// The caller makes it and passes it in (a parameter of the call, a request option).
    Caller,
}

/// A client profile (`docs/client.md`, "The client profile").
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClientProfile {
    /// Schema version; must be `1`.
    pub version: Spanned<u32>,
    /// A name for reports (the SDK and its version, say): one line of plain text (a control
    /// character is refused at load).
    pub name: Spanned<String>,
    /// The idempotency contract the client is written for: the key's header, the mismatch and
    /// in-flight statuses the faults answer with.
    #[serde(default)]
    pub contract: Option<Spanned<ContractSpec>>,
    /// Which requests are the operation under test; others pass through unjudged.
    #[serde(default)]
    pub operation: OperationSpec,
    /// What the canned upstream answers a request with.
    #[serde(default)]
    pub success: SuccessSpec,
    /// What the faults answer, in the vendor's words: a preset of a documented API's shapes
    /// (default: the contract preset's) and answers that override it field by field.
    #[serde(default)]
    pub answers: AnswersSpec,
    /// Answers of their own for other requests the client makes (a version or catalogue GET, a
    /// token exchange), matched in order before the success; at most [`ClientProfile::MAX_ROUTES`].
    #[serde(default)]
    pub routes: Vec<Spanned<RouteSpec>>,
    /// Logical operations one run of the command performs (default 1, at most 20).
    #[serde(default)]
    pub operations: Option<Spanned<u32>>,
    /// How long one run of the command may take before its process group is killed (default
    /// `30s`, 1 s to 1 h).
    #[serde(default)]
    pub timeout: Option<Spanned<HumanDuration>>,
    /// The bound within which a client answered nothing but 502s must give up.
    #[serde(default)]
    pub gives_up: GivesUpSpec,
    /// The `Retry-After` the faults send on a 409 in flight, a 429 and a 503, in whole seconds
    /// (default `1s`, 1 s to 1 h; HTTP's delay-seconds are integers, RFC 9110 §10.2.3). One
    /// longer than `timeout` is judged at the run's deadline.
    #[serde(default)]
    pub retry_after: Option<Spanned<HumanDuration>>,
    /// The header that carries it, where the vendor sends its own instead of `Retry-After`
    /// (`{name: x-ms-retry-after-ms, unit: ms}`).
    #[serde(default)]
    pub retry_after_header: Option<Spanned<RetryAfterHeader>>,
    /// Whether the client keeps an operation's key across a process restart (a journal written
    /// before the first attempt), as its documentation says; `restart-key` then judges it at
    /// SHOULD instead of recording what it did (default `false`).
    #[serde(default)]
    pub persists_keys: Option<Spanned<bool>>,
    /// The most of a `Retry-After` the client's documentation says it honours (several SDKs cap
    /// it), more than 0 and at most 1 h: a retry after this long is recorded with the number,
    /// not judged as ignoring the header (`backoff` sees it only when it is shorter than the wait
    /// it sends), and a client still waiting out an hour's `Retry-After` at `retry-after-bound`'s
    /// bound is recorded as waiting up to it.
    #[serde(default)]
    pub retry_after_cap: Option<Spanned<HumanDuration>>,
    /// Who makes the idempotency key: the SDK (`sdk`, the default), or the caller, who passes it
    /// in (`caller`); `restart-key` says whose code would have to keep it across a restart.
    #[serde(default)]
    pub key_made_by: Option<Spanned<KeyMadeBy>>,
    /// Whether the API keeps in-flight state: answers a retry that arrives while the first
    /// request still runs with the contract's in-flight status (default `true`). With `false`,
    /// `in-flight` records that the API never sends that answer instead of judging the client on
    /// one, and `same-key` and `backoff` send none.
    #[serde(default)]
    pub in_flight_state: Option<Spanned<bool>>,
    /// Whether the client is served over TLS, as `idemspec client --tls` serves it (a client that
    /// refuses an `http://` base URL): a throwaway CA per run, handed to the command in the
    /// variables SDKs read, the base URL `https://` (default `false`).
    #[serde(default)]
    pub tls: Option<Spanned<bool>>,
}

impl ClientProfile {
    /// The profile `idemspec client` uses without `--profile`: any POST is the operation, a 201
    /// with a small JSON body its success, the `article` contract.
    pub const DEFAULT: &'static str = "version: 1\nname: client\n";

    /// The default number of logical operations per run.
    const OPERATIONS: u32 = 1;
    /// The default run timeout.
    const TIMEOUT: Duration = Duration::from_secs(30);
    /// The default bound on attempts.
    const ATTEMPTS: u32 = 10;
    /// The default `Retry-After`.
    const RETRY_AFTER: Duration = Duration::from_secs(1);
    /// The most `routes` a profile may list.
    pub const MAX_ROUTES: usize = 100;
    /// The longest `retry_after`: an hour.
    const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);
    /// The longest route body, in bytes: 1 MiB.
    pub const MAX_BODY: usize = 1 << 20;

    /// Expands `${VAR}` with `env`, parses `text` (the contents of `file`) and validates it.
    ///
    /// # Errors
    /// A [`LoadError`] with file, line and column for syntax errors, unknown fields and every
    /// rule [`ClientProfile::validate`] finds broken.
    pub fn load(
        file: &str,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, LoadError> {
        load_profile(file, text, env, Self::validate)
    }

    /// Cross-field rules: version 1; a path that starts with `/`; a 2xx success with headers HTTP
    /// can carry and, for a JSON type, a JSON body; 1 to 20 operations; a timeout of 1 s to 1 h;
    /// 1 to 1000 attempts, given up within the timeout; a `Retry-After` of whole seconds, 1 to
    /// 60; a key header HTTP can carry.
    ///
    /// # Errors
    /// A located [`LoadError`] for the first rule broken, with every other one in
    /// [`LoadError::more`].
    pub fn validate(&self, file: &str) -> Result<(), LoadError> {
        let mut errors = LoadErrors::new(file);
        check_version(&self.version, &mut errors);
        check_name(&self.name, &mut errors);
        self.operation.check(&mut errors);
        self.check_success(&mut errors);
        self.check_answers(&mut errors);
        self.check_routes(&mut errors);
        self.check_run_bounds(&mut errors);
        self.check_retry_after(&mut errors);
        if let Some(contract) = &self.contract {
            contract.value.check(&contract.referenced, &mut errors);
        }
        errors.finish()
    }

    /// A 2xx success status, and a success answer HTTP can carry and a client can parse
    /// ([`answer_problems`]); an error points at the field it is in, or at `version` where the
    /// field is a default.
    fn check_success(&self, errors: &mut LoadErrors) {
        if let Some(status) = &self.success.status {
            if !(200..=299).contains(&status.value) {
                errors.at(
                    &status.referenced,
                    format!(
                        "success.status {} is not a 2xx; the canned upstream answers success",
                        status.value
                    ),
                );
            }
        }
        let success = &self.success;
        let headers = success
            .headers
            .as_ref()
            .map(|h| h.value.clone())
            .unwrap_or_default();
        for (part, m) in answer_problems("success", &headers, self.content_type(), self.body()) {
            // Only a field the profile gives can be wrong; the defaults are sound.
            let written = match part {
                AnswerPart::Headers => success.headers.as_ref().map(|h| &h.referenced),
                AnswerPart::ContentType => success.content_type.as_ref().map(|t| &t.referenced),
                AnswerPart::Body => success.body.as_ref().map(|b| &b.referenced),
            };
            errors.at(written.unwrap_or(&self.version.referenced), m);
        }
    }

    /// Each answer the profile gives: its status in its kind's range, no wait header of its own,
    /// a refusal the contract calls one ([`answers::problems`]), an answer HTTP can carry, a body
    /// within [`ClientProfile::MAX_BODY`].
    fn check_answers(&self, errors: &mut LoadErrors) {
        let contract = self.contract();
        for kind in AnswerKind::ALL {
            let Some(spec) = self.answers.of(kind) else {
                continue;
            };
            let answer = self.answer(kind);
            let field = format!("answers.{}", kind.field());
            let headers = answer.headers.iter().cloned().collect();
            let wait_header = self.retry_after_field(self.retry_after()).0;
            let mut found = answers::problems(kind, &spec.value, &answer, &contract, &wait_header);
            found.extend(
                answer_problems(&field, &headers, &answer.content_type, &answer.body)
                    .into_iter()
                    .map(|(_, m)| m),
            );
            if answer.body.len() > Self::MAX_BODY {
                found.push(format!(
                    "{field}.body is {} bytes; at most {}",
                    answer.body.len(),
                    Self::MAX_BODY
                ));
            }
            for m in found {
                errors.at(&spec.referenced, m);
            }
        }
    }

    /// At most [`ClientProfile::MAX_ROUTES`] routes, each one the canned upstream can answer
    /// ([`RouteSpec::problems`]) and none the operation's own request.
    fn check_routes(&self, errors: &mut LoadErrors) {
        if self.routes.len() > Self::MAX_ROUTES {
            errors.at(
                &self.routes[Self::MAX_ROUTES].referenced,
                format!(
                    "routes: {} listed; at most {}",
                    self.routes.len(),
                    Self::MAX_ROUTES
                ),
            );
        }
        let operation = self.operation();
        for route in &self.routes {
            for m in route.value.problems() {
                errors.at(&route.referenced, m);
            }
            // The operation's requests are answered by `success` and the faults, never a route.
            let request = route.value.request();
            let bare = |p: &str| p.trim_end_matches('/').to_owned();
            if request.method == operation.method
                && operation
                    .path
                    .as_deref()
                    .is_none_or(|p| bare(p) == bare(&route.value.path))
            {
                errors.at(
                    &route.referenced,
                    format!(
                        "routes: `{} {}` is the operation's request (`operation`), which \
                         `success` and the faults answer; a route answers other requests",
                        request.method, route.value.path
                    ),
                );
            }
        }
    }

    /// The run's bounds: 1 to 20 operations, a timeout of 1 s to 1 h, and the bound on giving up
    /// ([`GivesUpSpec::check`]).
    fn check_run_bounds(&self, errors: &mut LoadErrors) {
        let in_range = |v: u32, lo: u32, hi: u32| (lo..=hi).contains(&v);
        if let Some(n) = &self.operations {
            if !in_range(n.value, 1, 20) {
                errors.at(
                    &n.referenced,
                    format!("operations: {} is out of range; expected 1 to 20", n.value),
                );
            }
        }
        if let Some(t) = &self.timeout {
            if t.value.0 < Duration::from_secs(1) || t.value.0 > Duration::from_secs(3600) {
                errors.at(
                    &t.referenced,
                    format!(
                        "timeout: `{}` is out of range; expected 1s to 1h",
                        humantime::format_duration(t.value.0)
                    ),
                );
            }
        }
        self.gives_up.check(self.timeout(), errors);
    }

    /// A `Retry-After` of whole seconds from 1 s to 1 h, a wait header that can carry it
    /// ([`RetryAfterHeader::problem`]), and a cap of more than 0 and at most 1 h.
    fn check_retry_after(&self, errors: &mut LoadErrors) {
        if let Some(ra) = &self.retry_after {
            let d = ra.value.0;
            if d.subsec_nanos() != 0 || d < Duration::from_secs(1) || d > Self::MAX_RETRY_AFTER {
                errors.at(
                    &ra.referenced,
                    format!(
                        "retry_after: `{}` must be whole seconds from 1s to 1h (Retry-After carries integer seconds)",
                        humantime::format_duration(d)
                    ),
                );
            }
        }
        if let Some(header) = &self.retry_after_header {
            if let Some(m) = header.value.problem() {
                errors.at(&header.referenced, format!("retry_after_header: {m}"));
            }
        }
        if let Some(cap) = &self.retry_after_cap {
            if cap.value.0 > Self::MAX_RETRY_AFTER || cap.value.0.is_zero() {
                errors.at(
                    &cap.referenced,
                    format!(
                        "retry_after_cap: `{}` must be more than 0 and at most 1h",
                        humantime::format_duration(cap.value.0),
                    ),
                );
            }
        }
    }

    /// The contract with the preset's defaults and the profile's overrides applied.
    pub fn contract(&self) -> Contract {
        self.contract
            .as_ref()
            .map(|c| c.value.resolve())
            .unwrap_or_else(|| ContractSpec::default().resolve())
    }

    /// The operation's method and path pattern.
    pub fn operation(&self) -> OperationMatch {
        OperationMatch {
            method: self
                .operation
                .method
                .clone()
                .unwrap_or_else(|| HttpMethod::new("POST").expect("POST is a method token")),
            path: self.operation.path.as_ref().map(|p| p.value.clone()),
        }
    }

    /// The shapes the faults answer in: `answers.preset`, else the contract preset's.
    pub fn answers_preset(&self) -> AnswersPreset {
        self.answers
            .preset
            .unwrap_or_else(|| AnswersPreset::of(self.contract().preset))
    }

    /// What a fault of `kind` answers: the preset's answer with the profile's fields over it.
    pub fn answer(&self, kind: AnswerKind) -> Answer {
        answers::resolve(
            self.answers_preset(),
            &self.contract(),
            kind,
            self.answers.of(kind).map(|s| &s.value),
        )
    }

    /// The success status (default: the answers preset's, 201 for `problem`).
    pub fn status(&self) -> u16 {
        self.success
            .status
            .as_ref()
            .map_or_else(|| answers::success(self.answers_preset()).0, |s| s.value)
    }

    /// The success headers besides `Content-Type`.
    pub fn headers(&self) -> Vec<(String, String)> {
        self.success
            .headers
            .as_ref()
            .map(|h| h.value.clone().into_iter().collect())
            .unwrap_or_default()
    }

    /// The success body's type.
    pub fn content_type(&self) -> &str {
        self.success
            .content_type
            .as_ref()
            .map_or(answers::success(self.answers_preset()).1, |t| {
                t.value.as_str()
            })
    }

    /// The success body.
    pub fn body(&self) -> &str {
        self.success
            .body
            .as_ref()
            .map_or(answers::success(self.answers_preset()).2, |b| {
                b.value.as_str()
            })
    }

    /// Logical operations per run.
    pub fn operations(&self) -> u32 {
        self.operations
            .as_ref()
            .map_or(Self::OPERATIONS, |n| n.value)
    }

    /// How long one run may take.
    pub fn timeout(&self) -> Duration {
        self.timeout.as_ref().map_or(Self::TIMEOUT, |t| t.value.0)
    }

    /// At most this many attempts of one operation.
    pub fn max_attempts(&self) -> u32 {
        self.gives_up
            .after_attempts
            .as_ref()
            .map_or(Self::ATTEMPTS, |n| n.value)
    }

    /// The client must have exited within this long when every attempt is answered 502.
    pub fn give_up_within(&self) -> Duration {
        self.gives_up
            .within
            .as_ref()
            .map_or(self.timeout(), |w| w.value.0)
    }

    /// Whether the profile claims the client persists its keys across a restart.
    pub fn persists_keys(&self) -> bool {
        self.persists_keys.as_ref().is_some_and(|p| p.value)
    }

    /// Whether the profile asks for the command to be served over TLS (`tls: true`).
    pub fn tls(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.value)
    }

    /// Who makes the key (default: the SDK).
    pub fn key_made_by(&self) -> KeyMadeBy {
        self.key_made_by
            .as_ref()
            .map_or(KeyMadeBy::default(), |k| k.value)
    }

    /// Whether the API keeps in-flight state (default `true`).
    pub fn in_flight_state(&self) -> bool {
        self.in_flight_state.as_ref().is_none_or(|s| s.value)
    }

    /// The documented cap on `Retry-After`, if the profile gives one.
    pub fn retry_after_cap(&self) -> Option<Duration> {
        self.retry_after_cap.as_ref().map(|c| c.value.0)
    }

    /// The wait header the faults send and its value for a wait of `wait`: (`Retry-After`,
    /// `1`), or the vendor's (`x-ms-retry-after-ms`, `1000`).
    pub fn retry_after_field(&self, wait: Duration) -> (String, String) {
        match &self.retry_after_header {
            Some(h) => (
                h.value.name.clone(),
                match h.value.unit {
                    WaitUnit::Seconds => wait.as_secs().to_string(),
                    WaitUnit::Milliseconds => wait.as_millis().to_string(),
                },
            ),
            None => ("Retry-After".into(), wait.as_secs().to_string()),
        }
    }

    /// The `Retry-After` the faults send.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
            .as_ref()
            .map_or(Self::RETRY_AFTER, |r| r.value.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn load(text: &str) -> Result<ClientProfile, LoadError> {
        ClientProfile::load("c.yaml", text, &no_env)
    }

    #[test]
    fn the_default_profile_loads_with_every_default() {
        let p = load(ClientProfile::DEFAULT).expect("valid");
        assert_eq!(p.operation().method.as_str(), "POST");
        assert_eq!(p.operation().path, None);
        assert_eq!((p.status(), p.content_type()), (201, "application/json"));
        assert_eq!((p.operations(), p.max_attempts()), (1, 10));
        assert_eq!(p.give_up_within(), p.timeout());
        assert_eq!(p.contract().header, "Idempotency-Key");
    }

    #[test]
    fn a_full_profile_loads() {
        let p = load(
            "version: 1\nname: stripe-python\ncontract: {preset: stripe-v1}\n\
             operation: {method: post, path: /v1/customers}\n\
             success: {status: 200, headers: {Request-Id: req_1}, body: '{\"id\":\"cus_1\"}'}\n\
             operations: 2\ntimeout: 60s\ngives_up: {after_attempts: 4, within: 30s}\nretry_after: 2s\n",
        )
        .expect("valid");
        assert_eq!(p.contract().mismatch_status, vec![400]);
        assert_eq!(p.operation().path.as_deref(), Some("/v1/customers"));
        assert_eq!(p.headers(), [("Request-Id".into(), "req_1".into())]);
        assert_eq!(p.retry_after(), Duration::from_secs(2));
        assert_eq!(p.key_made_by(), KeyMadeBy::Sdk, "the default");
        assert!(p.in_flight_state(), "the default");
    }

    #[test]
    fn who_makes_the_key_and_an_api_without_in_flight_state_are_read() {
        let p = load(
            "version: 1\nname: x\nkey_made_by: caller\nin_flight_state: false\n\
             retry_after_cap: 60s\n",
        )
        .expect("valid: a cap longer than retry_after");
        assert_eq!(p.key_made_by(), KeyMadeBy::Caller);
        assert!(!p.in_flight_state());
        assert_eq!(p.retry_after_cap(), Some(Duration::from_secs(60)));
        let err = load("version: 1\nname: x\nkey_made_by: server\n").expect_err("invalid");
        assert_eq!((err.line, err.column), (3, 14), "{err}");
        let err = load("version: 1\nname: x\nretry_after_cap: 2h\n").expect_err("invalid");
        assert!(err.to_string().contains("at most 1h"), "{err}");
        let err = load("version: 1\nname: \"sdk\\e]0;title\\a\"\n").expect_err("invalid");
        assert_eq!(err.line, 2, "{err}");
        assert!(
            err.to_string().contains("control character U+001B"),
            "{err}"
        );
    }

    #[test]
    fn every_broken_rule_is_located() {
        let err = load(
            "version: 2\nname: x\noperation: {path: v1/x}\nsuccess:\n  status: 404\n  body: '{nope'\n\
             operations: 0\ntimeout: 2h\ngives_up: {after_attempts: 0}\nretry_after: 1500ms\n",
        )
        .expect_err("invalid");
        let all: Vec<String> = err.each().map(ToString::to_string).collect();
        let lines: Vec<&str> = all
            .iter()
            .map(|e| e.split(": ").next().unwrap_or(""))
            .collect();
        assert_eq!(
            lines,
            [
                "c.yaml:1:10",
                "c.yaml:3:19",
                "c.yaml:5:11",
                "c.yaml:6:9",
                "c.yaml:7:13",
                "c.yaml:8:10",
                "c.yaml:9:28",
                "c.yaml:10:14"
            ],
            "{err}"
        );
    }

    #[test]
    fn answers_follow_the_contract_preset_and_their_errors_are_located() {
        let aws =
            load("version: 1\nname: x\ncontract: {preset: aws-client-token}\n").expect("valid");
        assert_eq!(aws.answers_preset(), AnswersPreset::AwsClientToken);
        assert_eq!(
            aws.content_type(),
            "application/x-amz-json-1.1",
            "the preset's success"
        );
        let mismatch = aws.answer(AnswerKind::Mismatch);
        assert_eq!(mismatch.status, 400);
        assert!(mismatch
            .body
            .contains("IdempotentParameterMismatchException"));
        let query = load(
            "version: 1\nname: x\ncontract: {preset: aws-client-token}\nanswers: {preset: aws-query}\n",
        )
        .expect("valid");
        assert!(query.body().starts_with("<?xml"), "{}", query.body());
        let err = load(
            "version: 1\nname: x\ncontract: {preset: aws-client-token}\nanswers:\n  \
             mismatch: {body: '{\"__type\":\"ValidationException\"}'}\n  \
             unavailable: {status: 429}\n  \
             in_flight: {headers: {Retry-After: '5'}}\n  \
             invalid: {content_type: application/json, body: '{nope'}\n",
        )
        .expect_err("invalid");
        let all: Vec<String> = err.each().map(ToString::to_string).collect();
        assert_eq!(all.len(), 4, "{all:#?}");
        assert!(all[0].starts_with("c.yaml:5:13: answers.mismatch answers 400 but the contract calls its mismatch [400] with $.__type is"), "{}", all[0]);
        assert!(
            all[1].contains("answers.in_flight.headers: `Retry-After` is the checks'"),
            "{}",
            all[1]
        );
        assert!(
            all[2].starts_with("c.yaml:6:16: answers.unavailable.status 429 is not 500 to 599"),
            "{}",
            all[2]
        );
        assert!(
            all[3].contains("answers.invalid.body is not JSON"),
            "{}",
            all[3]
        );
        let err = load(
            "version: 1\nname: x\noperation: {path: /v1/w}\n\
             success: {headers: {Connection: close}}\n\
             answers: {mismatch: {headers: {Content-Length: '5'}}, invalid: {headers: {X-Big: '{big}'}}}\n\
             routes: [{method: POST, path: /v1/w/}, {path: /v1/version, status: 101}]\n\
             retry_after_header: {name: retry-after, unit: ms}\n"
                .replace("{big}", &"a".repeat(9000))
                .as_str(),
        )
        .expect_err("invalid");
        let all: Vec<String> = err.each().map(ToString::to_string).collect();
        let said = |what: &str| all.iter().any(|e| e.contains(what));
        assert!(
            said("success.headers: `Connection` is about the connection"),
            "{all:#?}"
        );
        assert!(
            said("answers.mismatch.headers: `Content-Length` is set from the body"),
            "{all:#?}"
        );
        assert!(
            said("answers.invalid.headers: header `X-Big` is 9000 bytes; at most 8192"),
            "{all:#?}"
        );
        assert!(
            said("routes: `POST /v1/w/` is the operation's request"),
            "{all:#?}"
        );
        assert!(said("routes: status 101 is not 200 to 599"), "{all:#?}");
        assert!(
            said("retry_after_header: `Retry-After` counts whole seconds"),
            "{all:#?}"
        );
        let err = load("version: 1\nname: x\nanswers: {preset: azure}\n").expect_err("invalid");
        assert_eq!((err.line, err.column), (3, 19), "{err}");
    }

    #[test]
    fn an_unknown_field_is_located() {
        let err = load("version: 1\nname: x\nsucess: {}\n").expect_err("invalid");
        assert_eq!((err.line, err.column), (3, 1), "{err}");
    }
}
