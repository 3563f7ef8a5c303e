//! A scenario step: a request (`op`), a `wait`, or a `hook`.

use serde::{Deserialize, Deserializer, Serialize};

use super::StatusPattern;
use crate::value::HumanDuration;

/// The operation a request step drives, as the target profile defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// `operations.create`.
    Create,
    /// `operations.list` (counts by marker).
    List,
    /// `operations.get` on the resource of step `on`.
    Get,
    /// `operations.delete` on the resource of step `on`.
    Delete,
    /// `operations.action` on the resource of step `on`.
    Action,
}

impl Operation {
    /// Every operation, in the order a profile lists them.
    pub const ALL: [Operation; 5] = [
        Operation::Create,
        Operation::List,
        Operation::Get,
        Operation::Delete,
        Operation::Action,
    ];

    /// Its name as profiles and scenarios write it (`create`, `list`, …).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::List => "list",
            Operation::Get => "get",
            Operation::Delete => "delete",
            Operation::Action => "action",
        }
    }
}

/// A profile hook a step calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookName {
    /// Kill the server (or arm a crash of the next mutating request).
    Crash,
    /// Bring it back on the same address and database.
    Restart,
    /// Make the next mutating call fail part-way with a 5xx.
    FailNext,
}

/// Which request a create sends: the profile's body with `{{variant}}` = 1 or = 2 (a request that
/// differs), or one of the profile's request variants (`operations.create.variants`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyVariant {
    /// `{{variant}}` renders `1`.
    #[default]
    Default,
    /// `{{variant}}` renders `2`.
    Alt,
    /// The `always_fails` variant.
    AlwaysFails,
    /// The `fails_once` variant where the profile has no `fail_next` hook; with the hook (which
    /// makes the next create fail), the default body.
    FailsOnce,
    /// The `slow` variant.
    Slow,
    /// The `slow` variant where the profile has one, else the default body: a request a check
    /// would keep in flight without requiring the capability (a comparison it makes only then).
    SlowIfAny,
    /// The `hangs` variant where the profile has no `crash` hook; with the hook (which kills the
    /// server during the request), the default body.
    Hangs,
}

/// Whether a request goes through the fault-injecting proxy or straight to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// Through the proxy (faults apply; unmatched requests pass through).
    #[default]
    Proxy,
    /// Straight to the target.
    Direct,
}

/// The idempotency key a step sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum KeySpec {
    /// `none`: no key header.
    None,
    /// `""`: an empty header value.
    Empty,
    /// `long:N`: N visible ASCII characters, 1 to [`KeySpec::LONGEST`].
    Long(usize),
    /// `raw:TEXT`: exactly TEXT (may be non-ASCII or quoted).
    Raw(String),
    /// `sf:NAME`: the named key as an RFC 8941 string (`"…"`).
    SfNamed(String),
    /// `NAME` (e.g. `K1`): a key unique to this check run, the same wherever the name recurs.
    Named(String),
    /// `after_5xx:NAME`: the key a client retries a 5xx with under the contract — `NAME` itself
    /// where a 5xx is re-run, a fresh key where the 5xx is replayed (Stripe's advice after a 500).
    AfterFailure(String),
}

impl<'de> Deserialize<'de> for KeySpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        KeySpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl KeySpec {
    /// The longest `long:N` key: 65,536 characters, past every common server's limit on one
    /// header (8–16 KiB for most, 64 KiB for the most lenient), so no limit is out of reach, and
    /// still small enough to send, record and print.
    pub const LONGEST: usize = 65_536;

