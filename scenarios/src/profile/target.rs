//! The target profile schema, its loader and its cross-field validation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{expand_env, Contract, ContractSpec, KeyAt, ResourcePath};
use crate::load::{from_yaml, LoadError, Spanned};
use crate::scenario::Operation;
use crate::template::Template;
use crate::value::JsonPathExpr;

/// How an API under test is described (README "Point it at your own API"). Load it with
/// [`TargetProfile::load`], which expands `${VAR}`, parses and validates.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetProfile {
    /// Schema version; must be `1`.
    pub version: Spanned<u32>,
    /// A name for reports.
    pub name: String,
    /// The idempotency contract the target claims.
    #[serde(default = "default_contract")]
    pub contract: Spanned<ContractSpec>,
    /// One or more base URLs (`http://host:port`, no trailing path needed); concurrent requests are
    /// spread over them (replicas behind one database).
    pub base_urls: Spanned<Vec<String>>,
    /// Two or more principals, each with the headers that authenticate it.
    pub principals: Spanned<Vec<Principal>>,
    /// The operations the checks drive.
    pub operations: Operations,
    /// Optional hooks (crash, restart, fail_next).
    #[serde(default)]
    pub hooks: Hooks,
    /// Optional probe making side effects behind the API (nodes, leases) visible.
    #[serde(default)]
    pub side_effects: Option<SideEffectsProbe>,
    /// Optional: how idemspec starts the target itself, so it can kill it mid-flight and restart
    /// it (the process nemesis), as `--reference` does for leasebroker.
    #[serde(default)]
    pub process: Option<ProcessSpec>,
    /// Optional: how many checks the target can take at once, 1 to 64 (default: as many as
    /// `idemspec run --jobs`, 8). `1` for an API that keeps state per session or per principal
    /// that two checks side by side would disturb; `--jobs` cannot raise it.
    #[serde(default)]
    pub checks_at_once: Option<Spanned<ChecksAtOnce>>,
    /// Whose cookie jar a request uses (default: `per_principal` where a principal has a
    /// `login`, else `off`).
    #[serde(default)]
    pub cookies: Option<CookieScope>,
}

/// The most checks a run drives at once (`--jobs`, `checks_at_once`).
pub const MAX_CHECKS_AT_ONCE: u32 = 64;

/// `checks_at_once`: a whole number as YAML writes one (not a string, a float or a bool), its
/// range checked by [`TargetProfile::validate`] with the field's location. A wrong type gets a
/// message naming the field and its range, not the parser's `invalid u32`. The value is kept as
/// written (saturated at `i64`'s bounds) so the range error can quote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChecksAtOnce(pub i64);

impl ChecksAtOnce {
    /// The value, where it is within 1 to [`MAX_CHECKS_AT_ONCE`].
    pub fn get(self) -> Option<u32> {
        u32::try_from(self.0)
            .ok()
            .filter(|n| (1..=MAX_CHECKS_AT_ONCE).contains(n))
    }
}

impl<'de> Deserialize<'de> for ChecksAtOnce {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ChecksAtOnce;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("checks_at_once: a whole number from 1 to 64")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(if v < 0 { i64::MIN } else { i64::MAX }))
            }
            fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(i64::MAX))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ChecksAtOnce, E> {
                if v.fract() == 0.0 && v.abs() > 1e15 {
                    // A whole number too large for an integer, which YAML reads as a float.
                    return Ok(ChecksAtOnce(if v < 0.0 { i64::MIN } else { i64::MAX }));
                }
                Err(E::custom(format!(
                    "checks_at_once: {v:?} is not a whole number; expected 1 to 64"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ChecksAtOnce, E> {
                Err(E::custom(format!(
                    "checks_at_once: {v:?} is text; expected a whole number from 1 to 64, unquoted"
                )))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ChecksAtOnce, E> {
                Err(E::custom(format!(
                    "checks_at_once: {v} is not a number; expected a whole number from 1 to 64"
                )))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `process.env`: every value is its text; a YAML null is refused with what to write instead, not
/// taken as the empty string, since after `${VAR}` expansion a value such as `#secret` or `null`
/// reads as one too and would vanish without a word.
fn env_values<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    BTreeMap::<String, Option<String>>::deserialize(deserializer)?
        .into_iter()
        .map(|(name, value)| match value {
            Some(value) => Ok((name, value)),
            None => Err(serde::de::Error::custom(format!(
                "process.env `{name}` has no value: nothing after the colon, `~`, `null`, or a `#` \
                 (a comment) once `${{…}}` is expanded; quote it, e.g. `{name}: \"${{X:-}}\"` for \
                 an empty string"
            ))),
        })
        .collect()
}

/// How to start the target: idemspec runs `command` with `sh -c` in a process group of its own
/// (no descriptor of idemspec's is inherited; its output goes to `log`), waits until it is ready,
/// kills the whole group with SIGKILL where a check crashes it, and starts it again.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// The shell command that runs the target in the foreground, e.g. `./run-api.sh`.
    pub command: String,
    /// The working directory (default: idemspec's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Environment variables set for it (besides idemspec's own). A value is its text as written
    /// (`8080`, `true`); one with no value (`FOO:`, `~`) is a located load error that says to quote it.
    #[serde(default, deserialize_with = "env_values")]
    pub env: BTreeMap<String, String>,
    /// When it is ready (default: the first base URL answers any HTTP response).
    #[serde(default)]
    pub ready: Option<Readiness>,
    /// How long it may take to become ready (default 30 s).
    #[serde(default)]
    pub ready_timeout: Option<crate::value::HumanDuration>,
    /// Where its stdout and stderr go, appended across restarts (default: a file in a new
    /// temporary directory, kept after the run; the report names it).
    #[serde(default)]
    pub log: Option<String>,
    /// How long after the abandoned request is sent the kill lands (default 300 ms).
    #[serde(default)]
    pub kill_after: Option<crate::value::HumanDuration>,
}

impl TargetProfile {
    /// How long after a request is sent a crash that does not arm kills the target: the
    /// `process`'s or the `crash` hook's `kill_after`, default 300 ms.
    pub fn kill_after(&self) -> std::time::Duration {
        self.process
            .as_ref()
            .and_then(|p| p.kill_after)
            .or_else(|| self.hooks.crash.as_ref().and_then(|c| c.kill_after))
            .map_or(std::time::Duration::from_millis(300), |d| d.0)
    }
}

/// How to tell the target is ready: exactly one of an HTTP URL that answers (any status) or a TCP
/// address that accepts connections.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Readiness {
    /// A URL that answers once the target serves (e.g. `http://127.0.0.1:8080/healthz`).
    #[serde(default)]
    pub url: Option<Spanned<String>>,
    /// A `host:port` that accepts connections once the target serves.
    #[serde(default)]
    pub tcp: Option<Spanned<String>>,
}

/// An authenticated caller.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// Name used in reports and by scenarios (`principal: alice`); scenarios may also say `A`/`B`
    /// for the first and second principal.
    pub name: String,
    /// Headers sent with every request of this principal (e.g. `Authorization: Bearer …`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Values the profile's templates use as `{{principal.NAME}}` for this principal's requests:
    /// the tenant an API keeps in its paths or bodies (`project: p-alpha`).
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// The request that opens this principal's session, where the API issues one: sent before
    /// the principal's first request (once per cookie jar, see [`CookieScope`]), its answer's
    /// `Set-Cookie` headers fill the jar.
    #[serde(default)]
    pub login: Option<Login>,
}

/// A login request: sent to the first base URL with the principal's headers and its own; a 2xx
/// opens the session.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Path and query, from `/`.
    pub path: String,
    /// The body, sent as it is.
    #[serde(default)]
    pub body: Option<String>,
    /// The body's media type (default `application/json`).
    #[serde(default = "json")]
    pub content_type: String,
    /// Headers besides the principal's.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Whose cookie jar a request uses (`cookies:` at the top of a profile): none (`off`, a
/// `Set-Cookie` is neither kept nor sent back), one per principal for the whole run
/// (`per_principal`), or one per principal in each check (`per_check`: a check starts with a
/// fresh session, logged in again, so two checks never share session state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CookieScope {
    /// No jar.
    Off,
    /// One jar per principal for the run.
    PerPrincipal,
    /// One jar per principal and check.
    PerCheck,
}

/// The operations of the API under test.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Operations {
    /// Create a resource (the idempotent POST under test).
    pub create: CreateOp,
    /// Count the principal's resources.
    pub list: ListOp,
    /// Read one resource (`{id}` in the path).
    #[serde(default)]
    pub get: Option<GetOp>,
    /// Delete one resource (`{id}` in the path).
    #[serde(default)]
    pub delete: Option<PathOp>,
    /// A mutating action on one resource (e.g. reboot), and how to observe its effect.
    #[serde(default)]
    pub action: Option<ActionOp>,
}

