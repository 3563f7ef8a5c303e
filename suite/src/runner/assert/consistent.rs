//! `consistent: {step, fidelity_judged_by}`: N simultaneous requests with one key: the successes
//! are one resource replayed identically (replay fidelity aside, where another check owns it), the
//! rest in-flight conflicts, or under a declared wait (`in_flight_wait`) the status it ends in
//! (article: concurrent retries; ietf-draft-07 §2.6).

use idemspec_scenarios::scenario::{Consistent, StatusPattern};

use super::compare::{self, owned_elsewhere, split_fidelity, Difference};
use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::reading::{describe_patterns, refused};
use crate::runner::context::CheckRun;

/// How the later successes of `step` differ from the first, once each: judged here, and owned by
/// `fidelity_judged_by`.
fn later_differences(a: &Consistent, run: &CheckRun) -> (Vec<Difference>, Vec<Difference>) {
    let rs = run.step(&a.step).exchanges;
    let mut successes = rs.iter().filter(|e| e.is_success());
    let Some(first) = successes.next() else {
        return (Vec::new(), Vec::new());
    };
    let mut all: Vec<Difference> = Vec::new();
    for d in successes.flat_map(|e| compare::replay_differences(run, e, first)) {
        if !all.contains(&d) {
            all.push(d);
        }
    }
    split_fidelity(all, a.fidelity_judged_by.as_deref())
}

impl Judge for Consistent {
    fn notes(&self, run: &CheckRun) -> Vec<String> {
        let Some(owner) = &self.fidelity_judged_by else {
            return Vec::new();
        };
        let (_, elsewhere) = later_differences(self, run);
        let later = format!("a later success of `{}`", self.step);
        elsewhere
            .iter()
            .map(|d| owned_elsewhere(&later, "its first", d, owner))
            .collect()
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.step;
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
        let ids: Vec<Option<String>> = successes.iter().map(|e| run.ctx().created_id(e)).collect();
        if let Some(why) = unread_id(run, step, &successes, &ids) {
            return Undecided(why);
        }
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
            .filter(|e| !e.is_success() && !refused(e, contract))
            .map(|e| e.describe())
            .collect();
        if !odd.is_empty() {
            return Broken(format!(
                "besides the successes, `{step}` got {}; expected only {}",
                odd.join(", "),
                describe_patterns(&[StatusPattern::InFlight], contract)
            ));
        }
        let (judged, _) = later_differences(self, run);
        if !judged.is_empty() {
            let texts: Vec<String> = judged.iter().map(ToString::to_string).collect();
            return Broken(format!(
                "the {} successes of `{step}` are not identical replays of the first ({}): {}",
                successes.len(),
                first.describe(),
                texts.join("; ")
            ));
        }
        let conflicts = rs.len() - successes.len();
        // Said only where the contract promises it (`in_flight_retry_after`).
        let retry_after = !contract.in_flight_retry_after
            || rs
                .iter()
                .filter(|e| !e.is_success())
                .all(|e| e.header("retry-after").is_some());
        let what = match &contract.in_flight_wait {
            Some(w) => format!(
                "in-flight conflicts or a wait that ran out ({})",
                w.describe()
            ),
            None => "in-flight conflicts".to_owned(),
        };
        Held(format!(
            "{} request(s) succeeded with one resource, {conflicts} got {what}{}",
            successes.len(),
            if conflicts > 0 && !retry_after {
                " (some without Retry-After)"
            } else {
                ""
            }
        ))
    }
}

/// Why one of `successes` (whose ids are `ids`) cannot be compared: it names no id and its body
/// was read in part or not at all, so its id may be past what idemspec read.
fn unread_id(
    run: &CheckRun,
    step: &str,
    successes: &[&Exchange],
    ids: &[Option<String>],
) -> Option<String> {
    let (e, _) = successes
        .iter()
        .zip(ids)
        .find(|(e, id)| id.is_none() && e.parse_note.is_some())?;
    Some(format!(
        "a request of `{step}` got {} with {}",
        e.describe(),
        run.ctx().missing_id(e)
    ))
}