    /// Parses `none`, `""`, `long:N`, `raw:TEXT`, `sf:NAME`, `after_5xx:NAME` or `NAME`.
    ///
    /// # Errors
    /// A message saying what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Ok(KeySpec::Empty);
        }
        if text == "none" {
            return Ok(KeySpec::None);
        }
        if let Some(n) = text.strip_prefix("long:") {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "`{text}`: expected `long:N` with N a number of characters (digits only)"
                ));
            }
            // Digits only: a number too large for `usize` is out of range like any above LONGEST.
            let n: usize = n.parse().unwrap_or(usize::MAX);
            if n == 0 || n > KeySpec::LONGEST {
                return Err(format!(
                    "`{text}`: N must be 1 to {} characters (longer than any server's header \
                     limit; an empty key is `\"\"`)",
                    KeySpec::LONGEST
                ));
            }
            return Ok(KeySpec::Long(n));
        }
        if let Some(raw) = text.strip_prefix("raw:") {
            return Ok(KeySpec::Raw(raw.to_owned()));
        }
        if let Some(name) = text.strip_prefix("sf:") {
            if is_name(name) {
                return Ok(KeySpec::SfNamed(name.to_owned()));
            }
        }
        if let Some(name) = text.strip_prefix("after_5xx:") {
            if is_name(name) {
                return Ok(KeySpec::AfterFailure(name.to_owned()));
            }
        }
        if is_name(text) {
            return Ok(KeySpec::Named(text.to_owned()));
        }
        Err(format!(
            "invalid key `{text}`; expected a name like K1, `none`, `\"\"`, `long:300`, `raw:VALUE`, `sf:K1` or `after_5xx:K1`"
        ))
    }

    /// The name of a named key (`K1`, `sf:K1`, `after_5xx:K1`): steps that share it send one key.
    pub fn name(&self) -> Option<&str> {
        match self {
            KeySpec::Named(n) | KeySpec::SfNamed(n) | KeySpec::AfterFailure(n) => Some(n),
            KeySpec::None | KeySpec::Empty | KeySpec::Long(_) | KeySpec::Raw(_) => None,
        }
    }
}

/// A time limit, absolute (`10s`, positive) or relative to the contract's in-flight TTL and its
/// declared wait (`in_flight_ttl + 5s`, `in_flight_ttl`, `in_flight_ttl + in_flight_wait + 5s`):
/// terms joined by `+`, each a duration or one of the two names, each name at most once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Within {
    /// Whether the contract's in-flight TTL is added.
    pub plus_in_flight_ttl: bool,
    /// Whether the contract's declared wait of a same-key request in flight
    /// (`in_flight_wait.up_to`, with its slack) is added; nothing where it declares none.
    pub plus_in_flight_wait: bool,
    /// The fixed part.
    pub extra: std::time::Duration,
}

impl Within {
    /// Parses `text`; a message naming it when it is no time limit.
    fn parse(text: &str) -> Result<Within, String> {
        let invalid = |why: String| {
            format!(
                "invalid time limit `{text}` ({why}); expected `10s`, `in_flight_ttl + 5s` or \
                 `in_flight_ttl + in_flight_wait + 5s`"
            )
        };
        let mut w = Within {
            plus_in_flight_ttl: false,
            plus_in_flight_wait: false,
            extra: std::time::Duration::ZERO,
        };
        for term in text.split('+').map(str::trim) {
            let flag = match term {
                "in_flight_ttl" => &mut w.plus_in_flight_ttl,
                "in_flight_wait" => &mut w.plus_in_flight_wait,
                _ => {
                    let d = humantime::parse_duration(term)
                        .map_err(|e| invalid(format!("`{term}`: {e}")))?;
                    w.extra += d;
                    continue;
                }
            };
            if std::mem::replace(flag, true) {
                return Err(invalid(format!("`{term}` twice")));
            }
        }
        if !w.plus_in_flight_ttl && w.extra.is_zero() {
            return Err(format!(
                "the time limit `{text}` leaves no time to retry or to succeed; expected a \
                 positive duration (`10s`) or `in_flight_ttl`"
            ));
        }
        Ok(w)
    }
}

impl<'de> Deserialize<'de> for Within {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Within::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Repeat a request until its status is in `until`, every `every`, for at most `within`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Pause between attempts.
    pub every: HumanDuration,
    /// Give up after this long.
    pub within: Within,
    /// Stop at one of these statuses (default `[2xx]`).
    #[serde(default = "success")]
    pub until: Vec<StatusPattern>,
}