/// An operation whose answer names a long-running operation to poll until it settles (Google
/// Cloud's Operation, a `202` with `Location`, `Operation-Location` or `Azure-AsyncOperation`).
/// A check counts resources, reads counters and probes the list only after every operation it
/// started has settled, and an answer that names the same operation as another, in whatever
/// state, is the same answer (a replay of a running operation).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LongRunning {
    /// Where the answer names the operation: `{json: $.selfLink}` or `{header: Location}`; an
    /// absolute URL's path and query are polled on the base URL the request went to.
    pub poll: PollAt,
    /// What the polled operation says when it is done, e.g. `{at: $.status, is: DONE}`.
    pub done: super::BodyCondition,
    /// What it says when it failed (it has settled too), e.g. `{at: $.status, is: FAILED}`.
    #[serde(default)]
    pub failed: Option<super::BodyCondition>,
    /// How long it may take to settle (default 60s, at most 10m); past it, what the check counts
    /// is UNKNOWN, naming the operation.
    #[serde(default)]
    pub within: Option<crate::value::HumanDuration>,
}

impl LongRunning {
    /// How long an operation may take to settle.
    pub fn bound(&self) -> std::time::Duration {
        self.within
            .map_or(std::time::Duration::from_secs(60), |w| w.0)
    }
}

/// Where an answer names the operation to poll.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PollAt {
    /// A JSON string at this path of the body.
    Json(JsonPathExpr),
    /// This response header.
    Header(String),
}

/// The create operation.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateOp {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Path template, e.g. `/v1/workers` (starting with `/`).
    #[serde(deserialize_with = "crate::template::path")]
    pub path: Template,
    /// Body template; use `{{marker}}` so the check can count what it created, `{{variant}}` so a
    /// differing body can be sent (fingerprint checks).
    pub body: Template,
    /// Content-Type of the body (default `application/json`).
    #[serde(default = "json")]
    pub content_type: String,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
    /// Where the new resource's id is in the response body, e.g. `$.id` or `$.data.uuid`.
    pub id: JsonPathExpr,
    /// Where the id sits inside the string at `id`: it is what follows the last occurrence of this
    /// text (`/instances/` cuts `NAME` out of a `targetLink` of `…/instances/NAME`).
    #[serde(default)]
    pub id_after: Option<String>,
    /// Requests that make the API fail, fail once, be slow or hang — for APIs (and test doubles)
    /// that fail by what is sent rather than by an admin switch.
    #[serde(default)]
    pub variants: Variants,
    /// The long-running operation the answer names, where it names one.
    #[serde(default)]
    pub operation: Option<Spanned<LongRunning>>,
}

/// Request variants of the create, each for one role a check needs.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variants {
    /// A create that always fails with a 5xx.
    #[serde(default)]
    pub always_fails: Option<Variant>,
    /// A create that fails with a 5xx the first time this body is sent (after some side effects,
    /// where the API has any) and succeeds every later time.
    #[serde(default)]
    pub fails_once: Option<Variant>,
    /// A create whose handler takes `takes` to finish (longer than the in-flight TTL, for
    /// `slow-handler-outlives-ttl`).
    #[serde(default)]
    pub slow: Option<SlowVariant>,
    /// A create whose handler never finishes (until the server stops).
    #[serde(default)]
    pub hangs: Option<Variant>,
}

