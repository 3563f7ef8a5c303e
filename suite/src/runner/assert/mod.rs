//! The assertion vocabulary: one file per kind, each implementing [`Rule`] for its schema type
//! from `idemspec_scenarios::scenario`. A rule says what it needs observed besides the steps'
//! exchanges ([`Needs`]) and judges what the check saw, by the profile's declared contract (never
//! by one server's shape).
//!
//! Adding a kind: its schema type and entry in `scenarios/src/scenario/assertion.rs`, its file
//! here with `impl Rule`, its arm in [`rule`] (the match is exhaustive, so the compiler points
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

use std::time::Duration;

use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{AssertKind, Level, Scenario, StatusPattern, Within};

use super::check::CheckRun;
use crate::client::Exchange;
use crate::engine::{Finding, Judgement};

use Finding::{Broken, Held, Undecided};

/// One assertion kind's judge.
pub(crate) trait Rule {
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

/// What a check must observe behind the API for its assertions, merged over all of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Needs {
    /// Side-effect counters, read before the first step and after the last.
    pub counters: bool,
    /// Principals whose resources are counted after the steps (by the name the assertion used;
    /// `None`: A).
    pub counts: Vec<Option<String>>,
    /// Probe the list just before the first DELETE, for this principal's count after it (after a
    /// delete an empty list proves nothing about the profile's `list`).
    pub list_before_delete: Option<Option<String>>,
    /// Retried steps whose unanswered attempts get a twin (see `steps::twin_step`): the steps a
    /// `lock_released` judges.
    pub twins: Vec<String>,
}

impl Needs {
    fn merge(&mut self, other: Needs) {
        self.counters |= other.counters;
        for t in other.twins {
            if !self.twins.contains(&t) {
                self.twins.push(t);
            }
        }
        for p in other.counts {
            if !self.counts.contains(&p) {
                self.counts.push(p);
            }
        }
        if self.list_before_delete.is_none() {
            self.list_before_delete = other.list_before_delete;
        }
    }
}

impl<R: Rule + ?Sized> Rule for &R {
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
fn rule(kind: AssertKind<'_>) -> Box<dyn Rule + '_> {
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
        needs.merge(rule(a.value.kind()).needs());
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
        let rule = rule(a.kind());
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
        .filter(|e| {
            !e.status
                .is_some_and(|st| patterns.iter().any(|p| status_matches(*p, st, contract)))
        })
        .map(|e| e.describe())
        .collect()
}

/// Whether `status` matches `pattern` under `contract`.
pub(crate) fn status_matches(pattern: StatusPattern, status: u16, contract: &Contract) -> bool {
    match pattern {
        StatusPattern::Exact(code) => code == status,
        StatusPattern::Class(c) => status / 100 == u16::from(c),
        StatusPattern::Mismatch => contract.mismatch_status.contains(&status),
        StatusPattern::InFlight => contract.in_flight_status.contains(&status),
        StatusPattern::MissingKey => contract.missing_key_status.contains(&status),
        StatusPattern::Released => {
            !contract.in_flight_status.contains(&status) && !(500..600).contains(&status)
        }
    }
}

/// Whether `e` was refused as in flight under `contract` (a status in its `in_flight_status`).
pub(crate) fn refused(e: &crate::client::Exchange, contract: &Contract) -> bool {
    e.status
        .is_some_and(|s| status_matches(StatusPattern::InFlight, s, contract))
}

/// A [`Within`] as a duration under `contract`; `bound` stands in for an in-flight TTL the contract
/// does not declare (the run's lockout bound), so a lockout is still measured, up to it.
pub(crate) fn within(w: &Within, contract: &Contract, bound: Duration) -> Duration {
    let ttl = if w.plus_in_flight_ttl {
        contract.in_flight_ttl.unwrap_or(bound)
    } else {
        Duration::ZERO
    };
    ttl + w.extra
}

/// Where `status` met one of `patterns` only as a 5xx the contract declares for a refusal (its
/// `in_flight_status` or `mismatch_status`), a note saying so: the check accepts it, as the
/// contract says, but a 5xx tells a client the server failed, so it retries a request it should
/// stop or wait on (RFC 9110 §15.6). The note is shown whatever the verdict.
pub(crate) fn declared_5xx_note(
    patterns: &[StatusPattern],
    status: u16,
    contract: &Contract,
) -> Option<String> {
    if status < 500 {
        return None;
    }
    let (field, what) = if patterns.contains(&StatusPattern::InFlight)
        && contract.in_flight_status.contains(&status)
    {
        ("in_flight_status", "a request still in flight")
    } else if patterns.contains(&StatusPattern::Mismatch)
        && contract.mismatch_status.contains(&status)
    {
        ("mismatch_status", "a reused key with another request")
    } else {
        return None;
    };
    Some(format!(
        "the contract declares {status} for {what} (`contract.{field}`) and the API answered it: \
         accepted as declared, but a 5xx tells a client the server failed, so a client retries \
         what it should wait on or stop (RFC 9110 §15.6); a refusal is a 4xx"
    ))
}

/// Patterns as a reader sees them (`2xx, 409`).
pub(crate) fn describe_patterns(patterns: &[StatusPattern], contract: &Contract) -> String {
    let list = |v: &[u16]| v.iter().map(u16::to_string).collect::<Vec<_>>().join("/");
    patterns
        .iter()
        .map(|p| match p {
            StatusPattern::Exact(c) => c.to_string(),
            StatusPattern::Class(c) => format!("{c}xx"),
            StatusPattern::Mismatch => format!("mismatch ({})", list(&contract.mismatch_status)),
            StatusPattern::InFlight => format!("in flight ({})", list(&contract.in_flight_status)),
            StatusPattern::MissingKey => {
                format!("missing key ({})", list(&contract.missing_key_status))
            }
            StatusPattern::Released => {
                format!(
                    "released (not in flight {}, not 5xx)",
                    list(&contract.in_flight_status)
                )
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::profile::{ContractSpec, Preset};

    fn contract(preset: Preset) -> Contract {
        ContractSpec {
            preset,
            ..ContractSpec::default()
        }
        .resolve()
    }

    #[test]
    fn symbolic_statuses_follow_the_declared_contract() {
        let article = contract(Preset::Article);
        let ietf = contract(Preset::IetfDraft);
        assert!(status_matches(StatusPattern::Mismatch, 409, &article));
        assert!(!status_matches(StatusPattern::Mismatch, 409, &ietf));
        assert!(status_matches(StatusPattern::Mismatch, 422, &ietf));
        assert!(status_matches(StatusPattern::Class(2), 204, &ietf));
        assert!(!status_matches(StatusPattern::Class(2), 304, &ietf));
        assert_eq!(
            describe_patterns(&[StatusPattern::Class(2), StatusPattern::Mismatch], &ietf),
            "2xx, mismatch (422)"
        );
    }

    #[test]
    fn limits_relative_to_the_ttl_use_the_declared_ttl() {
        let mut c = contract(Preset::Article);
        c.in_flight_ttl = Some(Duration::from_secs(3));
        let w = Within {
            plus_in_flight_ttl: true,
            extra: Duration::from_secs(5),
        };
        assert_eq!(
            within(&w, &c, Duration::from_secs(60)),
            Duration::from_secs(8)
        );
        c.in_flight_ttl = None;
        assert_eq!(
            within(&w, &c, Duration::from_secs(60)),
            Duration::from_secs(65)
        );
    }
}
