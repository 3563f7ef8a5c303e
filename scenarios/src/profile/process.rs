//! How idemspec starts the target itself (`process:`), so it can kill it mid-flight and restart
//! it: the command, its environment, when it is ready, with their rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::check_url;
use crate::load::{LoadErrors, Location, Spanned};

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

impl ProcessSpec {
    /// The process's rules: its readiness ([`Readiness::check`]).
    pub(crate) fn check(&self, unplaced: &Location, errors: &mut LoadErrors) {
        if let Some(ready) = &self.ready {
            ready.check(unplaced, errors);
        }
    }
}

impl Readiness {
    /// Exactly one of `url` (one HTTP can use) or `tcp` (`host:port`); the error of neither or
    /// both points at `unplaced`, since `ready` itself has no position.
    fn check(&self, unplaced: &Location, errors: &mut LoadErrors) {
        match (&self.url, &self.tcp) {
            (Some(url), None) => {
                if let Err(m) = check_url(&url.value) {
                    errors.at(&url.referenced, format!("process.ready: {m}"));
                }
            }
            (None, Some(tcp)) => {
                if tcp
                    .value
                    .rsplit_once(':')
                    .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
                {
                    errors.at(
                        &tcp.referenced,
                        format!("process.ready.tcp `{}` must be host:port", tcp.value),
                    );
                }
            }
            _ => errors.at(
                unplaced,
                "process.ready needs exactly one of `url` or `tcp`",
            ),
        }
    }
}