/// A create sent differently: its own body, and optionally its own path. Use `{{marker}}` so the
/// variant is unique per check (a retry must send the same bytes, so avoid `{{uuid}}`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// The body template.
    pub body: Template,
    /// The path template (default: the create's).
    #[serde(default, deserialize_with = "crate::template::optional_path")]
    pub path: Option<Template>,
}

/// The slow variant, with how long its handler takes.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlowVariant {
    /// The body template.
    pub body: Template,
    /// The path template (default: the create's).
    #[serde(default, deserialize_with = "crate::template::optional_path")]
    pub path: Option<Template>,
    /// How long the handler takes, e.g. `8s`; where it is written (its errors point there).
    pub takes: Spanned<crate::value::HumanDuration>,
}

impl Operations {
    /// The long-running operation `op`'s answers name, where the profile declares one.
    pub fn long_running_of(&self, op: Operation) -> Option<&Spanned<LongRunning>> {
        match op {
            Operation::Create => self.create.operation.as_ref(),
            Operation::Delete => self.delete.as_ref()?.operation.as_ref(),
            Operation::Action => self.action.as_ref()?.operation.as_ref(),
            Operation::List | Operation::Get => None,
        }
    }

    /// The headers `op`'s requests carry besides the principal's, where the profile gives some.
    pub fn headers_of(&self, op: Operation) -> Option<&Spanned<BTreeMap<String, String>>> {
        match op {
            Operation::Create => self.create.headers.as_ref(),
            Operation::List => self.list.headers.as_ref(),
            Operation::Get => self.get.as_ref()?.headers.as_ref(),
            Operation::Delete => self.delete.as_ref()?.headers.as_ref(),
            Operation::Action => self.action.as_ref()?.headers.as_ref(),
        }
    }

    /// The `Content-Type` the operation's own `headers` give, if they give one (an API's vendor
    /// type, or a form body's).
    pub fn own_content_type(&self, op: Operation) -> Option<&str> {
        self.headers_of(op)?
            .value
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.as_str())
    }

    /// Every operation that answers with a long-running operation, with its name.
    pub fn long_running(&self) -> Vec<(&'static str, &Spanned<LongRunning>)> {
        Operation::ALL
            .into_iter()
            .filter_map(|op| Some((op.name(), self.long_running_of(op)?)))
            .collect()
    }

    /// Every operation's own headers, with the operation's name.
    pub fn headers(&self) -> Vec<(&'static str, &Spanned<BTreeMap<String, String>>)> {
        Operation::ALL
            .into_iter()
            .filter_map(|op| Some((op.name(), self.headers_of(op)?)))
            .collect()
    }

    /// Every request template of the operations, with the field it is written in.
    pub fn templates(&self) -> Vec<(String, &Template)> {
        let mut out: Vec<(String, &Template)> = vec![
            ("create.path".into(), &self.create.path),
            ("create.body".into(), &self.create.body),
            ("list.path".into(), &self.list.path),
        ];
        if let Some(body) = &self.list.body {
            out.push(("list.body".into(), body));
        }
        let v = &self.create.variants;
        let variants = [
            (
                "always_fails",
                v.always_fails.as_ref().map(|x| (&x.body, x.path.as_ref())),
            ),
            (
                "fails_once",
                v.fails_once.as_ref().map(|x| (&x.body, x.path.as_ref())),
            ),
            ("slow", v.slow.as_ref().map(|x| (&x.body, x.path.as_ref()))),
            (
                "hangs",
                v.hangs.as_ref().map(|x| (&x.body, x.path.as_ref())),
            ),
        ];
        for (name, found) in variants {
            if let Some((body, path)) = found {
                out.push((format!("create.variants.{name}.body"), body));
                if let Some(path) = path {
                    out.push((format!("create.variants.{name}.path"), path));
                }
            }
        }
        if let Some(get) = &self.get {
            out.push(("get.path".into(), get.path.value.template()));
        }
        if let Some(delete) = &self.delete {
            out.push(("delete.path".into(), delete.path.value.template()));
        }
        if let Some(action) = &self.action {
            out.push(("action.path".into(), action.path.value.template()));
            if let Some(body) = &action.body {
                out.push(("action.body".into(), body));
            }
        }
        out
    }
}

impl Variants {
    /// The variant for `role`, as a body and an optional path.
    pub fn get(
        &self,
        role: crate::scenario::BodyVariant,
    ) -> Option<(&Template, Option<&Template>)> {
        use crate::scenario::BodyVariant as B;
        match role {
            B::AlwaysFails => self
                .always_fails
                .as_ref()
                .map(|v| (&v.body, v.path.as_ref())),
            B::FailsOnce => self.fails_once.as_ref().map(|v| (&v.body, v.path.as_ref())),
            B::Slow | B::SlowIfAny => self.slow.as_ref().map(|v| (&v.body, v.path.as_ref())),
            B::Hangs => self.hangs.as_ref().map(|v| (&v.body, v.path.as_ref())),
            B::Default | B::Alt => None,
        }
    }
}

/// How to count a principal's resources created by one check.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListOp {
    /// HTTP method (default `GET`; `POST` for an API whose list takes a body).
    #[serde(default = "get", deserialize_with = "http_method")]
    pub method: String,
    /// Path template, may filter by `{{marker}}`, e.g. `/v1/workers?label=run:{{marker}}`.
    #[serde(deserialize_with = "crate::template::path")]
    pub path: Template,
    /// Body template of a list that takes one (sent as `application/json`), e.g.
    /// `{"Filters":[{"Name":"tag:run","Values":["{{marker}}"]}]}`.
    #[serde(default)]
    pub body: Option<Template>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,

    /// The items, e.g. `$.items[*]`.
    pub items: JsonPathExpr,
    /// Optional path inside each item to the marker (e.g. `$.labels.run`); when given, only items whose
    /// value there equals the marker are counted.
    #[serde(default)]
    pub marker: Option<JsonPathExpr>,
}

