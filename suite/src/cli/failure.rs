//! How a command fails: an error chain, the exit code it maps to, and `hint:` lines for the user.
//!
//! A FAIL verdict is not a failure here: it is data in the report, and the run's exit code comes
//! from [`RunStats::exit_code`](idemspec::model::RunStats::exit_code). Only usage and configuration
//! problems (exit 2) and an unreachable target (exit 3) are [`Failure`]s.

use idemspec::model::ExitCode;

/// A command that could not do its job.
#[derive(Debug)]
pub struct Failure {
    /// The exit code this failure maps to.
    pub code: ExitCode,
    /// The whole error chain, printed once at the top level.
    pub error: anyhow::Error,
    /// What the user can do about it, one sentence each.
    pub hints: Vec<String>,
}

impl Failure {
    /// A usage or configuration error (exit 2).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: ExitCode::Usage,
            error: error.into(),
            hints: Vec::new(),
        }
    }

    /// The target could not be reached before any check ran (exit 3).
    pub fn unreachable(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: ExitCode::TargetUnreachable,
            error: error.into(),
            hints: Vec::new(),
        }
    }

    /// The run was interrupted by a signal (exit 130).
    pub fn interrupted(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: ExitCode::Interrupted,
            error: error.into(),
            hints: Vec::new(),
        }
    }

    /// Adds a `hint:` line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Self::usage(error)
    }
}