fn success() -> Vec<StatusPattern> {
    vec![StatusPattern::Class(2)]
}

fn one() -> u32 {
    1
}

/// One step of a scenario: exactly one of `op`, `wait` or `hook`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// 1-based position, set by the loader.
    #[serde(skip)]
    pub index: usize,
    /// Name used by assertions and sent as `X-Idemspec-Step` (fault rules can match it);
    /// default `step-N`.
    #[serde(default)]
    pub name: Option<String>,
    /// A request.
    #[serde(default)]
    pub op: Option<Operation>,
    /// A pause, or a wait until an earlier background request was sent.
    #[serde(default)]
    pub wait: Option<Wait>,
    /// A hook call.
    #[serde(default)]
    pub hook: Option<HookName>,
    /// Which principal sends it: a profile name, or `A`/`B` (default `A`).
    #[serde(default)]
    pub principal: Option<String>,
    /// The idempotency key (default: none).
    #[serde(default)]
    pub key: Option<KeySpec>,
    /// The body variant (create, action).
    #[serde(default)]
    pub body: BodyVariant,
    /// The earlier create step whose resource `get`/`delete`/`action` act on.
    #[serde(default)]
    pub on: Option<String>,
    /// Requests released together at one barrier (default 1).
    #[serde(default = "one")]
    pub concurrency: u32,
    /// Client timeout per request (default 10s).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Through the proxy (default) or direct.
    #[serde(default)]
    pub via: Via,
    /// Start it and go on; it is awaited before the assertions.
    #[serde(default)]
    pub background: bool,
    /// Repeat until a status.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
}

impl Step {
    /// The step's name, or `step-N`.
    pub fn name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("step-{}", self.index))
    }

    /// Checks the step against the names of the steps before it (`requests`: those that send
    /// requests).
    ///
    /// # Errors
    /// A message for the first problem.
    pub fn validate(&self, earlier: &[String], requests: &[String]) -> Result<(), String> {
        self.check_shape()?;
        self.check_references(earlier, requests)?;
        self.check_timings()
    }

    /// One kind of step, with only its kind's fields, and a `concurrency` and `retry` that fit.
    fn check_shape(&self) -> Result<(), String> {
        let kinds = [self.op.is_some(), self.wait.is_some(), self.hook.is_some()];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err("a step needs exactly one of `op`, `wait` or `hook`".into());
        }
        if self.op.is_none() {
            let request_only = [
                ("principal", self.principal.is_some()),
                ("key", self.key.is_some()),
                ("body", self.body != BodyVariant::default()),
                ("on", self.on.is_some()),
                ("concurrency", self.concurrency != 1),
                ("timeout", self.timeout.is_some()),
                ("via", self.via != Via::default()),
                ("background", self.background),
                ("retry", self.retry.is_some()),
            ];
            if let Some((field, _)) = request_only.iter().find(|(_, set)| *set) {
                return Err(format!(
                    "`{field}` belongs to a request step (`op`); a `wait` or `hook` step takes only `name`"
                ));
            }
        }
        if self.concurrency == 0 || self.concurrency > 256 {
            return Err(format!(
                "concurrency {} out of range; expected 1..=256",
                self.concurrency
            ));
        }
        if self.retry.is_some() && self.concurrency != 1 {
            return Err(
                "`retry` repeats one request; it cannot be combined with `concurrency`".into(),
            );
        }
        Ok(())
    }

    /// `on` and `wait: {sent: …}` name earlier steps of the right kind.
    fn check_references(&self, earlier: &[String], requests: &[String]) -> Result<(), String> {
        let needs_target = matches!(
            self.op,
            Some(Operation::Get | Operation::Delete | Operation::Action)
        );
        match (&self.on, needs_target) {
            (None, true) => {
                return Err("`get`, `delete` and `action` need `on: <create step>`".into())
            }
            (Some(on), _) if !earlier.contains(on) => {
                return Err(format!("`on: {on}` does not name an earlier step"))
            }
            _ => {}
        }
        if let Some(Wait::Sent { sent, .. }) = &self.wait {
            if !requests.contains(sent) {
                return Err(if earlier.contains(sent) {
                    format!(
                        "`wait: {{sent: {sent}}}` names a wait or a hook, which sends nothing; name an earlier request step"
                    )
                } else {
                    format!("`wait: {{sent: {sent}}}` does not name an earlier step")
                });
            }
        }
        Ok(())
    }

    /// Each duration within the step limit, and `retry.every` no tighter than the least interval.
    fn check_timings(&self) -> Result<(), String> {
        if let Some(every) = self.retry.as_ref().map(|r| r.every.0) {
            if every < RETRY_EVERY_MIN {
                return Err(format!(
                    "`retry.every: {}` is shorter than the least interval, {}: a tighter loop \
                     floods the target without deciding anything sooner",
                    humantime::format_duration(every),
                    humantime::format_duration(RETRY_EVERY_MIN)
                ));
            }
        }
        let timings = [
            ("wait", self.wait.as_ref().map(Wait::longest_pause)),
            ("timeout", self.timeout.map(|d| d.0)),
            ("retry.every", self.retry.as_ref().map(|r| r.every.0)),
            ("retry.within", self.retry.as_ref().map(|r| r.within.extra)),
        ];
        for (field, d) in timings {
            if let Some(d) = d {
                within_step_limit(field, d)?;
            }
        }
        Ok(())
    }
}

