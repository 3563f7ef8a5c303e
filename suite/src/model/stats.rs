use serde::{Deserialize, Serialize};

use super::{CheckOutcome, Verdict};

/// The documented exit codes of `idemspec` (README "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitCode {
    /// 0: every MUST check passed (and no UNKNOWN, unless allowed).
    Success,
    /// 1: a MUST check failed, or a check was UNKNOWN without `--allow-unknown`.
    ChecksFailed,
    /// 2: usage or configuration error (bad flags, invalid profile or scenario).
    Usage,
    /// 3: the target was unreachable before any check could run.
    TargetUnreachable,
    /// 130 (128 + SIGINT, the shell convention): interrupted by Ctrl-C or SIGTERM; the run was
    /// stopped and the reference server, if any, killed.
    Interrupted,
}

impl ExitCode {
    /// The process exit status.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::ChecksFailed => 1,
            ExitCode::Usage => 2,
            ExitCode::TargetUnreachable => 3,
            ExitCode::Interrupted => 130,
        }
    }
}

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
    /// `allow_unknown` (DESIGN.md: "UNKNOWN fails a CI run unless `--allow-unknown`").
    pub fn exit_code(&self, allow_unknown: bool) -> ExitCode {
        if self.fail > 0 || (self.unknown > 0 && !allow_unknown) {
            ExitCode::ChecksFailed
        } else {
            ExitCode::Success
        }
    }
}

/// The whole result of a run, as the JSON report serialises it (with a `version` field).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Schema version of this report; bumped on incompatible changes.
    pub version: u32,
    /// The target profile's name.
    pub target: String,
    /// The contract preset the verdicts were judged against, e.g. `article`.
    pub contract: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time of the whole run, in ms.
    pub duration_ms: u64,
    /// One outcome per check, in run order.
    pub checks: Vec<CheckOutcome>,
    /// Counts per verdict.
    pub stats: RunStats,
}

/// What the runner tells reporters as a run progresses (model: nextest's reporter events).
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The run begins: which target, which contract, how many checks.
    RunStarted {
        /// Target profile name.
        target: String,
        /// Contract preset name.
        contract: String,
        /// Number of checks that will run (including ones that will SKIP).
        total: usize,
    },
    /// A check begins.
    CheckStarted {
        /// The check's id.
        id: String,
    },
    /// A check ended with this outcome.
    CheckFinished(Box<CheckOutcome>),
    /// The run ended.
    RunFinished(Box<RunReport>),
}
