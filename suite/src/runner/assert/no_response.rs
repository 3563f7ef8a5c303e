//! `no_response: {step}`: the step was cut off mid-flight (a crash) and got no response; used as a
//! precondition.

use idemspec_scenarios::scenario::StepRef;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;

/// The `no_response` kind.
pub(super) struct NoResponse<'a>(pub &'a StepRef);

impl Judge for NoResponse<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.0.step;
        let view = run.step(step);
        match view.first_response() {
            None if view.exchanges.is_empty() => {
                Undecided(format!("step `{step}` sent no request"))
            }
            None => Held(format!("`{step}` was cut off as planned")),
            Some(e) => Broken(format!(
                "`{step}` was meant to be cut off mid-flight but answered {}",
                e.describe()
            )),
        }
    }
}
