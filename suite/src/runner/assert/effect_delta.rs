//! `effect_delta: {before, after, equals}`: the action's effect counter, read by two `get` steps,
//! changed by exactly `equals`.

use idemspec_scenarios::scenario::EffectDelta;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;
use crate::runner::observe;

impl Judge for EffectDelta {
    fn judge(&self, run: &CheckRun) -> Finding {
        let read = |step: &str| -> Result<i64, String> {
            let ex = run
                .step(step)
                .first_response()
                .ok_or_else(|| format!("step `{step}` got no response"))?;
            observe::effect_of(run.ctx(), ex)
        };
        match (read(&self.before), read(&self.after)) {
            (Ok(b), Ok(a)) if a - b == self.equals => {
                Held(format!("the action took effect {} time(s)", a - b))
            }
            (Ok(b), Ok(a)) => Broken(format!(
                "the action's effect counter went from {b} to {a}; expected a change of exactly {}",
                self.equals
            )),
            (Err(e), _) | (_, Err(e)) => Undecided(e),
        }
    }
}
