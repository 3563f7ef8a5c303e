//! A check's scenario file: id, level, source, capabilities, faults, steps and assertions.
//!
//! Only the shared vocabulary lives here so far; the schema grows with the runner.

use serde::{Deserialize, Serialize};

/// How binding a check's rule is, as in RFC 2119: a broken MUST is a FAIL, a broken SHOULD a WARN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// Breaking it fails the run (exit code 1).
    Must,
    /// Breaking it is reported as WARN and does not fail the run.
    Should,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        })
    }
}
