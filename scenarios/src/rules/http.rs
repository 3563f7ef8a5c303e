//! HTTP-mode rules: a [`Match`], a [`Fault`] and how often ([`Rule::times`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::values::{
    bare_verb, check_media_type, check_name, check_seed, checked, duration, is_token, Count,
    HttpMethod, Probability, ResponseHeaders, Status,
};

/// One proxy rule: requests that satisfy `match` get `fault`, at most `times` times.
///
/// Rules are evaluated in order and the first rule that applies wins; a request no rule applies to
/// passes through untouched. A rule whose match is satisfied but whose `nth`, `probability` or
/// `times` says "not this one" does not apply, and evaluation continues with the next rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A name for the event log and the control API (e.g. `lose-first-create`): not empty, no
    /// control characters, unique in its list ([`crate::rules::duplicate_name`]).
    #[serde(deserialize_with = "checked::name")]
    pub name: String,
    /// Which requests the rule is about; omitted, it matches every request.
    #[serde(rename = "match", default)]
    pub matcher: Match,
    /// What the proxy does to a request the rule applies to.
    #[serde(deserialize_with = "bare_verb::deserialize")]
    pub fault: Fault,
    /// Apply the fault at most this many times (at least 1); omitted, no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<Count>,
}

impl Rule {
    /// A rule that applies `fault` to every request `matcher` selects, with no `times` limit.
    pub fn new(name: impl Into<String>, matcher: Match, fault: Fault) -> Self {
        Self {
            name: name.into(),
            matcher,
            fault,
            times: None,
        }
    }

    /// Checks what parsing checks, for a rule built in code: the name, the match's cross-field
    /// rules and the fault's values. Not the uniqueness of the name, which needs the list.
    ///
    /// Errors: the message says what is wrong, as the YAML loader would.
    pub fn check(&self) -> Result<(), String> {
        check_name(&self.name)?;
        self.matcher.check()?;
        self.fault.check()
    }
}

/// Which requests a rule selects. Every condition given must hold; an empty match selects all.
///
/// At most one of `path`, `path_prefix` and `path_glob` may be given; `probability` needs an
/// explicit `seed` (and a seed needs a probability), so every run makes the same choices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawMatch")]
pub struct Match {
    /// The request method, e.g. `POST` (case-insensitive in YAML, stored upper-case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<HttpMethod>,
    /// The exact path, without the query (e.g. `/v1/workers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A path prefix, compared byte-wise (`/v1/workers/` selects every worker's sub-resources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// A glob over the path (`/v1/workers/*/reboot`); `*` does not cross `/`, `**` does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_glob: Option<String>,
    /// A request header that must be present, or equal to a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderMatch>,
    /// The exact value of the key header (as sent, quotes included): `Idempotency-Key`, or the
    /// header the proxy is configured to read the key from (`ProxyConfig::key_header`, which the
    /// runner sets from the profile's `contract.header`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Only the nth request (1-based) that satisfies the other conditions, counted per rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nth: Option<Count>,
    /// The chance that a request satisfying the other conditions is selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probability: Option<Probability>,
    /// The seed of the rule's own random sequence; required with `probability`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A header condition: `{name: x-idemspec-step, equals: lost-1}`, or only `{name: …}` for presence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawHeaderMatch")]
pub struct HeaderMatch {
    /// The header name, lower-cased (header names are case-insensitive, RFC 9110 §5.1).
    pub name: String,
    /// The exact value; omitted, the header only has to be present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeaderMatch {
    name: String,
    #[serde(default)]
    equals: Option<String>,
}

impl TryFrom<RawHeaderMatch> for HeaderMatch {
    type Error = String;

