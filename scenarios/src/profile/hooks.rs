//! The hooks a check may call (`hooks:` — crash, restart, fail_next), each a shell command or an
//! HTTP request, with their rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::method::{http_method, post};
use super::wire::request_problems;
use crate::load::{LoadErrors, Spanned};

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

impl Hooks {
    /// The hooks' rules: each request hook's URL and headers are ones HTTP can use
    /// ([`HttpHook::problems`]); exactly one of `command` or `request` is checked while parsing.
    pub(crate) fn check(&self, errors: &mut LoadErrors) {
        let hooks = [
            ("hooks.crash", self.crash.as_ref()),
            ("hooks.restart", self.restart.as_ref()),
            ("hooks.fail_next", self.fail_next.as_ref()),
        ];
        let requests = hooks
            .into_iter()
            .filter_map(|(what, hook)| Some((what, hook?.request.as_ref()?)));
        for (what, request) in requests {
            for m in request.problems() {
                errors.at(&request.url.referenced, format!("{what}: {m}"));
            }
        }
    }
}

impl HttpHook {
    /// What HTTP cannot carry in this request: its URL, then each header.
    fn problems(&self) -> Vec<String> {
        request_problems(&self.url.value, &self.headers)
    }
}
