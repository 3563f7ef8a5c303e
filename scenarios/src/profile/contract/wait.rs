//! A same-key request that waits for the one in flight (`contract.in_flight_wait`): as written,
//! bounded at load, and as the checks judge it.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use super::statuses::refusals;
use crate::value::HumanDuration;

/// The longest wait a profile may declare: 120 s. A check holds its requests for the declared
/// wait and more, so a longer one would hold a run for minutes per request; no layer we know of
/// documents one longer than 60 s.
pub const MAX_IN_FLIGHT_WAIT: Duration = Duration::from_secs(120);

/// What the checks add to a declared wait before they call a request held longer than it: 1 s,
/// for the network and the server's own time to answer once the wait ends.
pub const WAIT_SLACK: Duration = Duration::from_secs(1);

/// `in_flight_wait:` as a profile writes it: `{up_to: 10s, then: [408]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InFlightWaitSpec {
    /// How long a same-key request waits for the one in flight at most (more than `0s`, at most
    /// [`MAX_IN_FLIGHT_WAIT`]).
    #[serde(deserialize_with = "wait_bound")]
    pub up_to: HumanDuration,
    /// The statuses answered when the wait runs out (one code or a list, each a 4xx or 5xx, such
    /// as `408`); default: the contract's `in_flight_status`.
    #[serde(default, deserialize_with = "refusals")]
    pub then: Option<Vec<u16>>,
}

/// The declared wait, resolved: a same-key request arriving while the first runs waits up to
/// `up_to` and then gets the first's answer (a replay), or one of `then` when the wait runs out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InFlightWait {
    /// How long the wait lasts at most.
    #[serde(serialize_with = "as_human")]
    pub up_to: Duration,
    /// The statuses that end a wait that ran out.
    pub then: Vec<u16>,
}

impl InFlightWait {
    /// The longest a request that found its key in flight may be held before it is answered:
    /// the declared wait plus [`WAIT_SLACK`].
    pub fn limit(&self) -> Duration {
        self.up_to + WAIT_SLACK
    }

    /// `up to 10 s, then 408`, for a sentence.
    pub fn describe(&self) -> String {
        let then: Vec<String> = self.then.iter().map(u16::to_string).collect();
        format!(
            "up to {}, then {}",
            humantime::format_duration(self.up_to),
            then.join("/")
        )
    }
}

fn as_human<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    HumanDuration(*d).serialize(s)
}

/// Reads `up_to`: a duration more than `0s` and at most [`MAX_IN_FLIGHT_WAIT`].
fn wait_bound<'de, D: Deserializer<'de>>(d: D) -> Result<HumanDuration, D::Error> {
    let up_to = HumanDuration::deserialize(d)?;
    if up_to.0.is_zero() {
        return Err(serde::de::Error::custom(
            "in_flight_wait.up_to is 0s: a layer that does not wait refuses a same-key request \
             at once; leave `in_flight_wait` out and declare `in_flight_status`",
        ));
    }
    if up_to.0 > MAX_IN_FLIGHT_WAIT {
        return Err(serde::de::Error::custom(format!(
            "in_flight_wait.up_to: {} is longer than the limit of {}: every check holds a \
             same-key request that long and more",
            humantime::format_duration(up_to.0),
            humantime::format_duration(MAX_IN_FLIGHT_WAIT)
        )));
    }
    Ok(up_to)
}
