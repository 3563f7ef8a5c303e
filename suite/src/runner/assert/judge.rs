//! What every assertion kind implements ([`Judge`]), and the readings of a step's responses the
//! kinds share.

use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{Level, StatusPattern};

use crate::engine::Finding;
use crate::http_client::Exchange;
use crate::model::Claim;
use crate::runner::context::reading::answer_matches;
use crate::runner::context::{CheckRun, Needs};

/// One assertion kind's judge.
pub(crate) trait Judge {
    /// What the check must observe for this rule besides the steps' exchanges.
    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// Judges what the check observed: held, broken, undecided (the run could not observe what the
    /// rule is about) or skipped.
    fn judge(&self, run: &CheckRun) -> Finding;

    /// Whether the rule applies under the check's contract at all (a rule about a declared wait
    /// does not where none is declared); one that does not is left out, as if not written.
    fn applies(&self, run: &CheckRun) -> bool {
        let _ = run;
        true
    }

    /// [`Judge::judge`]'s finding with the claims its sentence states about the exchanges
    /// ([`Claim`]), which the audit holds to them. A kind whose sentence states such a fact
    /// overrides this (and its `judge` returns this finding); the default states none.
    fn judge_claiming(&self, run: &CheckRun) -> (Finding, Vec<Claim>) {
        (self.judge(run), Vec::new())
    }

    /// The level this rule is judged at, when the contract decides it rather than the scenario
    /// (a lockout with no declared TTL is a SHOULD).
    fn level(&self, run: &CheckRun) -> Option<Level> {
        let _ = run;
        None
    }

    /// The source of the rule as this run's contract decides it, where the scenario's reference
    /// lists several and only one applies (a 5xx re-run or replayed).
    fn reference(&self, run: &CheckRun) -> Option<String> {
        let _ = run;
        None
    }

    /// What the rule saw on the way that another check owns, one sentence each naming that
    /// check: shown with the outcome whatever the verdict, never graded here.
    fn notes(&self, run: &CheckRun) -> Vec<String> {
        let _ = run;
        Vec::new()
    }
}

impl<R: Judge + ?Sized> Judge for &R {
    fn needs(&self) -> Needs {
        (**self).needs()
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        (**self).judge(run)
    }

    fn judge_claiming(&self, run: &CheckRun) -> (Finding, Vec<Claim>) {
        (**self).judge_claiming(run)
    }

    fn notes(&self, run: &CheckRun) -> Vec<String> {
        (**self).notes(run)
    }

    fn level(&self, run: &CheckRun) -> Option<Level> {
        (**self).level(run)
    }

    fn applies(&self, run: &CheckRun) -> bool {
        (**self).applies(run)
    }

    fn reference(&self, run: &CheckRun) -> Option<String> {
        (**self).reference(run)
    }
}

/// The responses of a step that assertions judge, or why there are none to judge.
pub(crate) fn responses<'a>(run: &'a CheckRun, step: &str) -> Result<Vec<&'a Exchange>, String> {
    let judged = run.step(step).judged().to_vec();
    if judged.is_empty() {
        return Err(format!("step `{step}` sent no request"));
    }
    if let Some(lost) = judged.iter().find(|e| e.status.is_none()) {
        return Err(format!(
            "step `{step}` got no response: {}",
            lost.describe()
        ));
    }
    Ok(judged)
}

/// How `rs` were answered, each distinct answer once in first-seen order (`201, 200 (a replay, as
/// declared)`): what a sentence says they got, rather than the patterns they met.
pub(crate) fn answered(rs: &[&Exchange]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for d in rs.iter().map(|e| e.describe()) {
        if !seen.contains(&d) {
            seen.push(d);
        }
    }
    seen.join(", ")
}

/// The responses among `rs` whose status is in none of `patterns`, described for a message.
pub(crate) fn unmatched(
    rs: &[&Exchange],
    patterns: &[StatusPattern],
    contract: &Contract,
) -> Vec<String> {
    rs.iter()
        .filter(|e| !patterns.iter().any(|p| answer_matches(*p, e, contract)))
        .map(|e| e.describe())
        .collect()
}
