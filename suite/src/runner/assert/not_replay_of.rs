//! `not_replay_of: {step, as}`: the step was handled as its own operation, not answered with the
//! other step's response replayed.

use idemspec_scenarios::scenario::StepPair;

use super::{responses, same_response, Rule};
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

/// The `not_replay_of` kind.
pub(super) struct NotReplayOf<'a>(pub &'a StepPair);

impl Rule for NotReplayOf<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let StepPair { step, other } = self.0;
        let Some(original) = run.step(other).first_response() else {
            return Undecided(format!("step `{other}` got no response to compare with"));
        };
        match responses(run, step) {
            Err(e) => Undecided(e),
            Ok(rs) if rs.iter().any(|r| same_response(r, original)) => Broken(format!(
                "`{step}` got `{other}`'s response replayed ({}): the key was not scoped to the operation",
                original.describe()
            )),
            Ok(_) => Held(format!("`{step}` was handled as its own operation")),
        }
    }
}
