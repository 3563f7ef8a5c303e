//! The documented exit codes of `idemspec`.

use serde::{Deserialize, Serialize};

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
    /// 4: no check judged anything (every check was SKIP, INFO or allowed UNKNOWN), and
    /// `--allow-nothing-judged` was not given.
    NothingJudged,
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
            ExitCode::NothingJudged => 4,
            ExitCode::Interrupted => 130,
        }
    }
}
