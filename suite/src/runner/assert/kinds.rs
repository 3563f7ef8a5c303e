//! One function per assertion kind. Each returns a [`Finding`]: held, broken, undecided (the run
//! could not observe what the assertion is about) or skipped.

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::scenario::{
    AssertKind, Assertion, ConflictKind, Scenario, StatusPattern, UpstreamOutcome,
};

use super::{describe_patterns, differences, same_response, status_matches, within};
use crate::client::Exchange;
use crate::runner::context::{CheckState, Env, StepResult};
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
        if a.precondition {
            if let Broken(m) = finding {
                finding = Undecided(format!("precondition not met: {m}"));
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
                });
            }
        }
    }
    out
}

/// The responses of a step, or why there are none to judge.
fn responses<'a>(state: &'a CheckState, step: &str) -> Result<&'a [Exchange], String> {
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
            match observe::count_created(env, principal, &state.marker).await {
                Err(e) => Undecided(format!("could not count resources: {e}")),
                Ok(n) if n == c.equals => {
                    Held(format!("{n} resource(s) created for {}", principal.name))
                }
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

/// The header is on every response of the step whose status is in `when` (default 2xx).
fn header_present(
    env: &Env,
    state: &CheckState,
    h: &idemspec_scenarios::scenario::HeaderPresent,
) -> Finding {
    let contract = &env.contract;
    let name = if h.name == "replayed" {
        contract.replayed_header.as_str()
    } else {
        h.name.as_str()
    };
    let when = h
        .when
        .clone()
        .unwrap_or_else(|| vec![StatusPattern::Class(2)]);
    let result = state.result(&h.step);
    let concerned: Vec<&Exchange> = result
        .judged()
        .iter()
        .filter(|e| {
            e.status
                .is_some_and(|s| when.iter().any(|p| status_matches(*p, s, contract)))
        })
        .collect();
    let want = describe_patterns(&when, contract);
    if concerned.is_empty() {
        if h.when.is_none() {
            return Undecided(format!(
                "step `{}` got no 2xx to look for `{name}` on",
                h.step
            ));
        }
        return Held(format!(
            "`{}` got no {want} response to look for `{name}` on",
            h.step
        ));
    }
    match concerned.iter().find(|e| e.header(name).is_none()) {
        Some(e) => Broken(format!(
            "`{}` answered {} without `{name}`",
            h.step,
            e.describe()
        )),
        None => Held(format!("`{}` carried `{name}` on {want}", h.step)),
    }
}

/// Two conflicts a client must tell apart — "in flight, retry later" and "mismatch, never retry" —
/// differ in status or in problem `type` (RFC 9457 §3.1.1).
fn distinct_problems(state: &CheckState, steps: &[String]) -> Finding {
    let mut firsts = Vec::new();
    for s in steps {
        match state.result(s).first_response() {
            Some(e) if !e.is_success() => firsts.push((s, e)),
            Some(e) => {
                return Held(format!(
                    "`{s}` answered {}, so there was no conflict to compare",
                    e.describe()
                ))
            }
            None => return Undecided(format!("step `{s}` got no response")),
        }
    }
    for (i, (a, ea)) in firsts.iter().enumerate() {
        for (b, eb) in &firsts[i + 1..] {
            if ea.status == eb.status && ea.problem_type() == eb.problem_type() {
                return Broken(format!(
                    "`{a}` and `{b}` both answered {}: a client cannot tell a retryable conflict from a terminal one",
                    ea.describe()
                ));
            }
        }
    }
    let all: Vec<String> = firsts
        .iter()
        .map(|(s, e)| format!("`{s}` {}", e.describe()))
        .collect();
    Held(format!("conflicts are distinguishable: {}", all.join(", ")))
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    v.dedup();
    v
}

/// N simultaneous requests with one key: successes identical (one resource), the rest in-flight
/// conflicts (article: concurrent retries; ietf-draft-07 §2.6).
fn consistent(env: &Env, result: &StepResult, step: &str) -> Finding {
    let rs = &result.exchanges;
    if rs.is_empty() {
        return Undecided(format!("step `{step}` sent no request"));
    }
    if let Some(lost) = rs.iter().find(|e| e.status.is_none()) {
        return Undecided(format!(
            "a request of `{step}` got no response: {}",
            lost.describe()
        ));
    }
    let successes: Vec<&Exchange> = rs.iter().filter(|e| e.is_success()).collect();
    let Some(first) = successes.first() else {
        return Broken(format!(
            "none of the {} requests of `{step}` succeeded",
            rs.len()
        ));
    };
    let ids: Vec<Option<String>> = successes.iter().map(|e| env.created_id(e)).collect();
    if let Some(other) = ids.iter().find(|id| **id != ids[0]) {
        return Broken(format!(
            "requests with one key got different resources: {} and {}",
            ids[0].as_deref().unwrap_or("?"),
            other.as_deref().unwrap_or("?")
        ));
    }
    let contract = &env.contract;
    let odd: Vec<String> = rs
        .iter()
        .filter(|e| {
            !e.is_success()
                && !e
                    .status
                    .is_some_and(|s| contract.in_flight_status.contains(&s))
        })
        .map(Exchange::describe)
        .collect();
    if !odd.is_empty() {
        return Broken(format!(
            "besides the successes, `{step}` got {}; expected only in-flight conflicts ({:?})",
            odd.join(", "),
            contract.in_flight_status
        ));
    }
    let replays = successes
        .iter()
        .skip(1)
        .filter(|e| differences(e, first).is_empty())
        .count();
    if replays + 1 != successes.len() {
        return Broken(format!(
            "the {} successes of `{step}` are not identical replays",
            successes.len()
        ));
    }
    let conflicts = rs.len() - successes.len();
    let retry_after = rs
        .iter()
        .filter(|e| !e.is_success())
        .all(|e| e.header("retry-after").is_some());
    Held(format!(
        "{} request(s) succeeded with one resource, {conflicts} got in-flight conflicts{}",
        successes.len(),
        if conflicts > 0 && !retry_after {
            " (some without Retry-After)"
        } else {
            ""
        }
    ))
}

/// A 5xx is re-run (contract `replays_5xx: false`) or replayed (`true`), never half-done: afterwards
/// exactly one resource exists when the retry re-ran, none when the failure was replayed.
async fn failure_handled(env: &Env, state: &CheckState, failed: &str, retry: &str) -> Finding {
    let finding = failure_statuses(env, state, failed, retry);
    if !matches!(finding, Held(_)) {
        return finding;
    }
    let expected = u64::from(!env.contract.replays_5xx);
    let principal = match env.principal(None) {
        Ok(p) => p,
        Err(e) => return Undecided(e),
    };
    match observe::count_created(env, principal, &state.marker).await {
        Err(e) => Undecided(format!("could not count resources: {e}")),
        Ok(n) if n == expected => finding,
        Ok(n) => Broken(format!(
            "{n} resources exist after a failed create and its retry; expected {expected} (half-done work left behind)"
        )),
    }
}

fn failure_statuses(env: &Env, state: &CheckState, failed: &str, retry: &str) -> Finding {
    let Some(first) = state.result(failed).first_response() else {
        return Undecided(format!("step `{failed}` got no response"));
    };
    if first.status.is_none_or(|s| s < 500) {
        return Undecided(format!(
            "the fail_next hook did not make `{failed}` fail: it answered {}",
            first.describe()
        ));
    }
    let rs = match responses(state, retry) {
        Ok(rs) => rs,
        Err(e) => return Undecided(e),
    };
    let again = &rs[0];
    let preset = env.contract.preset.name();
    if env.contract.replays_5xx {
        if same_response(again, first) {
            Held(format!(
                "the {} was replayed, as the {preset} contract says",
                first.describe()
            ))
        } else {
            Broken(format!(
                "the {preset} contract says a 5xx is replayed, but the retry got {}",
                again.describe()
            ))
        }
    } else if again.is_success() {
        Held(format!(
            "the retry ran again and succeeded ({})",
            again.describe()
        ))
    } else if same_response(again, first) {
        Broken(format!(
            "the {} was stored and replayed; the {preset} contract says a 5xx is re-run",
            first.describe()
        ))
    } else {
        Broken(format!(
            "the retry after a 5xx answered {}, not a success",
            again.describe()
        ))
    }
}

/// Precondition on what the proxy did to a step.
fn fault_applied(events: &[ProxyEvent], step: &str, want: UpstreamOutcome) -> Finding {
    let mine: Vec<&ProxyEvent> = events
        .iter()
        .filter(|e| e.step.as_deref() == Some(step))
        .collect();
    if mine.is_empty() {
        return Undecided(format!("the proxy saw no request of step `{step}`"));
    }
    let faulted: Vec<&&ProxyEvent> = mine.iter().filter(|e| e.fault.is_some()).collect();
    let ok = match want {
        UpstreamOutcome::Worked => faulted.iter().any(|e| {
            e.upstream_status.is_some_and(|s| (200..300).contains(&s)) && !e.client_complete
        }),
        UpstreamOutcome::NotReached => faulted.iter().any(|e| e.upstream_sends == 0),
    };
    let seen: Vec<String> = mine
        .iter()
        .map(|e| {
            format!(
                "{} upstream {}",
                e.fault.as_deref().unwrap_or("passed through"),
                e.upstream_status.map_or("-".into(), |s| s.to_string())
            )
        })
        .collect();
    match (ok, want) {
        (true, UpstreamOutcome::Worked) => Held(format!(
            "the server did `{step}`'s work and the response was lost"
        )),
        (true, UpstreamOutcome::NotReached) => Held(format!("`{step}` never reached the server")),
        (false, _) => Undecided(format!(
            "the fault on `{step}` did not happen as planned: {}",
            seen.join(", ")
        )),
    }
}

async fn side_effects(env: &Env, state: &CheckState, equals: i64) -> Finding {
    let before = match &state.counters_before {
        Some(Ok(b)) => b,
        Some(Err(e)) => return Undecided(e.clone()),
        None => return Undecided("side-effect counters were not read before the steps".into()),
    };
    let after = match observe::read_counters(env).await {
        Ok(a) => a,
        Err(e) => return Undecided(e),
    };
    let mut broken = Vec::new();
    let mut seen = Vec::new();
    for (name, b) in before {
        let a = after.get(name).copied().unwrap_or(*b);
        seen.push(format!("{name} +{}", a - b));
        if a - b != equals {
            broken.push(format!("{name} grew by {} (from {b} to {a})", a - b));
        }
    }
    if broken.is_empty() {
        Held(format!("side effects: {}", seen.join(", ")))
    } else {
        Broken(format!(
            "side effects leaked: {}; expected each to grow by exactly {equals}",
            broken.join(", ")
        ))
    }
}