/// Reading one resource.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetOp {
    /// HTTP method (default `GET`; `POST` for an API that reads by a request body, as EC2's
    /// `DescribeInstances`).
    #[serde(default = "get", deserialize_with = "http_method")]
    pub method: String,
    /// Path with `{id}`, e.g. `/v1/workers/{id}` (or without it, where `body` names the id).
    pub path: Spanned<ResourcePath>,
    /// Optional body template; `{id}` in it is the resource's id (see [`id_in_body`]).
    #[serde(default)]
    pub body: Option<Template>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
}

/// Whether an operation on an existing resource carries an idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyUse {
    /// The key is sent (and the operation is expected to honour it).
    #[default]
    Send,
    /// The operation takes no key; checks that need one SKIP.
    Never,
}

/// Deleting one resource.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PathOp {
    /// HTTP method (default `DELETE`).
    #[serde(default = "delete", deserialize_with = "http_method")]
    pub method: String,
    /// Path with `{id}` (or without it, where `body` names the id).
    pub path: Spanned<ResourcePath>,
    /// Optional body template; `{id}` in it is the resource's id (see [`id_in_body`]).
    #[serde(default)]
    pub body: Option<Template>,
    /// Whether the key is sent (default `send`).
    #[serde(default)]
    pub key: KeyUse,
    /// The long-running operation the answer names, where it names one.
    #[serde(default)]
    pub operation: Option<Spanned<LongRunning>>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
}

/// A mutating action on one resource (e.g. reboot).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActionOp {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Path with `{id}`, e.g. `/v1/workers/{id}/reboot`.
    pub path: Spanned<ResourcePath>,
    /// Optional body template; `{id}` in it is the resource's id (see [`id_in_body`]).
    #[serde(default)]
    pub body: Option<Template>,
    /// Where the action's effect counter is in the `get` response (e.g. `$.reboot_count`).
    #[serde(default)]
    pub effect: Option<JsonPathExpr>,
    /// The long-running operation the answer names, where it names one.
    #[serde(default)]
    pub operation: Option<Spanned<LongRunning>>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
}

/// The optional hooks a check may call.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hooks {
    /// Kill the server (Jepsen-style). With `arms: true` the hook only arms a crash that happens
    /// during the next mutating request (after the work started); otherwise it kills at once.
    #[serde(default)]
    pub crash: Option<HookSpec>,
    /// Bring the server back after a crash, on the same address and database.
    #[serde(default)]
    pub restart: Option<HookSpec>,
    /// Make the next mutating call fail part-way with a 5xx, after some side effects.
    #[serde(default)]
    pub fail_next: Option<HookSpec>,
}

/// A hook: a shell command or an HTTP request (exactly one; checked while parsing, so the error
/// points at the hook).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, try_from = "RawHookSpec")]
pub struct HookSpec {
    /// A shell command (`sh -c`), which must exit 0.
    #[serde(default)]
    pub command: Option<String>,
    /// An HTTP request, which must answer 2xx.
    #[serde(default)]
    pub request: Option<HttpHook>,
    /// For `crash`: the hook arms a crash of the next mutating request instead of killing at once.
    #[serde(default)]
    pub arms: bool,
    /// For a `crash` that does not arm: how long after the next request is sent the hook runs
    /// (default 300 ms).
    #[serde(default)]
    pub kill_after: Option<crate::value::HumanDuration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHookSpec {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    request: Option<HttpHook>,
    #[serde(default)]
    arms: bool,
    #[serde(default)]
    kill_after: Option<crate::value::HumanDuration>,
}

impl TryFrom<RawHookSpec> for HookSpec {
    type Error = String;

    fn try_from(raw: RawHookSpec) -> Result<Self, String> {
        if raw.command.is_some() == raw.request.is_some() {
            return Err("a hook needs exactly one of `command` or `request`".into());
        }
        Ok(Self {
            command: raw.command,
            request: raw.request,
            arms: raw.arms,
            kill_after: raw.kill_after,
        })
    }
}

/// An HTTP request made by a hook or a probe.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpHook {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Absolute URL.
    pub url: Spanned<String>,
    /// Headers to send.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Optional body (sent as `application/json`).
    #[serde(default)]
    pub body: Option<String>,
}

/// A GET that exposes counters of side effects behind the API (nodes, leases, …).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SideEffectsProbe {
    /// Absolute URL.
    pub url: Spanned<String>,
    /// Headers to send.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Counter name → JSONPath to an integer, e.g. `leases: $.leases`. Every counter must grow by
    /// exactly the number of resources created.
    pub counters: BTreeMap<String, JsonPathExpr>,
}

fn default_contract() -> Spanned<ContractSpec> {
    Spanned {
        value: ContractSpec::default(),
        referenced: crate::load::Location::UNKNOWN,
        defined: crate::load::Location::UNKNOWN,
    }
}

/// Reads an HTTP method as it is sent: a token of upper-case letters (and `-`), such as `POST`
/// or `PURGE`; methods are case-sensitive (RFC 9110 §9.1) and the standard ones upper case, so
/// `post` would be sent as another method.
///
/// # Errors
/// A message naming the value: empty, lower case, or with a character no method has.
fn http_method<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let m = String::deserialize(d)?;
    if m.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty method: give one such as `POST`",
        ));
    }
    if m.len() > 32 || !m.bytes().all(|b| b.is_ascii_uppercase() || b == b'-') {
        let hint = if m.bytes().any(|b| b.is_ascii_lowercase()) {
            format!(
                ": methods are case-sensitive, the standard ones upper case (`{}`)",
                m.to_ascii_uppercase()
            )
        } else {
            String::new()
        };
        return Err(serde::de::Error::custom(format!(
            "`{m}` is no HTTP method as sent{hint}; give one such as `POST`"
        )));
    }
    Ok(m)
}

fn post() -> String {
    "POST".into()
}
fn get() -> String {
    "GET".into()
}
fn delete() -> String {
    "DELETE".into()
}
fn json() -> String {
    "application/json".into()
}

