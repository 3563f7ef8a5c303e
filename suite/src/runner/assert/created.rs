//! `created: {principal, equals}` / `{principal, at_most}`: the resources carrying the check's
//! marker, counted with the profile's `list` after the steps, are exactly `equals` (or at most
//! `at_most`).

use idemspec_scenarios::scenario::Created;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;
use crate::runner::context::Needs;

impl Judge for Created {
    fn needs(&self) -> Needs {
        Needs {
            counts: vec![self.principal.clone()],
            list_before_delete: Some(self.principal.clone()),
            ..Needs::default()
        }
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        let principal = match run.ctx().principal(self.principal.as_deref()) {
            Ok(p) => p,
            Err(e) => return Undecided(e),
        };
        if let Some(Err(e)) = &run.observed.list_before_delete {
            return Undecided(format!("could not count resources: {e}"));
        }
        let count = match run.observed.counts.get(&self.principal) {
            Some(Ok(n)) => *n,
            Some(Err(e)) => return Undecided(format!("could not count resources: {e}")),
            None => return Undecided("the resources were not counted".into()),
        };
        let marker = run.marker();
        // Too few while a request is still unanswered (a timeout, a closed connection) is not a
        // broken rule: that request's work may still be running. Too many always is.
        let unanswered = run
            .exchanges()
            .iter()
            .find(|e| e.status.is_none())
            .map(|e| e.evidence.request.step.clone());
        if let Some(most) = self.at_most {
            return if count <= most {
                Held(format!(
                    "{count} resource(s) created for {}, at most {most}",
                    principal.name
                ))
            } else {
                Broken(format!(
                    "{count} resources with marker {marker} exist for {}; expected at most {most}",
                    principal.name
                ))
            };
        }
        let equals = self.equals.unwrap_or_default();
        match (count, unanswered) {
            (n, _) if n == equals => {
                Held(format!("{n} resource(s) created for {}", principal.name))
            }
            (n, Some(step)) if n < equals => Undecided(format!(
                "{n} resources with marker {marker} exist for {}, fewer than {equals}, but step \
                 `{step}` got no response, so its work may still be running",
                principal.name
            )),
            (n, _) if n < equals && merged_keys(run, &principal.name) >= equals => Broken(format!(
                "{n} resources with marker {marker} exist for {} where {equals} creates with \
                     different keys each succeeded: requests with different keys were merged \
                     into one resource; expected exactly {equals}",
                principal.name
            )),
            (n, _) => Broken(format!(
                "{n} resources with marker {marker} exist for {}; expected exactly {equals}",
                principal.name
            )),
        }
    }
}

/// How many different keys `principal`'s successful creates carried: where there are as many as
/// the resources expected, too few resources means different keys were merged.
fn merged_keys(run: &CheckRun, principal: &str) -> u64 {
    let creates: Vec<String> = run
        .scenario
        .steps
        .iter()
        .filter(|s| s.value.op == Some(idemspec_scenarios::scenario::Operation::Create))
        .map(|s| s.value.name())
        .collect();
    let keys: std::collections::BTreeSet<&str> = run
        .exchanges()
        .iter()
        .filter(|e| e.is_success())
        .filter(|e| {
            let r = &e.evidence.request;
            r.principal == principal && creates.contains(&r.step)
        })
        .filter_map(|e| e.evidence.request.idempotency_key.as_deref())
        .collect();
    keys.len() as u64
}
