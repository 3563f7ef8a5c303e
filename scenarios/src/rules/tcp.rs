//! TCP-mode rules: the byte-level subset of faults, per accepted connection.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::values::{bare_verb, check_name, check_seed, checked, duration, Count, Probability};

/// One TCP-mode rule: connections that satisfy `match` get `fault`, at most `times` times.
/// Evaluated in order per accepted connection; the first rule that applies wins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpRule {
    /// A name for the event log: not empty, no control characters, unique in its list.
    #[serde(deserialize_with = "checked::name")]
    pub name: String,
    /// Which connections; omitted, every connection.
    #[serde(rename = "match", default)]
    pub matcher: TcpMatch,
    /// What happens to the connection.
    #[serde(deserialize_with = "bare_verb::deserialize")]
    pub fault: TcpFault,
    /// Apply at most this many times (at least 1); omitted, no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<Count>,
}

impl TcpRule {
    /// Checks what parsing checks, for a rule built in code: the name and `probability` with
    /// its `seed`. Not the uniqueness of the name, which needs the list.
    ///
    /// Errors: the message says what is wrong, as the YAML loader would.
    pub fn check(&self) -> Result<(), String> {
        check_name(&self.name)?;
        check_seed(self.matcher.probability, self.matcher.seed)
    }
}

/// Which connections a TCP rule selects: the nth accepted connection (1-based, counted per rule)
/// and/or a probability with its explicit seed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawTcpMatch")]
pub struct TcpMatch {
    /// Only the nth connection (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nth: Option<Count>,
    /// The chance that a connection is selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probability: Option<Probability>,
    /// The seed of the rule's random sequence; required with `probability`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTcpMatch {
    #[serde(default)]
    nth: Option<Count>,
    #[serde(default)]
    probability: Option<Probability>,
    #[serde(default)]
    seed: Option<u64>,
}

impl TryFrom<RawTcpMatch> for TcpMatch {
    type Error = String;

    fn try_from(raw: RawTcpMatch) -> Result<Self, String> {
        check_seed(raw.probability, raw.seed)?;
        Ok(Self {
            nth: raw.nth,
            probability: raw.probability,
            seed: raw.seed,
        })
    }
}

/// The direction of the bytes a TCP fault acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Bytes from the downstream client to the upstream server.
    Upstream,
    /// Bytes from the upstream server to the downstream client.
    Downstream,
    /// Both directions.
    #[default]
    Both,
}

/// A byte-level fault for one TCP connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TcpFault {
    /// Accept and close at once (RST with `reset: true`); no upstream connection is made.
    Refuse {
        /// Reset instead of closing gracefully.
        #[serde(default)]
        reset: bool,
    },
    /// Hold every chunk of bytes `duration` ± a uniform `jitter` before passing it on.
    Latency {
        /// The added latency per chunk (`50ms`).
        #[serde(with = "duration")]
        duration: Duration,
        /// The largest random deviation from `duration` (`10ms`); drawn from the rule's seed
        /// when it has one, else from seed 0.
        #[serde(
            default,
            with = "duration::option",
            skip_serializing_if = "Option::is_none"
        )]
        jitter: Option<Duration>,
        /// Which bytes are delayed (default both).
        #[serde(default)]
        direction: Direction,
    },
    /// Pass `bytes` bytes in `direction`, then close both sides (RST with `reset: true`).
    CloseAfter {
        /// Bytes passed before the close (0: close at the first byte).
        bytes: u64,
        /// Which bytes are counted (default both, summed).
        #[serde(default)]
        direction: Direction,
        /// Reset instead of closing gracefully.
        #[serde(default)]
        reset: bool,
    },
    /// Accept, connect nowhere, read and discard everything, never answer, until the client
    /// gives up (or the proxy stops).
    Blackhole {},
}

impl TcpFault {
    /// The verb as written in YAML and recorded in events.
    pub fn verb(&self) -> &'static str {
        match self {
            TcpFault::Refuse { .. } => "refuse",
            TcpFault::Latency { .. } => "latency",
            TcpFault::CloseAfter { .. } => "close_after",
            TcpFault::Blackhole {} => "blackhole",
        }
    }
}
