//! `conflict: {step, kind}`: the step was rejected with the contract's status for a mismatch or
//! for a request still in flight.

use idemspec_scenarios::profile::MismatchAnswer;
use idemspec_scenarios::scenario::{Conflict, ConflictKind, StatusPattern};

use super::compare::same_answer;

use super::{responses, unmatched, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::reading::{declared_5xx_note, describe_patterns};
use crate::runner::context::CheckRun;

impl Judge for Conflict {
    fn notes(&self, run: &CheckRun) -> Vec<String> {
        let pattern = match self.kind {
            ConflictKind::Mismatch => StatusPattern::Mismatch,
            ConflictKind::InFlight => StatusPattern::InFlight,
        };
        let Ok(rs) = responses(run, &self.step) else {
            return Vec::new();
        };
        let mut notes: Vec<String> = rs
            .iter()
            .filter_map(|e| e.status)
            .filter_map(|s| declared_5xx_note(&[pattern], s, run.contract()))
            .collect();
        notes.dedup();
        notes
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        if self.kind == ConflictKind::Mismatch
            && contract.mismatch_answer == MismatchAnswer::Original
        {
            return answered_with_original(self, run);
        }
        let (pattern, what, field, statuses) = match self.kind {
            ConflictKind::Mismatch => (
                StatusPattern::Mismatch,
                "a mismatch rejection",
                "mismatch_status",
                &contract.mismatch_status,
            ),
            ConflictKind::InFlight => (
                StatusPattern::InFlight,
                "an in-flight conflict",
                "in_flight_status",
                &contract.in_flight_status,
            ),
        };
        let rs = match responses(run, &self.step) {
            Ok(rs) => rs,
            Err(e) => return Undecided(e),
        };
        let bad = unmatched(&rs, &[pattern], contract);
        let want = describe_patterns(&[pattern], contract);
        if bad.is_empty() {
            let types: Vec<String> = rs.iter().map(|e| e.describe()).collect();
            Held(format!("`{}` got {what}: {}", self.step, types.join(", ")))
        } else {
            let shown: Vec<String> = statuses.iter().map(u16::to_string).collect();
            Broken(format!(
                "`{}` expected {what} ({want}) under {}, got {}",
                self.step,
                contract.who_says(field, &format!("[{}]", shown.join(", "))),
                bad.join(", ")
            ))
        }
    }
}

/// Under `mismatch_answer: original`: the mismatch step of `conflict` got the answer of the step
/// its `or_original` names (the same response, or the same long-running operation), as the
/// contract says.
fn answered_with_original(conflict: &Conflict, run: &CheckRun) -> Finding {
    let contract = run.contract();
    let who = contract.who_says("mismatch_answer", "original");
    let Some(original) = &conflict.or_original else {
        return Undecided(format!(
            "{who} says a reused key is answered with the original, but this assertion names \
                 no original step to compare with (`or_original`)"
        ));
    };
    let Some(first) = run.step(original).first_success() else {
        return Undecided(format!("step `{original}` got no 2xx to compare with"));
    };
    let rs = match responses(run, &conflict.step) {
        Ok(rs) => rs,
        Err(e) => return Undecided(e),
    };
    let other: Vec<String> = rs
        .iter()
        .filter(|r| !same_answer(run, r, first))
        .map(|r| r.describe())
        .collect();
    if other.is_empty() {
        Held(format!(
            "`{}` got `{original}`'s answer ({}), as {who} says of a reused key with another \
                 request",
            conflict.step,
            first.describe()
        ))
    } else {
        Broken(format!(
            "{who} says a reused key with another request gets the original's answer, but `{}` \
                 got {} instead of `{original}`'s {}",
            conflict.step,
            other.join(", "),
            first.describe()
        ))
    }
}
