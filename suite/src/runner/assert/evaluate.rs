//! Each assertion of a check judged by its kind's [`Judge`], graded as the scenario says
//! (precondition, recorded, level, reference).

use idemspec_scenarios::scenario::{AssertKind, Assertion, Scenario};

use super::{
    distinct_ids, distinct_problems, no_5xx, no_response, not_replay_of, wait_bounded, Judge,
};
use crate::engine::{Finding, Judgement};
use crate::runner::context::{CheckRun, Needs};

use Finding::{Broken, Held, Undecided};

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
        AssertKind::WaitBounded(a) => Box::new(wait_bounded::WaitBounded(a)),
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

/// Evaluates every assertion of the check, after its steps and observations. An assertion of
/// another retention case is left out; one whose rule the contract does not promise
/// (`if_contract`) is recorded as not looked for.
pub(crate) fn evaluate(run: &CheckRun) -> Vec<Judgement> {
    let scenario = &run.scenario;
    let contract = run.contract();
    let mut out = Vec::new();
    let retention = contract.retention;
    // A kind that judges only what the contract declares (a wait) is not judged without it.
    let applies = |a: &&Assertion| {
        a.if_retention.is_none_or(|case| case.holds(retention)) && judge_of(a.kind()).applies(run)
    };
    for a in scenario.assertions.iter().map(|a| &a.value).filter(applies) {
        let steps: Vec<&str> = a.steps();
        if let Some(unpromised) = a.if_contract.and_then(|p| contract.unpromised(p)) {
            out.push(Judgement::new(Finding::Recorded(unpromised)).on_steps(steps));
            continue;
        }
        let problem = steps.iter().find_map(|s| {
            run.step(s)
                .meta
                .problem
                .as_ref()
                .map(|p| format!("step `{s}`: {p}"))
        });
        let rule = judge_of(a.kind());
        let ((finding, claims), notes) = match problem {
            Some(p) => ((Undecided(p), Vec::new()), Vec::new()),
            None => (rule.judge_claiming(run), rule.notes(run)),
        };
        let mut judgement = graded(a, finding, run).on_steps(steps);
        judgement.notes = notes;
        judgement.claims = claims;
        if let Some(level) = rule.level(run).or(a.level) {
            judgement = judgement.at(level);
        }
        if let Some(reference) = a.reference.clone().or_else(|| rule.reference(run)) {
            judgement.reference = Some(reference);
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

/// `finding` as the assertion `a` grades it: a precondition's broken finding undecided (naming
/// the check that owns the rule, where another does), a recorded one recorded, with the
/// assertion's own source, or the profile's field where the profile promises the rule.
fn graded(a: &Assertion, mut finding: Finding, run: &CheckRun) -> Judgement {
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
    let mut judgement = Judgement::new(finding);
    judgement.precondition = precondition;
    judgement.pass_only = a.pass_only;
    let by_profile = a
        .if_contract
        .and_then(|p| run.contract().promised_by_profile(p));
    judgement.reference = by_profile.or_else(|| a.reference.clone());
    judgement
}
