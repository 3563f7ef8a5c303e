//! `header: {step, name, when}`: every judged response of the step whose status is in `when`
//! (default 2xx) carries the header; `name: replayed` means the contract's replay header, which
//! counts only with a value other than `false` or `0` ([`Exchange::marks_replay`]).

use idemspec_scenarios::scenario::{HeaderPresent, StatusPattern};

use super::{answered, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::reading::{answer_matches, describe_patterns};
use crate::runner::context::CheckRun;

impl Judge for HeaderPresent {
    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        let replayed = self.name == "replayed";
        let name = if replayed {
            contract.replayed_header.as_str()
        } else {
            self.name.as_str()
        };
        if replayed && name.is_empty() {
            return Finding::Recorded(format!(
                "{} marks no replay with a header (`replayed_header: \"\"`), so none is looked for",
                contract.who_says("replayed_header", "\"\"")
            ));
        }
        // The replay header marks a replay only with a value that does not deny it.
        let carries = |e: &Exchange| match replayed {
            true => e.marks_replay(name),
            false => e.has_header(name),
        };
        let when = self
            .when
            .clone()
            .unwrap_or_else(|| vec![StatusPattern::Class(2)]);
        let view = run.step(&self.step);
        let concerned: Vec<&Exchange> = view
            .judged()
            .iter()
            .copied()
            .filter(|e| when.iter().any(|p| answer_matches(*p, e, contract)))
            .collect();
        let want = describe_patterns(&when, contract);
        if concerned.is_empty() {
            if self.when.is_none() {
                return Undecided(format!(
                    "step `{}` got no 2xx to look for `{name}` on",
                    self.step
                ));
            }
            return Held(format!(
                "`{}` got no {want} response to look for `{name}` on",
                self.step
            ));
        }
        match concerned.iter().find(|e| !carries(e)) {
            Some(e) => Broken(match e.header(name) {
                Some(value) => format!(
                    "`{}` answered {} with `{name}: {value}`",
                    self.step,
                    e.describe()
                ),
                None => format!("`{}` answered {} without `{name}`", self.step, e.describe()),
            }),
            // What it carried the header on, as answered (not the patterns: a first answer is
            // no "replay under 409" because the contract would accept one).
            None => Held(format!(
                "`{}` carried `{name}` on {}",
                self.step,
                answered(&concerned)
            )),
        }
    }
}
