//! The long-running operation an operation's answer names (`operations.*.operation:`): where the
//! answer names it, what the polled operation says once it has settled, and how long it may take.

use serde::{Deserialize, Serialize};

use super::{check_header, BodyCondition};
use crate::value::JsonPathExpr;

/// An operation whose answer names a long-running operation to poll until it settles (Google
/// Cloud's Operation, a `202` with `Location`, `Operation-Location` or `Azure-AsyncOperation`).
/// A check counts resources, reads counters and probes the list only after every operation it
/// started has settled, and an answer that names the same operation as another, in whatever
/// state, is the same answer (a replay of a running operation).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LongRunningOperation {
    /// Where the answer names the operation: `{json: $.selfLink}` or `{header: Location}`; an
    /// absolute URL's path and query are polled on the base URL the request went to.
    pub poll: PollAt,
    /// What the polled operation says when it is done, e.g. `{at: $.status, is: DONE}`.
    pub done: BodyCondition,
    /// What it says when it failed (it has settled too), e.g. `{at: $.status, is: FAILED}`.
    #[serde(default)]
    pub failed: Option<BodyCondition>,
    /// How long it may take to settle (default 60s, at most 10m); past it, what the check counts
    /// is UNKNOWN, naming the operation.
    #[serde(default)]
    pub within: Option<crate::value::HumanDuration>,
}

/// The longest `within` a profile may give: 10 minutes.
const MAX_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

impl LongRunningOperation {
    /// How long the operation may take to settle: `within`, default 60 s.
    pub fn bound(&self) -> std::time::Duration {
        self.within
            .map_or(std::time::Duration::from_secs(60), |w| w.0)
    }

    /// What is wrong with it, each in words that follow the field's path
    /// (`operations.create.operation.`): a `within` of zero or over 10 minutes, a `poll` header
    /// HTTP cannot carry.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self
            .within
            .is_some_and(|w| w.0.is_zero() || w.0 > MAX_WITHIN)
        {
            out.push("within must be more than 0s and at most 10m".to_owned());
        }
        if let PollAt::Header(name) = &self.poll {
            if let Err(m) = check_header(name, "v") {
                out.push(format!("poll: {m}"));
            }
        }
        out
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
