//! `side_effects: {equals}`: every side-effect counter behind the API (the profile's
//! `side_effects` probe) grew by exactly `equals` over the check.

use idemspec_scenarios::scenario::SideEffects;

use super::{Needs, Rule};
use crate::runner::check::CheckRun;
use crate::runner::observe::Counters;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

impl Rule for SideEffects {
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
        let mut broken = Vec::new();
        let mut seen = Vec::new();
        for (name, b) in before {
            let a = after.get(name).copied().unwrap_or(*b);
            seen.push(format!("{name} +{}", a - b));
            if a - b != self.equals {
                broken.push(format!("{name} grew by {} (from {b} to {a})", a - b));
            }
        }
        if broken.is_empty() {
            Held(format!("side effects: {}", seen.join(", ")))
        } else {
            Broken(format!(
                "side effects leaked: {}; expected each to grow by exactly {}",
                broken.join(", "),
                self.equals
            ))
        }
    }
}
