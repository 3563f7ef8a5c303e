//! The assertion vocabulary: one file per kind, each implementing [`Judge`] for its schema type
//! from `idemspec_scenarios::scenario`. A rule says what it needs observed besides the steps'
//! exchanges ([`Needs`]) and judges what the check saw, by the profile's declared contract (never
//! by one server's shape).
//!
//! Adding a kind: its schema type and entry in `scenarios/src/scenario/assertion.rs`, its file
//! here with `impl Judge`, its arm in [`judge_of`] (the match is exhaustive, so the compiler points
//! there), its documentation in `docs/writing-scenarios.md`.

mod compare;
mod conflict;
mod consistent;
mod created;
mod distinct_ids;
mod distinct_problems;
mod effect_delta;
mod failure_handled;
mod fault_applied;
mod header;
mod lock_released;
mod no_5xx;
mod no_response;
mod not_replay_of;
mod overlapped;
mod same_response;
mod side_effects;
mod status;
mod succeeded_within;

pub(crate) use compare::same_response;

use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{AssertKind, Level, Scenario, StatusPattern};

use super::context::reading::answer_matches;
use super::context::{CheckRun, Needs};
use crate::engine::{Finding, Judgement};
use crate::http_client::Exchange;

use Finding::{Broken, Held, Undecided};

/// One assertion kind's judge.
pub(crate) trait Judge {
    /// What the check must observe for this rule besides the steps' exchanges.
    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// Judges what the check observed: held, broken, undecided (the run could not observe what the
    /// rule is about) or skipped.
    fn judge(&self, run: &CheckRun) -> Finding;

    /// The level this rule is judged at, when the contract decides it rather than the scenario
    /// (a lockout with no declared TTL is a SHOULD).
    fn level(&self, run: &CheckRun) -> Option<Level> {
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

    fn notes(&self, run: &CheckRun) -> Vec<String> {
        (**self).notes(run)
    }

    fn level(&self, run: &CheckRun) -> Option<Level> {
        (**self).level(run)
    }
}

/// The judge of an assertion kind. Kinds that share a schema shape (a step, a pair of steps, a
/// list of steps) are told apart by a wrapper named for the kind.
fn judge_of(kind: AssertKind<'_>) -> Box<dyn Judge + '_> {
    match kind {
        AssertKind::Status(a) => Box::new(a),
        AssertKind::SameResponse(a) => Box::new(a),
        AssertKind::NotReplayOf(a) => Box::new(not_replay_of::NotReplayOf(a)),
        AssertKind::DistinctIds(a) => Box::new(distinct_ids::DistinctIds(a)),
        AssertKind::Consistent(a) => Box::new(a),
        AssertKind::Created(a) => Box::new(a),
        AssertKind::Conflict(a) => Box::new(a),
        AssertKind::Header(a) => Box::new(a),
        AssertKind::DistinctProblems(a) => Box::new(distinct_problems::DistinctProblems(a)),
        AssertKind::SucceededWithin(a) => Box::new(a),
        AssertKind::EffectDelta(a) => Box::new(a),
        AssertKind::FailureHandled(a) => Box::new(a),
        AssertKind::FaultApplied(a) => Box::new(a),
        AssertKind::NoResponse(a) => Box::new(no_response::NoResponse(a)),
        AssertKind::No5xx(a) => Box::new(no_5xx::No5xx(a)),
        AssertKind::SideEffects(a) => Box::new(a),
        AssertKind::LockReleased(a) => Box::new(a),
        AssertKind::Overlapped(a) => Box::new(a),
    }
}

/// What `scenario`'s assertions need observed.
pub(crate) fn needs(scenario: &Scenario) -> Needs {
    let mut needs = Needs::default();
    for a in &scenario.assertions {
        needs.merge(judge_of(a.value.kind()).needs());
    }
    needs
}

/// Evaluates every assertion of the check, after its steps and observations.
pub(crate) fn evaluate(run: &CheckRun) -> Vec<Judgement> {
    let scenario = &run.scenario;
    let mut out = Vec::new();
    for a in scenario.assertions.iter().map(|a| &a.value) {
        let steps: Vec<&str> = a.steps();
        let problem = steps.iter().find_map(|s| {
            run.step(s)
                .meta
                .problem
                .as_ref()
                .map(|p| format!("step `{s}`: {p}"))
        });
        let rule = judge_of(a.kind());
        let (mut finding, notes) = match problem {
            Some(p) => (Undecided(p), Vec::new()),
            None => (rule.judge(run), rule.notes(run)),
        };
        // `fault_applied` is a precondition by nature: if the fault did not land as planned, the
        // situation the check is about never happened.
        let precondition = a.precondition || a.fault_applied.is_some() || a.judged_by.is_some();
        if precondition {
            if let Broken(m) = finding {
                finding = Undecided(match &a.judged_by {
                    Some(owner) => format!("precondition not met: {m} ({owner} judges that rule)"),
                    None => format!("precondition not met: {m}"),
                });
            }
        }
        if a.record {
            if let Held(m) | Broken(m) = finding {
                finding = Finding::Recorded(m);
            }
        }
        let mut judgement = Judgement::new(finding).on_steps(steps);
        judgement.precondition = precondition;
        judgement.pass_only = a.pass_only;
        judgement.notes = notes;
        if let Some(level) = rule.level(run).or(a.level) {
            judgement = judgement.at(level);
        }
        if let Some(reference) = &a.reference {
            judgement.reference = Some(reference.clone());
        }
        out.push(judgement);
    }
    // A step that could not be carried out (a hook that failed, nothing to act on) leaves the check
    // unable to claim what it set out to observe, even if no assertion names that step.
    for step in scenario.steps.iter().map(|s| s.value.name()) {
        if let Some(p) = &run.step(&step).meta.problem {
            let finding = Undecided(format!("step `{step}`: {p}"));
            if !out.iter().any(|j| j.finding == finding) {
                out.push(Judgement::new(finding).on_steps([step]));
            }
        }
    }
    out
}

/// The responses of a step that assertions judge, or why there are none to judge.
pub(super) fn responses<'a>(run: &'a CheckRun, step: &str) -> Result<Vec<&'a Exchange>, String> {
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

/// The responses among `rs` whose status is in none of `patterns`, described for a message.
pub(super) fn unmatched(
    rs: &[&Exchange],
    patterns: &[StatusPattern],
    contract: &Contract,
) -> Vec<String> {
    rs.iter()
        .filter(|e| !patterns.iter().any(|p| answer_matches(*p, e, contract)))
        .map(|e| e.describe())
        .collect()
}
