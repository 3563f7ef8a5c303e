//! `consistent: {step}`: N simultaneous requests with one key: the successes are identical (one
//! resource), the rest in-flight conflicts (article: concurrent retries; ietf-draft-07 §2.6).

use idemspec_scenarios::scenario::StepRef;

use super::{differences, Rule};
use crate::client::Exchange;
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

/// The `consistent` kind.
pub(super) struct Consistent<'a>(pub &'a StepRef);

impl Rule for Consistent<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.0.step;
        let rs = run.step(step).exchanges;
        if rs.is_empty() {
            return Undecided(format!("step `{step}` sent no request"));
        }
        if let Some(lost) = rs.iter().find(|e| e.status.is_none()) {
            return Undecided(format!(
                "a request of `{step}` got no response: {}",
                lost.describe()
            ));
        }
        let successes: Vec<&Exchange> = rs.iter().copied().filter(|e| e.is_success()).collect();
        let Some(first) = successes.first() else {
            return Broken(format!(
                "none of the {} requests of `{step}` succeeded",
                rs.len()
            ));
        };
        let ids: Vec<Option<String>> = successes.iter().map(|e| run.env().created_id(e)).collect();
        if let Some(other) = ids.iter().find(|id| **id != ids[0]) {
            return Broken(format!(
                "requests with one key got different resources: {} and {}",
                ids[0].as_deref().unwrap_or("?"),
                other.as_deref().unwrap_or("?")
            ));
        }
        let contract = run.contract();
        let odd: Vec<String> = rs
            .iter()
            .filter(|e| {
                !e.is_success()
                    && !e
                        .status
                        .is_some_and(|s| contract.in_flight_status.contains(&s))
            })
            .map(|e| e.describe())
            .collect();
        if !odd.is_empty() {
            return Broken(format!(
                "besides the successes, `{step}` got {}; expected only in-flight conflicts ({:?})",
                odd.join(", "),
                contract.in_flight_status
            ));
        }
        let replays = successes
            .iter()
            .skip(1)
            .filter(|e| differences(e, first).is_empty())
            .count();
        if replays + 1 != successes.len() {
            return Broken(format!(
                "the {} successes of `{step}` are not identical replays",
                successes.len()
            ));
        }
        let conflicts = rs.len() - successes.len();
        let retry_after = rs
            .iter()
            .filter(|e| !e.is_success())
            .all(|e| e.header("retry-after").is_some());
        Held(format!(
            "{} request(s) succeeded with one resource, {conflicts} got in-flight conflicts{}",
            successes.len(),
            if conflicts > 0 && !retry_after {
                " (some without Retry-After)"
            } else {
                ""
            }
        ))
    }
}
