//! `created: {principal, equals}` / `{principal, at_most}`: the resources carrying the check's
//! marker, counted with the profile's `list` after the steps, are exactly `equals` (or at most
//! `at_most`).

use idemspec_scenarios::scenario::Created;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::model::Claim;
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
        self.judge_claiming(run).0
    }

    fn judge_claiming(&self, run: &CheckRun) -> (Finding, Vec<Claim>) {
        let principal = match run.ctx().principal(self.principal.as_deref()) {
            Ok(p) => p,
            Err(e) => return (Undecided(e), Vec::new()),
        };
        if let Some(Err(e)) = &run.observed.list_before_delete {
            return (
                Undecided(format!("could not count resources: {e}")),
                Vec::new(),
            );
        }
        let count = match run.observed.counts.get(&self.principal) {
            Some(Ok(n)) => *n,
            Some(Err(e)) => {
                return (
                    Undecided(format!("could not count resources: {e}")),
                    Vec::new(),
                )
            }
            None => {
                return (
                    Undecided("the resources were not counted".into()),
                    Vec::new(),
                )
            }
        };
        let marker = run.marker();
        if let Some(most) = self.at_most {
            let finding = if count <= most {
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
            return (finding, Vec::new());
        }
        let equals = self.equals.unwrap_or_default();
        if count == equals {
            let held = Held(format!(
                "{count} resource(s) created for {}",
                principal.name
            ));
            return (held, Vec::new());
        }
        // Too few while a request's work may still be running (no answer, and the proxy did not
        // see the upstream answer it) is not a broken rule. Too many always is.
        let claim = if count < equals {
            still_running(run).or_else(|| merged(run, &principal.name, equals))
        } else {
            None
        };
        let finding = match &claim {
            Some(still @ Claim::StillRunning { .. }) => Undecided(format!(
                "{count} resources with marker {marker} exist for {}, fewer than {equals}, but \
                 {still}",
                principal.name
            )),
            Some(different @ Claim::DifferentKeysSucceeded { .. }) => Broken(format!(
                "{count} resources with marker {marker} exist for {} where {different}: \
                 requests with different keys were merged into one resource; expected exactly \
                 {equals}",
                principal.name
            )),
            _ => Broken(format!(
                "{count} resources with marker {marker} exist for {}; expected exactly {equals}",
                principal.name
            )),
        };
        (finding, claim.into_iter().collect())
    }
}

/// The first step whose work may still be running ([`Evidence::may_still_be_running`]).
///
/// [`Evidence::may_still_be_running`]: crate::model::Evidence::may_still_be_running
fn still_running(run: &CheckRun) -> Option<Claim> {
    run.exchanges()
        .iter()
        .find(|e| e.evidence.may_still_be_running())
        .map(|e| Claim::StillRunning {
            step: e.evidence.request.step.clone(),
        })
}

/// Where `principal`'s creates with at least `expected` different keys each succeeded, the claim
/// that they did: too few resources then means different keys were merged.
fn merged(run: &CheckRun, principal: &str, expected: u64) -> Option<Claim> {
    let keys = succeeded_keys(run, principal);
    (keys.len() as u64 >= expected && keys.len() >= 2).then(|| Claim::DifferentKeysSucceeded {
        principal: principal.to_owned(),
        keys,
    })
}

/// The different keys `principal`'s successful creates carried, each once, in send order.
fn succeeded_keys(run: &CheckRun, principal: &str) -> Vec<String> {
    let creates: Vec<String> = run
        .scenario
        .steps
        .iter()
        .filter(|s| s.value.op == Some(idemspec_scenarios::scenario::Operation::Create))
        .map(|s| s.value.name())
        .collect();
    let mut keys: Vec<String> = Vec::new();
    for e in run.exchanges().iter().filter(|e| e.is_success()) {
        let r = &e.evidence.request;
        if r.principal != principal || !creates.contains(&r.step) {
            continue;
        }
        if let Some(key) = &r.idempotency_key {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
    }
    keys
}
