//! `distinct_ids: {steps}`: the steps' creates returned different resources.

use idemspec_scenarios::scenario::StepList;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;

/// The `distinct_ids` kind.
pub(super) struct DistinctIds<'a>(pub &'a StepList);

impl Judge for DistinctIds<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let mut ids = Vec::new();
        for s in &self.0.steps {
            let Some(success) = run.step(s).first_success() else {
                return Undecided(format!("step `{s}` returned no id: it got no 2xx"));
            };
            match run.ctx().created_id(success) {
                Some(id) => ids.push((s, id)),
                None => {
                    let missing = run.ctx().missing_id(success);
                    return Undecided(format!("step `{s}` returned {missing}"));
                }
            }
        }
        for (i, (s, id)) in ids.iter().enumerate() {
            if let Some((t, _)) = ids[..i].iter().find(|(_, other)| other == id) {
                return Broken(format!("`{t}` and `{s}` got the same resource `{id}`"));
            }
        }
        Held(format!("{} distinct ids", ids.len()))
    }
}
