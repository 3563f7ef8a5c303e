//! `side_effects: {equals}`: every side-effect counter behind the API (the profile's
//! `side_effects` probe) grew by exactly `equals` over the check.

use idemspec_scenarios::scenario::SideEffects;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::model::Claim;
use crate::runner::context::CheckRun;
use crate::runner::context::Needs;
use crate::runner::observe::Counters;
use Counted::{Fewer, Judged};

impl Judge for SideEffects {
    fn needs(&self) -> Needs {
        Needs {
            counters: true,
            ..Needs::default()
        }
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        self.judge_claiming(run).0
    }

    fn judge_claiming(&self, run: &CheckRun) -> (Finding, Vec<Claim>) {
        let successes = run.exchanges().iter().filter(|e| e.is_success()).count();
        match (counted(self, run), successes) {
            (Fewer(missing), 0) => (
                Undecided(format!(
                    "the side-effect counters grew less than by {} ({missing}), but no request \
                     of the check got a 2xx, so it made nothing to count",
                    self.equals
                )),
                Vec::new(),
            ),
            (Fewer(missing), successes) => {
                let claim = Claim::Succeeded { successes };
                let finding = Broken(format!(
                    "fewer side effects than the check made: {missing} where {claim}; expected \
                     each counter to grow by exactly {} (a counter that did not move counts no \
                     resource held, or the probe reads something other than what the check \
                     creates)",
                    self.equals
                ));
                (finding, vec![claim])
            }
            (Judged(finding), _) => (finding, Vec::new()),
        }
    }
}

/// What the counters showed: a finding, or too few side effects (the counters that grew less),
/// which is judged against what the check's requests did.
enum Counted {
    Judged(Finding),
    Fewer(String),
}

/// What the counters showed against `rule`'s expected growth.
fn counted(rule: &SideEffects, run: &CheckRun) -> Counted {
    fn read<'a>(
        c: &'a Option<Result<Counters, String>>,
        when: &str,
    ) -> Result<&'a Counters, String> {
        match c {
            Some(Ok(c)) => Ok(c),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!(
                "side-effect counters were not read {when} the steps"
            )),
        }
    }
    let before = match read(&run.observed.counters_before, "before") {
        Ok(b) => b,
        Err(e) => return Judged(Undecided(e)),
    };
    let after = match read(&run.observed.counters_after, "after") {
        Ok(a) => a,
        Err(e) => return Judged(Undecided(e)),
    };
    // More than expected is a leak; fewer is a side effect missing (or undone), which is
    // no leak and is not called one.
    let (mut leaked, mut missing, mut seen) = (Vec::new(), Vec::new(), Vec::new());
    for (name, b) in before {
        let a = after.get(name).copied().unwrap_or(*b);
        let grew = a - b;
        seen.push(format!("{name} +{grew}"));
        let line = format!("{name} grew by {grew} (from {b} to {a})");
        if grew > rule.equals {
            leaked.push(line);
        } else if grew < rule.equals {
            missing.push(line);
        }
    }
    let expected = rule.equals;
    match (leaked.is_empty(), missing.is_empty()) {
        (true, true) => Judged(Held(format!("side effects: {}", seen.join(", ")))),
        (false, _) => Judged(Broken(format!(
            "side effects leaked: {}; expected each to grow by exactly {expected}{}",
            leaked.join(", "),
            if missing.is_empty() {
                String::new()
            } else {
                format!(" (and fewer than that: {})", missing.join(", "))
            }
        ))),
        (true, false) => Fewer(missing.join(", ")),
    }
}
