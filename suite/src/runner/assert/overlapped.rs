//! `overlapped: {step, with}`: the judged request of `step` started while `with`'s request was
//! still running. A precondition: a check about a handler that outlives the in-flight TTL observed
//! nothing if the retry came after the handler had finished.

use idemspec_scenarios::scenario::Overlapped;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;

impl Judge for Overlapped {
    fn judge(&self, run: &CheckRun) -> Finding {
        let later = run.step(&self.step);
        let Some(late) = later.judged().last().copied() else {
            return Undecided(format!("step `{}` sent no request", self.step));
        };
        let Some(early) = run.step(&self.with).exchanges.first().copied() else {
            return Undecided(format!("step `{}` sent no request", self.with));
        };
        let early_end = early.started + early.elapsed;
        if late.started < early_end {
            Held(format!(
                "`{}` started {} ms before `{}`'s request ended",
                self.step,
                (early_end - late.started).as_millis(),
                self.with
            ))
        } else {
            Broken(format!(
                "`{}` started {} ms after `{}`'s request had ended, so the two never ran together",
                self.step,
                (late.started - early_end).as_millis(),
                self.with
            ))
        }
    }
}
