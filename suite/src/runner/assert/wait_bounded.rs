//! `wait_bounded: {step}`: under a contract that declares a same-key request waits for the one in
//! flight (`in_flight_wait: {up_to, then}`), no request of the step (nor its twin, see
//! `crate::runner::context::twin_step`) that found its key in flight was held longer than the
//! declared wait plus its slack: each was answered within it — with the first's answer, or the
//! wait's status — or the layer holds it longer than it declares. Not judged where the contract
//! declares no wait.
//!
//! An answer counts when the contract reads it as one that found its key in flight (a replay,
//! the wait's status, an in-flight refusal). A request given more than the limit and not answered
//! counts where its key was surely in flight: a twin (sent only beside an unanswered same-key
//! request), or one of two or more unanswered requests released at one barrier (at most one of
//! them holds the key and may run long). A lone unanswered request may be the one that runs.

use idemspec_scenarios::scenario::StepRef;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::reading::{answered_as_in_flight, held_past_wait};
use crate::runner::context::{twin_step, CheckRun};

/// The `wait_bounded` kind.
pub(super) struct WaitBounded<'a>(pub &'a StepRef);

impl Judge for WaitBounded<'_> {
    fn applies(&self, run: &CheckRun) -> bool {
        run.contract().in_flight_wait.is_some()
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.0.step;
        let contract = run.contract();
        let Some(wait) = &contract.in_flight_wait else {
            return Undecided("the contract declares no wait (`in_flight_wait`)".into());
        };
        let own = run.step(step).exchanges;
        if own.is_empty() {
            return Undecided(format!("step `{step}` sent no request"));
        }
        let twins = run.step(&twin_step(step)).exchanges;
        let at_once = run
            .scenario
            .step(step)
            .is_some_and(|s| s.concurrency > 1 && s.retry.is_none());
        let unanswered = own.iter().filter(|e| e.status.is_none()).count();
        // An unanswered request of the step counts only beside another at one barrier.
        let counts = |e: &Exchange| e.status.is_some() || (at_once && unanswered > 1);
        let held = own
            .iter()
            .copied()
            .filter(|e| counts(e))
            .chain(twins.iter().copied())
            .find_map(|e| held_past_wait(e, contract).map(|why| (e, why)));
        if let Some((e, why)) = held {
            return Broken(format!(
                "`{}`, a same-key request, {why}",
                e.evidence.request.step
            ));
        }
        let longest = own
            .iter()
            .copied()
            .chain(twins)
            .filter(|e| answered_as_in_flight(e, contract))
            .map(|e| e.elapsed)
            .max();
        let longest = longest.map_or("none was answered as one".to_owned(), |d| {
            format!("the longest answered in {:.1} s", d.as_secs_f64())
        });
        Held(format!(
            "no request of `{step}` that found its key in flight was held past the declared wait \
             ({}; {longest})",
            wait.describe()
        ))
    }
}
