//! `conflict: {step, kind}`: the step was rejected with the contract's status for a mismatch or
//! for a request still in flight.

use idemspec_scenarios::scenario::{Conflict, ConflictKind, StatusPattern};

use super::{describe_patterns, responses, unmatched, Rule};
use crate::runner::check::CheckRun;
use crate::runner::verdict::Finding::{self, Broken, Held, Undecided};

impl Rule for Conflict {
    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        let (pattern, what) = match self.kind {
            ConflictKind::Mismatch => (StatusPattern::Mismatch, "a mismatch rejection"),
            ConflictKind::InFlight => (StatusPattern::InFlight, "an in-flight conflict"),
        };
        let rs = match responses(run, &self.step) {
            Ok(rs) => rs,
            Err(e) => return Undecided(e),
        };
        let bad = unmatched(&rs, &[pattern], contract);
        let want = describe_patterns(&[pattern], contract);
        if bad.is_empty() {
            let types: Vec<String> = rs.iter().map(|e| e.describe()).collect();
            Held(format!("`{}` got {what}: {}", self.step, types.join(", ")))
        } else {
            Broken(format!(
                "`{}` expected {what} ({want}) under the {} contract, got {}",
                self.step,
                contract.preset.name(),
                bad.join(", ")
            ))
        }
    }
}
