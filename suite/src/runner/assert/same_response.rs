//! `same_response: {step, as, fidelity_judged_by}`: every judged response of the step is a
//! faithful replay of the other step's first response: status class and body bytes, and (unless
//! another check owns replay fidelity) the status code, Location and Content-Type.

use idemspec_scenarios::scenario::SameResponse;

use super::compare::{
    error_again_words, not_stored_note, owned_elsewhere, replay_differences, same_error_again,
    split_fidelity, Difference,
};
use super::{responses, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;

/// Every difference of the step's responses from the original, once each, split into those this
/// check judges and those `fidelity_judged_by` owns.
fn split(a: &SameResponse, run: &CheckRun) -> Result<(Vec<Difference>, Vec<Difference>), String> {
    let Some(original) = run.step(&a.other).first_response() else {
        return Err(format!(
            "step `{}` got no response to compare with",
            a.other
        ));
    };
    let mut all: Vec<Difference> = Vec::new();
    for r in responses(run, &a.step)? {
        for d in replay_differences(run, r, original) {
            if !all.contains(&d) {
                all.push(d);
            }
        }
    }
    Ok(split_fidelity(all, a.fidelity_judged_by.as_deref()))
}

/// Where every response of the step is the original's error again without a replay marker, the
/// words that say so instead of "replayed".
fn error_again(a: &SameResponse, run: &CheckRun) -> Option<String> {
    let original = run.step(&a.other).first_response()?;
    let rs = responses(run, &a.step).ok()?;
    rs.iter()
        .all(|r| same_error_again(run, r, original))
        .then(|| error_again_words(run, &a.step, &a.other, original))
}

impl Judge for SameResponse {
    fn judge(&self, run: &CheckRun) -> Finding {
        let (step, other) = (&self.step, &self.other);
        let (judged, elsewhere) = match split(self, run) {
            Ok(split) => split,
            Err(e) => return Undecided(e),
        };
        if judged.is_empty() && !elsewhere.is_empty() {
            let owner = self.fidelity_judged_by.as_deref().unwrap_or_default();
            Held(format!(
                "`{step}` replayed `{other}`, apart from what {owner} judges (in the notes)"
            ))
        } else if judged.is_empty() {
            match error_again(self, run) {
                Some(words) => Held(words),
                None => Held(format!("`{step}` replayed `{other}` faithfully")),
            }
        } else {
            let texts: Vec<String> = judged.iter().map(ToString::to_string).collect();
            let note = run
                .step(other)
                .first_response()
                .and_then(|original| not_stored_note(run, original, &[]))
                .unwrap_or_default();
            Broken(format!(
                "`{step}` is not the same response as `{other}`: {}{note}",
                texts.join("; ")
            ))
        }
    }

    fn notes(&self, run: &CheckRun) -> Vec<String> {
        let (Ok((_, elsewhere)), Some(owner)) = (split(self, run), &self.fidelity_judged_by) else {
            return Vec::new();
        };
        elsewhere
            .iter()
            .map(|d| owned_elsewhere(&self.step, &self.other, d, owner))
            .collect()
    }
}
