//! `overlapped: {step, with}`: the judged request of `step` started while `with`'s request was
//! still running, and `with`'s request ran: it was not itself refused as in flight before the
//! declared in-flight TTL (had it reached the target after `step`'s request, it never held the
//! key). A precondition: a check about a handler that outlives the in-flight TTL observed nothing
//! if the retry came after the handler had finished, or before it started.

use idemspec_scenarios::scenario::{Overlapped, StatusPattern};

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::reading::answer_matches;
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
        let contract = run.contract();
        if let Some(ttl) = contract.in_flight_ttl {
            if early.elapsed < ttl && answer_matches(StatusPattern::InFlight, early, contract) {
                return Broken(format!(
                    "`{}` was itself refused as in flight after {} ms, within the in-flight TTL \
                     ({} ms): `{}` reached the target first, so `{}` never held the key",
                    self.with,
                    early.elapsed.as_millis(),
                    ttl.as_millis(),
                    self.step,
                    self.with
                ));
            }
        }
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
