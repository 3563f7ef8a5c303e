//! Counts per verdict over a run, and the exit code they call for.

use serde::{Deserialize, Serialize};

use super::{CheckOutcome, ExitCode, Verdict};

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
    /// Of the FAILs and WARNs, those the target's documentation states (the profile's
    /// `documented`).
    #[serde(default)]
    pub documented: usize,
    /// Of the FAILs, those the target's documentation states: they fail the run only under
    /// `--fail-documented`.
    #[serde(default)]
    pub documented_fail: usize,
}

impl RunStats {
    /// Adds one check's verdict to the counts, and whether it is documented.
    pub fn record(&mut self, check: &CheckOutcome) {
        if check.documented.is_some() {
            self.documented += 1;
            if check.verdict == Verdict::Fail {
                self.documented_fail += 1;
            }
        }
        match check.verdict {
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

    /// The exit code these counts call for (README "Exit codes"): FAIL fails the run, a FAIL the
    /// target's documentation states only under `--fail-documented`
    /// ([`CheckOutcome::fails_run`] says the same of one check); UNKNOWN fails it unless allowed;
    /// a run in which no check judged anything (every check skipped, say) is
    /// [`ExitCode::NothingJudged`] unless allowed, so a CI gate never passes on a run that
    /// checked nothing.
    pub fn exit_code(&self, policy: ExitPolicy) -> ExitCode {
        let failed = if policy.fail_documented {
            self.fail
        } else {
            self.fail.saturating_sub(self.documented_fail)
        };
        if failed > 0 || (self.unknown > 0 && !policy.allow_unknown) {
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
    /// `--fail-documented`: a FAIL the target's documentation states (the profile's
    /// `documented`) fails the run as any other FAIL.
    pub fail_documented: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A documented FAIL is let through unless `--fail-documented`; an undocumented one beside it
    /// still fails the run; counts from a report without the fields (an older JSON) read as none
    /// documented.
    #[test]
    fn a_documented_fail_fails_the_run_only_when_asked() {
        let documented = RunStats {
            pass: 3,
            fail: 1,
            documented: 1,
            documented_fail: 1,
            ..RunStats::default()
        };
        let strict = ExitPolicy {
            fail_documented: true,
            ..ExitPolicy::default()
        };
        assert_eq!(
            documented.exit_code(ExitPolicy::default()),
            ExitCode::Success
        );
        assert_eq!(documented.exit_code(strict), ExitCode::ChecksFailed);
        let both = RunStats {
            fail: 2,
            ..documented
        };
        assert_eq!(
            both.exit_code(ExitPolicy::default()),
            ExitCode::ChecksFailed
        );
        let older: RunStats = serde_json::from_str(
            r#"{"pass": 3, "fail": 1, "warn": 0, "info": 0, "skip": 0, "unknown": 0}"#,
        )
        .expect("older counts read");
        assert_eq!(
            older.exit_code(ExitPolicy::default()),
            ExitCode::ChecksFailed
        );
    }
}
