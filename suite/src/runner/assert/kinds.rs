//! One function per assertion kind. Each returns a [`Finding`]: held, broken, undecided (the run
//! could not observe what the assertion is about) or skipped.

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::scenario::{AssertKind, Assertion, ConflictKind, Scenario, StatusPattern};

use super::conflicts::{consistent, distinct_problems, header_present};
use super::effects::{failure_handled, fault_applied, side_effects};
use super::{describe_patterns, differences, same_response, status_matches, within};
use crate::client::Exchange;
use crate::runner::context::{CheckState, Env};
use crate::runner::observe;
use crate::runner::verdict::{Finding, Judgement};

use Finding::{Broken, Held, Undecided};

/// Evaluates every assertion of `scenario`.
pub(crate) async fn evaluate(
    env: &Env,
    scenario: &Scenario,
    state: &CheckState,
    events: &[ProxyEvent],
) -> Vec<Judgement> {
    let mut out = Vec::new();
    for a in scenario.assertions.iter().map(|a| &a.value) {
        let steps: Vec<String> = a.steps().into_iter().map(str::to_owned).collect();
        let problem = steps.iter().find_map(|s| {
            state
                .result(s)
                .problem
                .clone()
                .map(|p| format!("step `{s}`: {p}"))
        });
        let mut finding = match problem {
            Some(p) => Undecided(p),
            None => judge(env, a, state, events).await,
        };
        // `fault_applied` is a precondition by nature: if the fault did not land as planned, the
        // situation the check is about never happened.
        let precondition = a.precondition || a.fault_applied.is_some();
        if precondition {
            if let Broken(m) = finding {
                finding = Undecided(format!("precondition not met: {m}"));
            }
        }
        if a.record {
            if let Held(m) | Broken(m) = finding {
                finding = Finding::Recorded(m);
            }
        }
        out.push(Judgement {
            finding,
            level: a.level.unwrap_or(scenario.level),
            reference: a
                .reference
                .clone()
                .unwrap_or_else(|| scenario.reference.clone()),
            steps,
            precondition,
        });
    }
    // A step that could not be carried out (a hook that failed, nothing to act on) leaves the check
    // unable to claim what it set out to observe, even if no assertion names that step.
    for step in scenario.steps.iter().map(|s| s.value.name()) {
        if let Some(p) = &state.result(&step).problem {
            let message = format!("step `{step}`: {p}");
            if !out.iter().any(|j| j.finding == Undecided(message.clone())) {
                out.push(Judgement {
                    finding: Undecided(message),
                    level: scenario.level,
                    reference: scenario.reference.clone(),
                    steps: vec![step],
                    precondition: false,
                });
            }
        }
    }
    out
}

/// The first step with a request that got no response at all.
fn unanswered(state: &CheckState) -> Option<String> {
    state
        .results
        .iter()
        .find(|(_, r)| r.exchanges.iter().any(|e| e.status.is_none()))
        .map(|(name, _)| name.clone())
}

/// The responses of a step, or why there are none to judge.
pub(super) fn responses<'a>(state: &'a CheckState, step: &str) -> Result<&'a [Exchange], String> {
    let judged = state.result(step).judged();
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

