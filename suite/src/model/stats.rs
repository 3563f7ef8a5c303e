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

    /// Checks that judged a rule: PASS, FAIL or WARN (INFO only records, SKIP and UNKNOWN decide
    /// nothing).
    pub fn judged(&self) -> usize {
        self.pass + self.fail + self.warn
    }

    /// The exit code these counts call for (README "Exit codes"): FAIL always fails the run;
    /// UNKNOWN fails it unless allowed; a run in which no check judged anything (every check
    /// skipped, say) is [`ExitCode::NothingJudged`] unless allowed, so a CI gate never passes on a
    /// run that checked nothing.
    pub fn exit_code(&self, policy: ExitPolicy) -> ExitCode {
        if self.fail > 0 || (self.unknown > 0 && !policy.allow_unknown) {
            ExitCode::ChecksFailed
        } else if self.judged() == 0 && !policy.allow_nothing_judged {
            ExitCode::NothingJudged
        } else {
            ExitCode::Success
        }
    }
}

/// What a run may end with and still succeed, as the user allowed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitPolicy {
    /// `--allow-unknown`: UNKNOWN verdicts do not fail the run.
    pub allow_unknown: bool,
    /// `--allow-nothing-judged`: a run with no PASS, FAIL or WARN exits 0.
    pub allow_nothing_judged: bool,
}