/// A `wait` step: a fixed pause (`wait: 200ms`), or until an earlier background request has been
/// sent whole, then an optional pause (`wait: {sent: slow, then: 50ms}`).
///
/// `sent` is the condition a "let the first request reach the server" pause stands in for: the
/// request's last byte was handed to its connection (or the request ended, whichever comes first),
/// so a slow connect or a busy runner does not reorder the two requests. `then` is the target's
/// own time to take up a request it has read (claim its key), which no client can observe.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Wait {
    /// Pause this long.
    For(HumanDuration),
    /// Until the named step's first request was sent whole, then `then`.
    Sent {
        /// An earlier step (normally `background: true`).
        sent: String,
        /// A pause after it was sent (default none).
        #[serde(skip_serializing_if = "Option::is_none")]
        then: Option<HumanDuration>,
    },
}

impl Wait {
    /// The fixed part of the wait, for the step limit.
    fn longest_pause(&self) -> std::time::Duration {
        match self {
            Wait::For(d) => d.0,
            Wait::Sent { then, .. } => then.map_or(std::time::Duration::ZERO, |d| d.0),
        }
    }
}

impl<'de> Deserialize<'de> for Wait {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de;

        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Sent {
            sent: String,
            #[serde(default)]
            then: Option<HumanDuration>,
        }

        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = Wait;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a duration such as `200ms`, or `{sent: <earlier step>, then: <duration>}`",
                )
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Wait, E> {
                HumanDuration::deserialize(de::value::StrDeserializer::<E>::new(v)).map(Wait::For)
            }

            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Wait, A::Error> {
                let Sent { sent, then } =
                    Sent::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Wait::Sent { sent, then })
            }
        }

        d.deserialize_any(Visitor)
    }
}

/// The least `retry.every`: 10 ms.
pub const RETRY_EVERY_MIN: std::time::Duration = std::time::Duration::from_millis(10);

/// The longest any one step may wait, time out or retry: 1 hour (a check has a deadline of its
/// own, `--check-timeout`, 5 minutes by default).
pub const STEP_LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// `d` is within [`STEP_LIMIT`].
///
/// # Errors
/// A message naming the field and the limit.
pub fn within_step_limit(field: &str, d: std::time::Duration) -> Result<(), String> {
    if d > STEP_LIMIT {
        return Err(format!(
            "`{field}: {}` is longer than the limit of 1h for one step",
            humantime::format_duration(d)
        ));
    }
    Ok(())
}