impl TargetProfile {
    /// Expands `${VAR}` with `env`, parses `text` (the contents of `file`) and validates it.
    ///
    /// # Errors
    /// A [`LoadError`] with file, line and column for syntax errors, unknown fields, bad JSONPaths
    /// or templates, unset variables, and cross-field problems.
    pub fn load(
        file: &str,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, LoadError> {
        let expanded = expand_env(file, text, env)?;
        let profile: TargetProfile = from_yaml(file, &expanded)?;
        profile.validate(file)?;
        Ok(profile)
    }

    /// Cross-field rules: version 1; at least one base URL, each a URL HTTP can use (scheme, host,
    /// port 1–65535); two principals with distinct names; header fields HTTP can carry (no CR/LF);
    /// hook and probe URLs that HTTP can use; `{id}` in every per-resource path.
    ///
    /// # Errors
    /// A located [`LoadError`] for the first rule broken, with every other one in
    /// [`LoadError::more`].
    pub fn validate(&self, file: &str) -> Result<(), LoadError> {
        let mut errors = Vec::new();
        let mut at = |loc: &crate::load::Location, msg: String| {
            errors.push(LoadError::at(file, loc, msg));
        };
        if self.version.value != 1 {
            at(
                &self.version.referenced,
                format!("unsupported version {}; expected 1", self.version.value),
            );
        }
        if self.base_urls.value.is_empty() {
            at(
                &self.base_urls.referenced,
                "expected at least one base URL".into(),
            );
        }
        if let Some(n) = &self.checks_at_once {
            if n.value.get().is_none() {
                let shown = match n.value.0 {
                    i64::MAX | i64::MIN => "a number that large".to_owned(),
                    v => v.to_string(),
                };
                at(
                    &n.referenced,
                    format!(
                        "checks_at_once: {shown} is out of range; expected 1 to \
                         {MAX_CHECKS_AT_ONCE} (1: one check at a time)"
                    ),
                );
            }
        }
        for url in &self.base_urls.value {
            if let Err(m) = super::check_url(url) {
                at(&self.base_urls.referenced, format!("base_urls: {m}"));
            }
        }
        let principals = &self.principals.value;
        if principals.len() < 2 {
            at(
                &self.principals.referenced,
                "expected at least two principals (cross-tenant checks need two)".into(),
            );
        }
        for (i, p) in principals.iter().enumerate() {
            if principals[..i].iter().any(|q| q.name == p.name) {
                at(
                    &self.principals.referenced,
                    format!("principal name `{}` is used twice", p.name),
                );
            }
            for (name, value) in &p.headers {
                if let Err(m) = super::check_header(name, value) {
                    at(
                        &self.principals.referenced,
                        format!("principal `{}`: {m}", p.name),
                    );
                }
            }
            if let Some(login) = &p.login {
                let mut problems: Vec<String> = login
                    .headers
                    .iter()
                    .chain([(&"Content-Type".to_owned(), &login.content_type)])
                    .filter_map(|(name, value)| super::check_header(name, value).err())
                    .collect();
                if !login.path.starts_with('/') {
                    problems.push(format!(
                        "login.path `{}` must start with `/` (it follows the base URL)",
                        login.path
                    ));
                }
                let templated = [Some(&login.path), login.body.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|text| text.contains("{{"));
                if templated {
                    problems.push(
                        "login.path and login.body are sent as written: no `{{…}}` placeholder \
                         is filled there (a value per principal comes from the environment, \
                         `${VAR}`)"
                            .into(),
                    );
                }
                if self.cookies == Some(CookieScope::Off) {
                    problems.push(
                        "has a `login` but the profile says `cookies: off`, so the session it \
                         opens would never be sent; say `cookies: per_principal` or \
                         `per_check`, or remove the login"
                            .into(),
                    );
                }
                for m in problems {
                    at(
                        &self.principals.referenced,
                        format!("principal `{}`: {m}", p.name),
                    );
                }
            }
        }
        for (op, long) in self.operations.long_running() {
            let within = long.value.within;
            if within.is_some_and(|w| w.0.is_zero() || w.0 > std::time::Duration::from_secs(600)) {
                at(
                    &long.referenced,
                    format!(
                        "operations.{op}.operation.within must be more than 0s and at most 10m"
                    ),
                );
            }
            if let PollAt::Header(name) = &long.value.poll {
                if let Err(m) = super::check_header(name, "v") {
                    at(
                        &long.referenced,
                        format!("operations.{op}.operation.poll: {m}"),
                    );
                }
            }
        }
        if self.operations.create.id_after.as_deref() == Some("") {
            at(
                &self.principals.referenced,
                "operations.create.id_after is empty: give the text the id follows (e.g. \
                 `/instances/`), or leave it out to take the value at `id` whole"
                    .into(),
            );
        }
        for (op, headers) in self.operations.headers() {
            for (name, value) in &headers.value {
                if let Err(m) = super::check_header(name, value) {
                    at(&headers.referenced, format!("operations.{op}.headers: {m}"));
                }
            }
        }
        for (field, template) in self.operations.templates() {
            for var in template.principal_vars() {
                for p in principals.iter().filter(|p| !p.vars.contains_key(var)) {
                    at(
                        &self.principals.referenced,
                        format!(
                            "`operations.{field}` uses `{{{{principal.{var}}}}}`, but principal \
                             `{}` has no `{var}` in its `vars`; give every principal one",
                            p.name
                        ),
                    );
                }
            }
        }
        let requests = [
            ("hooks.crash", self.hooks.crash.as_ref()),
            ("hooks.restart", self.hooks.restart.as_ref()),
            ("hooks.fail_next", self.hooks.fail_next.as_ref()),
        ]
        .into_iter()
        .filter_map(|(what, hook)| Some((what, hook?.request.as_ref()?)))
        .map(|(what, r)| (what, &r.url, &r.headers))
        .chain(
            self.side_effects
                .as_ref()
                .map(|p| ("side_effects", &p.url, &p.headers)),
        );
        if let Some(ready) = self.process.as_ref().and_then(|p| p.ready.as_ref()) {
            match (&ready.url, &ready.tcp) {
                (Some(url), None) => {
                    if let Err(m) = super::check_url(&url.value) {
                        at(&url.referenced, format!("process.ready: {m}"));
                    }
                }
                (None, Some(tcp)) => {
                    if tcp
                        .value
                        .rsplit_once(':')
                        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
                    {
                        at(
                            &tcp.referenced,
                            format!("process.ready.tcp `{}` must be host:port", tcp.value),
                        );
                    }
                }
                _ => at(
                    &self.base_urls.referenced,
                    "process.ready needs exactly one of `url` or `tcp`".into(),
                ),
            }
        }
        for (what, url, headers) in requests {
            let problems = super::check_url(&url.value).err().into_iter().chain(
                headers
                    .iter()
                    .filter_map(|(n, v)| super::check_header(n, v).err()),
            );
            for m in problems {
                at(&url.referenced, format!("{what}: {m}"));
            }
        }
        for (loc, m) in self.contract.value.problems() {
            at(
                loc.unwrap_or(&self.contract.referenced),
                format!("contract: {m}"),
            );
        }
        if let Some(KeyAt::HeaderMatching(p)) = &self.contract.value.key_at {
            at(
                &self.contract.referenced,
                format!(
                    "contract: `key_at: {{header_matching: \"{p}\"}}` names no header to send \
                     the key in; the checks send keys, so give `{{header: NAME}}` (a pattern is for \
                     client profiles, which observe a client)"
                ),
            );
        }
        let ops = &self.operations;
        // The key goes into the create's body where `key_at` says a body: the body must be of
        // that kind, or the key would be appended to something the API cannot read.
        let create_type = ops
            .own_content_type(Operation::Create)
            .unwrap_or(&ops.create.content_type);
        let essence = create_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let (place, fits) = match &self.contract().key_at {
            KeyAt::Form(name) => (
                format!("a form field (`key_at: {{form: {name}}}`)"),
                essence == "application/x-www-form-urlencoded",
            ),
            KeyAt::Json(name) => (
                format!("a JSON member (`key_at: {{json: {name}}}`)"),
                essence.contains("json"),
            ),
            _ => (String::new(), true),
        };
        if !fits {
            at(
                &self.contract.referenced,
                format!(
                    "contract: the key goes in {place}, but the create's body is `{create_type}`; \
                     give the create a body of that kind (its `content_type`, or a \
                     `Content-Type` in its `headers`), or put the key where the API reads it"
                ),
            );
        }
        if let Some(slow) = &ops.create.variants.slow {
            let ttl = self.contract().in_flight_ttl;
            let (written, takes) = (&slow.takes.referenced, slow.takes.value.0);
            match ttl {
                Some(t) if takes <= t => at(
                    written,
                    format!(
                        "operations.create.variants.slow.takes `{}` must be longer than the \
                         contract's in-flight TTL ({}): the slow handler is there to outlive it",
                        humantime::format_duration(takes),
                        humantime::format_duration(t)
                    ),
                ),
                None if takes.is_zero() => at(
                    written,
                    "operations.create.variants.slow.takes must be more than 0s".to_owned(),
                ),
                _ => {}
            }
        }
        let with_id = [
            ops.get.as_ref().map(|g| (&g.path, g.body.as_ref())),
            ops.delete.as_ref().map(|d| (&d.path, d.body.as_ref())),
            ops.action.as_ref().map(|a| (&a.path, a.body.as_ref())),
        ];
        for (path, body) in with_id.into_iter().flatten() {
            let in_body = body.is_some_and(|b| b.source().contains(ID_IN_BODY));
            if !path.value.has_id() && !in_body {
                at(
                    &path.referenced,
                    format!(
                        "path `{}` must contain `{{id}}` (or `{{+id}}` for an id with `/` in it), \
                         or the operation's body `{{id}}`",
                        path.value.source()
                    ),
                );
            }
        }
        LoadError::all(errors)
    }

    /// Whose cookie jar a request uses: the profile's `cookies`, or by default `per_principal`
    /// where a principal has a `login` and `off` where none has.
    pub fn cookie_scope(&self) -> CookieScope {
        self.cookies
            .unwrap_or(if self.principals.value.iter().any(|p| p.login.is_some()) {
                CookieScope::PerPrincipal
            } else {
                CookieScope::Off
            })
    }

    /// The contract with the preset's defaults and the profile's overrides applied.
    pub fn contract(&self) -> Contract {
        self.contract.value.resolve()
    }

    /// Finds a principal by name, or by position: `A` (first), `B` (second).
    pub fn principal(&self, name: &str) -> Option<&Principal> {
        let list = &self.principals.value;
        list.iter().find(|p| p.name == name).or(match name {
            "A" => list.first(),
            "B" => list.get(1),
            _ => None,
        })
    }
}

/// The resource's id in a get, delete or action body.
pub const ID_IN_BODY: &str = "{id}";

/// `body` (rendered) with each `{id}` replaced by `id` encoded for the body's `content_type`: a
/// form body's value form-urlencoded, a JSON body's the content of a JSON string (escaped,
/// without its quotes), any other as it is.
pub fn id_in_body(body: &str, id: &str, content_type: &str) -> String {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let encoded = if essence == "application/x-www-form-urlencoded" {
        form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
    } else if essence.contains("json") {
        let quoted = serde_json::Value::String(id.to_owned()).to_string();
        quoted[1..quoted.len() - 1].to_owned()
    } else {
        id.to_owned()
    };
    body.replace(ID_IN_BODY, &encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"version: 1
name: t
base_urls: ["http://127.0.0.1:1"]
principals:
  - {name: a, headers: {X-Api-Key: ka}}
  - {name: b, headers: {X-Api-Key: kb}}
operations:
  create: {path: /things, body: '{"m":"{{marker}}"}', id: $.data.uuid}
  list: {path: /things, items: "$.data[*]", marker: $.m}
  get: {path: "/things/{id}"}
"#;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn minimal_profile_loads() {
        let p = TargetProfile::load("p.yaml", MINIMAL, &no_env).unwrap();
        assert_eq!(p.principal("B").unwrap().name, "b");
        assert_eq!(p.contract().mismatch_status, vec![409]);
    }

    #[test]
    fn refusal_statuses_are_one_code_or_a_list_and_a_bad_one_is_located_and_named() {
        let with = |contract: &str| format!("{MINIMAL}contract:\n{contract}\n");
        let p = TargetProfile::load("p.yaml", &with("  mismatch_status: 422"), &no_env).unwrap();
        assert_eq!(p.contract().mismatch_status, vec![422]);
        for null in [
            "  mismatch_status:",
            "  mismatch_status: ~",
            "  mismatch_status: null",
        ] {
            let p = TargetProfile::load("p.yaml", &with(null), &no_env).unwrap();
            assert_eq!(
                p.contract().mismatch_status,
                vec![409],
                "{null} keeps the preset's"
            );
        }
        let text = with("  in_flight_status: [409, 423, 409]\n  missing_key_status: ['428']");
        let p = TargetProfile::load("p.yaml", &text, &no_env).unwrap();
        assert_eq!(p.contract().in_flight_status, vec![409, 423]);
        assert_eq!(p.contract().missing_key_status, vec![428]);
        for (value, said) in [
            (
                "['4xx']",
                "`4xx` is not a status code; list the codes themselves",
            ),
            ("[999]", "999 is not an HTTP status code"),
            ("[201]", "201 is not a refusal"),
            ("304", "304 is not a refusal"),
            ("[]", "an empty list"),
            ("[-1]", "-1 is not an HTTP status code"),
            ("70000", "70000 is not an HTTP status code"),
        ] {
            let text = with(&format!("  preset: article\n  mismatch_status: {value}"));
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, 13, "{value}: {err}");
            assert!(err.message.contains(said), "{value}: {err}");
        }
    }