    fn try_from(raw: RawHeaderMatch) -> Result<Self, String> {
        if !is_token(&raw.name) {
            return Err(format!("`{}` is not a valid header name", raw.name));
        }
        Ok(Self {
            name: raw.name.to_ascii_lowercase(),
            equals: raw.equals,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    #[serde(default)]
    method: Option<HttpMethod>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    path_prefix: Option<String>,
    #[serde(default)]
    path_glob: Option<String>,
    #[serde(default)]
    header: Option<HeaderMatch>,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    nth: Option<Count>,
    #[serde(default)]
    probability: Option<Probability>,
    #[serde(default)]
    seed: Option<u64>,
}

impl Match {
    /// The cross-field rules: at most one path matcher, paths that start with `/`, a valid glob,
    /// `probability` with its `seed`.
    fn check(&self) -> Result<(), String> {
        let paths = [&self.path, &self.path_prefix, &self.path_glob];
        if paths.iter().filter(|p| p.is_some()).count() > 1 {
            return Err("give at most one of `path`, `path_prefix` and `path_glob`".into());
        }
        for p in [&self.path, &self.path_prefix].into_iter().flatten() {
            if !p.starts_with('/') {
                return Err(format!("path `{p}` must start with `/`"));
            }
        }
        if let Some(glob) = &self.path_glob {
            globset::GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("`{glob}` is not a valid path glob: {e}"))?;
        }
        check_seed(self.probability, self.seed)
    }
}

impl TryFrom<RawMatch> for Match {
    type Error = String;

    fn try_from(raw: RawMatch) -> Result<Self, String> {
        let m = Self {
            method: raw.method,
            path: raw.path,
            path_prefix: raw.path_prefix,
            path_glob: raw.path_glob,
            header: raw.header,
            idempotency_key: raw.idempotency_key,
            nth: raw.nth,
            probability: raw.probability,
            seed: raw.seed,
        };
        m.check()?;
        Ok(m)
    }
}

/// What the proxy does to a request a rule applies to: one variant per verb (`docs/writing-scenarios.md`, "Faults").
///
/// YAML names the verb, with its options as a mapping: `fault: refuse`, `fault: {drop_response: {}}`,
/// `fault: {respond: {status: 502, body: "…"}}`, `fault: {delay_request: {duration: 250ms}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Close the downstream connection before forwarding; the upstream never sees the request.
    /// With `reset: true` the close is a TCP RST (SO_LINGER 0) instead of a FIN.
    Refuse {
        /// Reset instead of closing gracefully.
        #[serde(default)]
        reset: bool,
    },
    /// Answer with a synthetic response; the request is not forwarded.
    Respond {
        /// The status code, a final one: 200–599 (e.g. 502, 503, 504).
        status: Status,
        /// The response body, sent as is.
        #[serde(default)]
        body: String,
        /// The `Content-Type` of `body`, a media type (`application/problem+json`); omitted,
        /// `text/plain; charset=utf-8`.
        #[serde(
            default,
            deserialize_with = "checked::media_type",
            skip_serializing_if = "Option::is_none"
        )]
        content_type: Option<String>,
        /// Further response headers, e.g. `{Retry-After: "1"}` on a 429 or 503.
        #[serde(default, skip_serializing_if = "ResponseHeaders::is_empty")]
        headers: ResponseHeaders,
    },
    /// Hold the request this long before forwarding it.
    DelayRequest {
        /// How long, with a unit (`250ms`, `3s`).
        #[serde(with = "duration")]
        duration: Duration,
    },
    /// Forward at once, hold the upstream's response this long before answering.
    DelayResponse {
        /// How long, with a unit (`250ms`, `3s`).
        #[serde(with = "duration")]
        duration: Duration,
    },
    /// Forward, read the upstream's whole response, then close the downstream connection without
    /// sending a byte of it: the work is done, the client never hears.
    DropResponse {},
    /// Forward, send the status line, the headers and `after_bytes` bytes of the body, then reset.
    /// The client never gets the whole response: a shorter body is cut before its last byte (or,
    /// when chunked, before its terminating chunk).
    ResetMidResponse {
        /// Body bytes delivered before the reset (0: headers only).
        #[serde(default)]
        after_bytes: u64,
    },
    /// Never answer: hold the downstream connection until the client gives up (or the proxy stops,
    /// which closes it without an answer).
    Hang {
        /// Forward the request first (the upstream does the work), and discard its response.
        #[serde(default)]
        forward: bool,
    },
    /// Send the request upstream twice and answer with the first response: a misbehaving
    /// intermediary. The request body is buffered so both sends carry the same bytes.
    Duplicate {
        /// One after the other (default), or both at once.
        #[serde(default)]
        mode: DuplicateMode,
    },
}

impl Fault {
    /// Checks the values parsing checks for a fault built in code (`respond`'s content type;
    /// the other values are checked by their types).
    fn check(&self) -> Result<(), String> {
        match self {
            Fault::Respond {
                content_type: Some(content_type),
                ..
            } => check_media_type(content_type),
            _ => Ok(()),
        }
    }

    /// The verb as written in YAML and recorded in events (`drop_response`, …).
    pub fn verb(&self) -> &'static str {
        match self {
            Fault::Refuse { .. } => "refuse",
            Fault::Respond { .. } => "respond",
            Fault::DelayRequest { .. } => "delay_request",
            Fault::DelayResponse { .. } => "delay_response",
            Fault::DropResponse {} => "drop_response",
            Fault::ResetMidResponse { .. } => "reset_mid_response",
            Fault::Hang { .. } => "hang",
            Fault::Duplicate { .. } => "duplicate",
        }
    }
}

/// How [`Fault::Duplicate`] sends its two copies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateMode {
    /// The second copy is sent after the first response has been read completely.
    #[default]
    Sequential,
    /// Both copies are sent at once.
    Concurrent,
}
