//! Assertions about conflicts and concurrency: the concurrent step's consistency, distinguishable
//! conflicts, headers required on some statuses.

use idemspec_scenarios::scenario::{HeaderPresent, StatusPattern};

use super::{describe_patterns, differences, status_matches};
use crate::client::Exchange;
use crate::runner::context::{CheckState, Env, StepResult};
use crate::runner::verdict::Finding;

use Finding::{Broken, Held, Undecided};

/// The header is on every response of the step whose status is in `when` (default 2xx).
pub(super) fn header_present(env: &Env, state: &CheckState, h: &HeaderPresent) -> Finding {
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
pub(super) fn distinct_problems(state: &CheckState, steps: &[String]) -> Finding {
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

/// N simultaneous requests with one key: successes identical (one resource), the rest in-flight
/// conflicts (article: concurrent retries; ietf-draft-07 §2.6).
pub(super) fn consistent(env: &Env, result: &StepResult, step: &str) -> Finding {
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
