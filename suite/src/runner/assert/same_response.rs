//! `same_response: {step, as, headers_judged_by}`: every judged response of the step is a faithful
//! replay of the other step's first response: status, body bytes, and (unless another check owns
//! them) Location and Content-Type.

use idemspec_scenarios::scenario::SameResponse;

use super::compare::{Difference, Part};
use super::{differences, responses, Rule};
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

/// Every difference of the step's responses from the original, once each, split into those this
/// check judges and those `headers_judged_by` owns.
fn split(a: &SameResponse, run: &CheckRun) -> Result<(Vec<Difference>, Vec<Difference>), String> {
    let Some(original) = run.step(&a.other).first_response() else {
        return Err(format!(
            "step `{}` got no response to compare with",
            a.other
        ));
    };
    let mut all: Vec<Difference> = Vec::new();
    for r in responses(run, &a.step)? {
        for d in differences(r, original) {
            if !all.contains(&d) {
                all.push(d);
            }
        }
    }
    Ok(all
        .into_iter()
        .partition(|d| d.part != Part::Header || a.headers_judged_by.is_none()))
}

impl Rule for SameResponse {
    fn judge(&self, run: &CheckRun) -> Finding {
        let (step, other) = (&self.step, &self.other);
        let judged = match split(self, run) {
            Ok((judged, _)) => judged,
            Err(e) => return Undecided(e),
        };
        if judged.is_empty() {
            Held(format!("`{step}` replayed `{other}` faithfully"))
        } else {
            let texts: Vec<String> = judged.iter().map(ToString::to_string).collect();
            Broken(format!(
                "`{step}` is not the same response as `{other}`: {}",
                texts.join("; ")
            ))
        }
    }

    fn notes(&self, run: &CheckRun) -> Vec<String> {
        let (Ok((_, owned_elsewhere)), Some(owner)) = (split(self, run), &self.headers_judged_by)
        else {
            return Vec::new();
        };
        owned_elsewhere
            .iter()
            .map(|d| {
                format!(
                    "`{}` differs from `{}`: {d} (not judged here: {owner} judges replayed headers)",
                    self.step, self.other
                )
            })
            .collect()
    }
}
