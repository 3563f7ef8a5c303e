//! How a command fails: an error chain, the exit code it maps to, and `hint:` lines for the user.
//!
//! A FAIL verdict is not a failure here: it is data in the report, and the run's exit code comes
//! from [`RunStats::exit_code`](idemspec::model::RunStats::exit_code). Only usage and configuration
//! problems (exit 2) and an unreachable target (exit 3) are [`Failure`]s.

use idemspec::engine::SelectError;
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

    /// A selection that cannot run (exit 2), with the id nearest to an unknown one among `ids`
    /// (at most two edits away) as a "did you mean" hint.
    pub fn selection(error: &SelectError, ids: &[&str]) -> Self {
        let failure = Self::usage(error.clone());
        match error {
            SelectError::Unknown(id) => match closest(id, ids) {
                Some(near) => failure.hint(format!("did you mean `{near}`?")),
                None => failure,
            },
            SelectError::Nothing | SelectError::Duplicate(_) => failure,
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

/// The id of `ids` nearest to `id`, at most two edits away.
fn closest<'a>(id: &str, ids: &[&'a str]) -> Option<&'a str> {
    ids.iter()
        .map(|known| (edit_distance(id, known), *known))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, known)| known)
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_find_their_check() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let ids = ["lost-response", "reboot-once", "same-key"];
        assert_eq!(closest("lost-responce", &ids), Some("lost-response"));
        assert_eq!(closest("reboot-twice", &ids), None);
        assert_eq!(closest("same-kee", &ids), Some("same-key"));
    }
}
