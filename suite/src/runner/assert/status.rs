//! `status: {step, in: [...]}`: every judged response of the step has a status in the set.

use idemspec_scenarios::scenario::StatusSet;

use super::compare::not_stored_note;
use super::{answered, responses, unmatched, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::reading::{declared_5xx_note, describe_patterns};
use crate::runner::context::CheckRun;

impl Judge for StatusSet {
    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        let rs = match responses(run, &self.step) {
            Ok(rs) => rs,
            Err(e) => return Undecided(e),
        };
        let bad = unmatched(&rs, &self.allowed, contract);
        let want = describe_patterns(&self.allowed, contract);
        if bad.is_empty() {
            Held(format!("`{}` answered {}", self.step, answered(&rs)))
        } else {
            // A retry of a key whose first answer the contract does not store runs again: say so.
            let note = run
                .key_sent_before(&self.step)
                .and_then(|original| not_stored_note(run, original, &rs))
                .unwrap_or_default();
            Broken(format!(
                "`{}` answered {}; expected {want}{note}",
                self.step,
                bad.join(", ")
            ))
        }
    }

    fn notes(&self, run: &CheckRun) -> Vec<String> {
        let Ok(rs) = responses(run, &self.step) else {
            return Vec::new();
        };
        let mut notes: Vec<String> = rs
            .iter()
            .filter_map(|e| e.status)
            .filter_map(|s| declared_5xx_note(&self.allowed, s, run.contract()))
            .collect();
        notes.dedup();
        notes
    }
}