    /// A method is sent as written, so one no server would take as meant is a located error, and
    /// a login's path and body are no templates.
    #[test]
    fn a_method_not_sent_as_meant_and_a_templated_login_are_refused() {
        let get = MINIMAL.replace(
            "  get: {path: \"/things/{id}\"}",
            "  get: {path: \"/things/{id}\", method: post}",
        );
        assert_ne!(get, MINIMAL, "the minimal profile's get");
        let err = TargetProfile::load("p.yaml", &get, &no_env).unwrap_err();
        assert!(err.message.contains("methods are case-sensitive"), "{err}");
        assert_eq!(err.line, 10, "{err}");
        let empty = MINIMAL.replace(
            "  get: {path: \"/things/{id}\"}",
            "  get: {path: \"/things/{id}\", method: \"\"}",
        );
        let err = TargetProfile::load("p.yaml", &empty, &no_env).unwrap_err();
        assert!(err.message.contains("an empty method"), "{err}");
        let login = MINIMAL.replacen(
            "  - {name: a, headers: {X-Api-Key: ka}}",
            "  - {name: a, login: {path: \"/login?u={{principal.user}}\"}}",
            1,
        );
        assert_ne!(login, MINIMAL, "the minimal profile's principal");
        let err = TargetProfile::load("p.yaml", &login, &no_env).unwrap_err();
        assert!(
            err.message
                .contains("login.path and login.body are sent as written"),
            "{err}"
        );
    }

