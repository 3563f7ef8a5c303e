//! `succeeded_within: {step, within}`: the step (with `retry`) reached a 2xx in time, counted from
//! its first attempt.

use idemspec_scenarios::scenario::SucceededWithin;

use super::{within, Rule};
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

impl Rule for SucceededWithin {
    fn judge(&self, run: &CheckRun) -> Finding {
        let limit = within(&self.within, run.contract());
        let view = run.step(&self.step);
        let attempts = view.exchanges.len();
        match view.meta.succeeded_after {
            Some(t) if t <= limit => Held(format!(
                "`{}` succeeded after {} ms ({attempts} attempts), within {} ms",
                self.step,
                t.as_millis(),
                limit.as_millis()
            )),
            Some(t) => Broken(format!(
                "`{}` succeeded only after {} ms; the limit is {} ms",
                self.step,
                t.as_millis(),
                limit.as_millis()
            )),
            None if attempts == 0 => Undecided(format!("step `{}` sent no request", self.step)),
            None => Broken(format!(
                "`{}` never succeeded in {} ms ({attempts} attempts, last: {}): locked out",
                self.step,
                limit.as_millis(),
                view.exchanges
                    .last()
                    .map(|e| e.describe())
                    .unwrap_or_default()
            )),
        }
    }
}
