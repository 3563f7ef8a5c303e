//! `no_5xx: {step}`: no judged response of the step is a server error.

use idemspec_scenarios::scenario::StepRef;

use super::{responses, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;

/// The `no_5xx` kind.
pub(super) struct No5xx<'a>(pub &'a StepRef);

impl Judge for No5xx<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.0.step;
        match responses(run, step) {
            Err(e) => Undecided(e),
            Ok(rs) => match rs.iter().find(|e| e.status.is_some_and(|st| st >= 500)) {
                Some(e) => Broken(format!(
                    "`{step}` answered {}: a server error",
                    e.describe()
                )),
                None => Held(format!("`{step}` got no 5xx")),
            },
        }
    }
}