    /// A key placed in a body of another kind is refused at load: a form field appended to a JSON
    /// body, or a JSON member in a form body, would be a request the API cannot read.
    #[test]
    fn a_key_in_a_body_of_another_kind_is_refused() {
        let form = format!("{MINIMAL}contract:\n  key_at: {{form: ClientToken}}\n");
        let err = TargetProfile::load("p.yaml", &form, &no_env).unwrap_err();
        assert!(
            err.message
                .contains("the key goes in a form field (`key_at: {form: ClientToken}`), but the create's body is `application/json`"),
            "{err}"
        );
        let typed = form.replace(
            "  create: {path: /things,",
            "  create: {content_type: application/x-www-form-urlencoded, path: /things,",
        );
        assert_ne!(typed, form, "the minimal profile's create");
        TargetProfile::load("p.yaml", &typed, &no_env).expect("a form body takes a form key");
        let json = format!("{MINIMAL}contract:\n  key_at: {{json: clientToken}}\n");
        TargetProfile::load("p.yaml", &json, &no_env).expect("a JSON body takes a JSON key");
    }

    /// `replay_status` takes the same form, of 2xx and 4xx codes: a replay of a success is never
    /// a 5xx, 1xx or 3xx.
    #[test]
    fn a_replay_status_is_a_2xx_or_4xx_code_or_a_list_of_them() {
        let with = |contract: &str| format!("{MINIMAL}contract:\n{contract}\n");
        let p =
            TargetProfile::load("p.yaml", &with("  replay_status: [409, 200]"), &no_env).unwrap();
        assert_eq!(p.contract().replay_status, vec![409, 200]);
        let p = TargetProfile::load("p.yaml", &with("  replay_status: ~"), &no_env).unwrap();
        assert!(p.contract().replay_status.is_empty());
        for (value, said) in [
            (
                "500",
                "500 is not a status a replay of a success comes under",
            ),
            (
                "[302]",
                "302 is not a status a replay of a success comes under",
            ),
            ("[]", "an empty list"),
            ("1000", "1000 is not an HTTP status code"),
        ] {
            let text = with(&format!("  replay_status: {value}"));
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, 12, "{value}: {err}");
            assert!(err.message.contains(said), "{value}: {err}");
        }
    }

    #[test]
    fn the_key_has_one_place_and_not_a_header_http_uses() {
        let with = |extra: &str| format!("{MINIMAL}contract:\n{extra}");
        for (contract, said) in [
            (
                "  header: X-Key\n  key_at: {json: clientToken}\n",
                "both say where the key goes",
            ),
            (
                "  header: X-Key\n  key_at: {header: Y-Key}\n",
                "both say where the key goes",
            ),
            (
                "  key_at: {header: Content-Length}\n",
                "the key cannot travel in `Content-Length`",
            ),
            ("  header: Host\n", "the key cannot travel in `Host`"),
            (
                "  key_at: {header: X-Idemspec-Step}\n",
                "the key cannot travel in",
            ),
            (
                "  key_at: {header_matching: \"X-*-Key\"}\n",
                "names no header to send the key in",
            ),
        ] {
            let err = TargetProfile::load("p.yaml", &with(contract), &no_env).unwrap_err();
            assert!(err.message.contains(said), "{contract}: {err}");
        }
        let same = with("  header: X-Key\n  key_at: {header: x-key}\n");
        assert!(TargetProfile::load("p.yaml", &same, &no_env).is_ok());
    }

    #[test]
    fn a_zero_ttl_or_a_slow_handler_that_does_not_outlive_it_is_refused() {
        let with = |extra: &str| format!("{MINIMAL}{extra}");
        let err = TargetProfile::load("p.yaml", &with("contract:\n  in_flight_ttl: 0s\n"), &no_env)
            .unwrap_err();
        assert!(err.message.contains("in_flight_ttl is 0s"), "{err}");
        let slow = |takes: &str, ttl: &str| {
            MINIMAL.replace(
                "id: $.data.uuid}",
                &format!("id: $.data.uuid, variants: {{slow: {{body: '{{}}', takes: {takes}}}}}}}"),
            ) + &format!("contract:\n  in_flight_ttl: {ttl}\n")
        };
        for (takes, ttl) in [("0s", "2s"), ("2s", "2s"), ("1s", "2s")] {
            let text = slow(takes, ttl);
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert!(
                err.message
                    .contains("must be longer than the contract's in-flight TTL (2s)"),
                "{takes}: {err}"
            );
            let written = 1 + text
                .lines()
                .position(|l| l.contains("takes:"))
                .expect("takes") as u64;
            assert_eq!(err.line, written, "the error points at `takes`: {err}");
        }
        TargetProfile::load("p.yaml", &slow("3s", "2s"), &no_env)
            .expect("a slow handler past the TTL");
    }

    #[test]
    fn bad_jsonpath_is_located() {
        let text = MINIMAL.replace("$.data.uuid", "'$.data['");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 8, "{err}");
        assert!(err.message.contains("invalid JSONPath"), "{err}");
    }

    #[test]
    fn missing_id_placeholder_is_located() {
        let text = MINIMAL.replace("/things/{id}", "/things/x");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 10, "{err}");
        assert!(err.message.contains("must contain `{id}`"), "{err}");
    }

    #[test]
    fn a_process_env_value_that_reads_as_null_is_located_and_says_to_quote_it() {
        let env = |name: &str| (name == "SECRET").then(|| "#secret".to_owned());
        let text = format!(
            "{MINIMAL}process:\n  command: ./run.sh\n  env:\n    PORT: 8080\n    TOKEN: ${{SECRET}}\n"
        );
        let err = TargetProfile::load("p.yaml", &text, &env).unwrap_err();
        assert!(
            err.message.contains("`TOKEN` has no value") && err.message.contains("quote it"),
            "{err}"
        );
        let quoted = text.replace("${SECRET}", "\"${SECRET}\"");
        let p = TargetProfile::load("p.yaml", &quoted, &env).expect("a quoted value loads");
        let env = &p.process.expect("a process").env;
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("#secret"));
        assert_eq!(env.get("PORT").map(String::as_str), Some("8080"));
    }

    #[test]
    fn a_path_that_does_not_start_with_a_slash_is_located() {
        for (from, to, line) in [
            ("create: {path: /things", "create: {path: things", 8),
            ("list: {path: /things", "list: {path: things", 9),
            ("/things/{id}", "things/{id}", 10),
        ] {
            let text = MINIMAL.replace(from, to);
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, line, "{err}");
            assert!(err.message.contains("must start with `/`"), "{err}");
        }
    }

    #[test]
    fn a_resource_path_is_a_template_whose_unknown_placeholder_is_located() {
        let text = MINIMAL.replace("/things/{id}", "/t/{{markr}}/{+id}");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 10, "{err}");
        assert!(
            err.message.contains("unknown placeholder `{{markr}}`"),
            "{err}"
        );
        let text = MINIMAL.replace("/things/{id}", "/t/{{marker}}/{+id}");
        let p = TargetProfile::load("p.yaml", &text, &no_env).expect("`{+id}` names the id");
        let get = p.operations.get.expect("a get");
        assert_eq!(get.path.value.source(), "/t/{{marker}}/{+id}");
    }

    #[test]
    fn a_hook_with_both_or_neither_is_located() {
        let text = format!("{MINIMAL}hooks:\n  restart: {{arms: true}}\n");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 12, "{err}");
        assert!(
            err.message
                .contains("exactly one of `command` or `request`"),
            "{err}"
        );
    }

    #[test]
    fn what_http_cannot_carry_is_refused_at_load_with_every_problem() {
        let text = MINIMAL
            .replace("http://127.0.0.1:1", "http://127.0.0.1:99999\", \"http://")
            .replace("{X-Api-Key: kb}", "{X-Api-Key: \"kb\\r\\nX-Evil: 1\"}");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        let all: Vec<String> = err.each().map(ToString::to_string).collect();
        assert_eq!(all.len(), 3, "{err}");
        assert!(
            all[0].starts_with("p.yaml:3:") && all[0].contains("port `99999`"),
            "{err}"
        );
        assert!(all[1].contains("`http://` has no host"), "{err}");
        assert!(
            all[2].starts_with("p.yaml:5:") && all[2].contains("CR and LF"),
            "{err}"
        );
    }

    #[test]
    fn a_key_header_http_cannot_carry_is_located() {
        let text = format!("{MINIMAL}contract:\n  header: \"Idempotency Key\"\n");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 12, "{err}");
        assert!(
            err.message
                .contains("contract: header name `Idempotency Key` is not a valid HTTP field name"),
            "{err}"
        );
    }

    #[test]
    fn unknown_placeholder_is_located() {
        let text = MINIMAL.replace("{{marker}}", "{{markr}}");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 8, "{err}");
        assert!(err.message.contains("unknown placeholder"), "{err}");
    }
}