async fn judge(env: &Env, a: &Assertion, state: &CheckState, events: &[ProxyEvent]) -> Finding {
    let contract = &env.contract;
    match a.kind() {
        AssertKind::Status(s) => match responses(state, &s.step) {
            Err(e) => Undecided(e),
            Ok(rs) => {
                let bad: Vec<String> = rs
                    .iter()
                    .filter(|e| {
                        !e.status.is_some_and(|st| {
                            s.allowed.iter().any(|p| status_matches(*p, st, contract))
                        })
                    })
                    .map(Exchange::describe)
                    .collect();
                let want = describe_patterns(&s.allowed, contract);
                if bad.is_empty() {
                    Held(format!("`{}` answered {want}", s.step))
                } else {
                    Broken(format!(
                        "`{}` answered {}; expected {want}",
                        s.step,
                        bad.join(", ")
                    ))
                }
            }
        },
        AssertKind::Conflict(c) => {
            let (patterns, what) = match c.kind {
                ConflictKind::Mismatch => (StatusPattern::Mismatch, "a mismatch rejection"),
                ConflictKind::InFlight => (StatusPattern::InFlight, "an in-flight conflict"),
            };
            match responses(state, &c.step) {
                Err(e) => Undecided(e),
                Ok(rs) => {
                    let bad: Vec<String> = rs
                        .iter()
                        .filter(|e| {
                            !e.status
                                .is_some_and(|st| status_matches(patterns, st, contract))
                        })
                        .map(Exchange::describe)
                        .collect();
                    let want = describe_patterns(&[patterns], contract);
                    if bad.is_empty() {
                        let types: Vec<String> = rs.iter().map(Exchange::describe).collect();
                        Held(format!("`{}` got {what}: {}", c.step, types.join(", ")))
                    } else {
                        Broken(format!(
                            "`{}` expected {what} ({want}) under the {} contract, got {}",
                            c.step,
                            contract.preset.name(),
                            bad.join(", ")
                        ))
                    }
                }
            }
        }
        AssertKind::SameResponse(p) => {
            let Some(original) = state.result(&p.other).first_response() else {
                return Undecided(format!(
                    "step `{}` got no response to compare with",
                    p.other
                ));
            };
            match responses(state, &p.step) {
                Err(e) => Undecided(e),
                Ok(rs) => {
                    let diffs: Vec<String> =
                        rs.iter().flat_map(|r| differences(r, original)).collect();
                    if diffs.is_empty() {
                        Held(format!("`{}` replayed `{}` faithfully", p.step, p.other))
                    } else {
                        Broken(format!(
                            "`{}` is not the same response as `{}`: {}",
                            p.step,
                            p.other,
                            dedup(diffs).join("; ")
                        ))
                    }
                }
            }
        }
        AssertKind::NotReplayOf(p) => {
            let Some(original) = state.result(&p.other).first_response() else {
                return Undecided(format!(
                    "step `{}` got no response to compare with",
                    p.other
                ));
            };
            match responses(state, &p.step) {
                Err(e) => Undecided(e),
                Ok(rs) if rs.iter().any(|r| same_response(r, original)) => Broken(format!(
                    "`{}` got `{}`'s response replayed ({}): the key was not scoped to the operation",
                    p.step,
                    p.other,
                    original.describe()
                )),
                Ok(_) => Held(format!("`{}` was handled as its own operation", p.step)),
            }
        }
        AssertKind::DistinctIds(d) => {
            let mut ids = Vec::new();
            for s in &d.steps {
                match state
                    .result(s)
                    .first_success()
                    .and_then(|e| env.created_id(e))
                {
                    Some(id) => ids.push((s, id)),
                    None => return Undecided(format!("step `{s}` returned no id")),
                }
            }
            for (i, (s, id)) in ids.iter().enumerate() {
                if let Some((t, _)) = ids[..i].iter().find(|(_, other)| other == id) {
                    return Broken(format!("`{t}` and `{s}` got the same resource `{id}`"));
                }
            }
            Held(format!("{} distinct ids", ids.len()))
        }
        AssertKind::Consistent(c) => consistent(env, state.result(&c.step), &c.step),
        AssertKind::Created(c) => {
            let principal = match env.principal(c.principal.as_deref()) {
                Ok(p) => p,
                Err(e) => return Undecided(e),
            };
            if let Some(Err(e)) = &state.list_before_delete {
                return Undecided(format!("could not count resources: {e}"));
            }
            match observe::count_created(env, principal, &state.marker, state.exchanges()).await {
                Err(e) => Undecided(format!("could not count resources: {e}")),
                Ok(n) if n == c.equals => {
                    Held(format!("{n} resource(s) created for {}", principal.name))
                }
                // Too few while a request is still unanswered (a timeout, a closed connection) is
                // not a broken rule: that request's work may still be running. Too many always is.
                Ok(n) if n < c.equals && unanswered(state).is_some() => Undecided(format!(
                    "{n} resources with marker {} exist for {}, fewer than {}, but step `{}` got \
                     no response, so its work may still be running",
                    state.marker,
                    principal.name,
                    c.equals,
                    unanswered(state).unwrap_or_default()
                )),
                Ok(n) => Broken(format!(
                    "{n} resources with marker {} exist for {}; expected exactly {}",
                    state.marker, principal.name, c.equals
                )),
            }
        }
        AssertKind::Header(h) => header_present(env, state, h),
        AssertKind::DistinctProblems(d) => distinct_problems(state, &d.steps),
        AssertKind::SucceededWithin(s) => {
            let limit = within(&s.within, contract);
            let result = state.result(&s.step);
            let attempts = result.exchanges.len();
            match result.succeeded_after {
                Some(t) if t <= limit => Held(format!(
                    "`{}` succeeded after {} ms ({attempts} attempts), within {} ms",
                    s.step,
                    t.as_millis(),
                    limit.as_millis()
                )),
                Some(t) => Broken(format!(
                    "`{}` succeeded only after {} ms; the limit is {} ms",
                    s.step,
                    t.as_millis(),
                    limit.as_millis()
                )),
                None if attempts == 0 => Undecided(format!("step `{}` sent no request", s.step)),
                None => Broken(format!(
                    "`{}` never succeeded in {} ms ({attempts} attempts, last: {}): locked out",
                    s.step,
                    limit.as_millis(),
                    result
                        .exchanges
                        .last()
                        .map(Exchange::describe)
                        .unwrap_or_default()
                )),
            }
        }
        AssertKind::EffectDelta(d) => {
            let read = |step: &str| -> Result<i64, String> {
                let ex = state
                    .result(step)
                    .first_response()
                    .ok_or_else(|| format!("step `{step}` got no response"))?;
                observe::effect_of(env, ex)
            };
            match (read(&d.before), read(&d.after)) {
                (Ok(b), Ok(a)) if a - b == d.equals => Held(format!("the action took effect {} time(s)", a - b)),
                (Ok(b), Ok(a)) => Broken(format!(
                    "the action's effect counter went from {b} to {a}; expected a change of exactly {}",
                    d.equals
                )),
                (Err(e), _) | (_, Err(e)) => Undecided(e),
            }
        }
        AssertKind::FailureHandled(f) => failure_handled(env, state, &f.failed, &f.retry).await,
        AssertKind::FaultApplied(f) => fault_applied(events, &f.step, f.upstream),
        AssertKind::NoResponse(s) => {
            let result = state.result(&s.step);
            match result.exchanges.iter().find(|e| e.status.is_some()) {
                None if result.exchanges.is_empty() => {
                    Undecided(format!("step `{}` sent no request", s.step))
                }
                None => Held(format!("`{}` was cut off as planned", s.step)),
                Some(e) => Broken(format!(
                    "`{}` was meant to be cut off mid-flight but answered {}",
                    s.step,
                    e.describe()
                )),
            }
        }
        AssertKind::No5xx(s) => match responses(state, &s.step) {
            Err(e) => Undecided(e),
            Ok(rs) => match rs.iter().find(|e| e.status.is_some_and(|st| st >= 500)) {
                Some(e) => Broken(format!(
                    "`{}` answered {}: a server error",
                    s.step,
                    e.describe()
                )),
                None => Held(format!("`{}` got no 5xx", s.step)),
            },
        },
        AssertKind::SideEffects(s) => side_effects(env, state, s.equals).await,
    }
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    v.dedup();
    v
}
