//! Assertions about effects behind the API: a failed request's handling, what the proxy did,
//! side-effect counters.

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::scenario::UpstreamOutcome;

use super::kinds::responses;
use super::same_response;
use crate::runner::context::{CheckState, Env};
use crate::runner::observe;
use crate::runner::verdict::Finding;

use Finding::{Broken, Held, Undecided};

/// A 5xx is re-run (contract `replays_5xx: false`) or replayed (`true`), never half-done: afterwards
/// exactly one resource exists when the retry re-ran, none when the failure was replayed.
pub(super) async fn failure_handled(
    env: &Env,
    state: &CheckState,
    failed: &str,
    retry: &str,
) -> Finding {
    let finding = failure_statuses(env, state, failed, retry);
    if !matches!(finding, Held(_)) {
        return finding;
    }
    let expected = u64::from(!env.contract.replays_5xx);
    let principal = match env.principal(None) {
        Ok(p) => p,
        Err(e) => return Undecided(e),
    };
    match observe::count_created(env, principal, &state.marker, state.exchanges()).await {
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
pub(super) fn fault_applied(events: &[ProxyEvent], step: &str, want: UpstreamOutcome) -> Finding {
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

pub(super) async fn side_effects(env: &Env, state: &CheckState, equals: i64) -> Finding {
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
