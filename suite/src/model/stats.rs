//! Counts per verdict over a run, and the exit code they call for.

use serde::{Deserialize, Serialize};

use super::{ExitCode, Verdict};

/// Counts per verdict over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStats {
    /// Checks that passed.
    pub pass: usize,
    /// MUST checks that failed.
    pub fail: usize,
    /// SHOULD checks that failed.
    pub warn: usize,
    /// Checks that only recorded behaviour.
    pub info: usize,
    /// Checks skipped for a missing capability.
    pub skip: usize,
    /// Checks that could not decide.
    pub unknown: usize,
}

impl RunStats {
    /// Adds one verdict to the counts.
    pub fn record(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Pass => self.pass += 1,
            Verdict::Fail => self.fail += 1,
            Verdict::Warn => self.warn += 1,
            Verdict::Info => self.info += 1,
            Verdict::Skip => self.skip += 1,
            Verdict::Unknown => self.unknown += 1,
        }
    }

    /// The exit code these counts call for: FAIL always fails the run; UNKNOWN fails it unless
    /// `allow_unknown` (README "Exit codes").
    pub fn exit_code(&self, allow_unknown: bool) -> ExitCode {
        if self.fail > 0 || (self.unknown > 0 && !allow_unknown) {
            ExitCode::ChecksFailed
        } else {
            ExitCode::Success
        }
    }
}
