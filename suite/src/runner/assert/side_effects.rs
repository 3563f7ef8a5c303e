//! `side_effects: {equals}`: every side-effect counter behind the API (the profile's
//! `side_effects` probe) grew by exactly `equals` over the check.

use idemspec_scenarios::scenario::SideEffects;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::runner::context::CheckRun;
use crate::runner::context::Needs;
use crate::runner::observe::Counters;

impl Judge for SideEffects {
    fn needs(&self) -> Needs {
        Needs {
            counters: true,
            ..Needs::default()
        }
    }

    fn judge(&self, run: &CheckRun) -> Finding {
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
            Err(e) => return Undecided(e),
        };
        let after = match read(&run.observed.counters_after, "after") {
            Ok(a) => a,
            Err(e) => return Undecided(e),
        };
        // More than expected is a leak; fewer is a side effect missing (or undone), which is
        // no leak and is not called one.
        let (mut leaked, mut missing, mut seen) = (Vec::new(), Vec::new(), Vec::new());
        for (name, b) in before {
            let a = after.get(name).copied().unwrap_or(*b);
            let grew = a - b;
            seen.push(format!("{name} +{grew}"));
            let line = format!("{name} grew by {grew} (from {b} to {a})");
            if grew > self.equals {
                leaked.push(line);
            } else if grew < self.equals {
                missing.push(line);
            }
        }
        let expected = self.equals;
        match (leaked.is_empty(), missing.is_empty()) {
            (true, true) => Held(format!("side effects: {}", seen.join(", "))),
            (false, _) => Broken(format!(
                "side effects leaked: {}; expected each to grow by exactly {expected}{}",
                leaked.join(", "),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(" (and fewer than that: {})", missing.join(", "))
                }
            )),
            (true, false) => Broken(format!(
                "fewer side effects than the check made: {}; expected each to grow by exactly \
                 {expected} (a counter that did not move counts no resource held, or the probe \
                 reads something other than what the check creates)",
                missing.join(", ")
            )),
        }
    }
}
