//! `fault_applied: {step, upstream}`: a precondition on what the proxy did to a step — the server
//! did the work and the client never heard (`worked`), or the request never reached the server
//! (`not_reached`). When it does not hold, the situation the check is about never happened.

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::scenario::{FaultApplied, UpstreamOutcome};

use super::Rule;
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Held, Undecided};

impl Rule for FaultApplied {
    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.step;
        let mine: Vec<&ProxyEvent> = run
            .events()
            .iter()
            .filter(|e| e.step.as_deref() == Some(step.as_str()))
            .collect();
        if mine.is_empty() {
            return Undecided(format!("the proxy saw no request of step `{step}`"));
        }
        let faulted = || mine.iter().filter(|e| e.fault.is_some());
        let ok = match self.upstream {
            UpstreamOutcome::Worked => faulted().any(|e| {
                e.upstream_status.is_some_and(|s| (200..300).contains(&s)) && !e.client_complete
            }),
            UpstreamOutcome::NotReached => faulted().any(|e| e.upstream_sends == 0),
        };
        let seen: Vec<String> = mine
            .iter()
            .map(|e| {
                format!(
                    "{} upstream {}",
                    e.fault.as_deref().unwrap_or("passed through"),
                    e.upstream_status.map_or("-".into(), |s| s.to_string())
                )
            })
            .collect();
        match (ok, self.upstream) {
            (true, UpstreamOutcome::Worked) => Held(format!(
                "the server did `{step}`'s work and the response was lost"
            )),
            (true, UpstreamOutcome::NotReached) => {
                Held(format!("`{step}` never reached the server"))
            }
            (false, _) => Undecided(format!(
                "the fault on `{step}` did not happen as planned: {}",
                seen.join(", ")
            )),
        }
    }
}
