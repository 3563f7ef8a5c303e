//! `same_response: {step, as}`: every judged response of the step is a faithful replay of the
//! other step's first response (status, body bytes, Location, Content-Type).

use idemspec_scenarios::scenario::StepPair;

use super::{differences, responses, Rule};
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

/// The `same_response` kind.
pub(super) struct SameResponse<'a>(pub &'a StepPair);

impl Rule for SameResponse<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let StepPair { step, other } = self.0;
        let Some(original) = run.step(other).first_response() else {
            return Undecided(format!("step `{other}` got no response to compare with"));
        };
        let rs = match responses(run, step) {
            Ok(rs) => rs,
            Err(e) => return Undecided(e),
        };
        let mut diffs: Vec<String> = rs.iter().flat_map(|r| differences(r, original)).collect();
        diffs.dedup();
        if diffs.is_empty() {
            Held(format!("`{step}` replayed `{other}` faithfully"))
        } else {
            Broken(format!(
                "`{step}` is not the same response as `{other}`: {}",
                diffs.join("; ")
            ))
        }
    }
}
