//! Runs one check: capabilities, the embedded proxy, the steps (or a procedure), the assertions,
//! and the graded outcome with evidence.

use std::sync::Arc;
use std::time::Instant;

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::scenario::{AssertKind, Scenario};

use super::context::{CheckState, Env};
use super::proxy::FaultProxy;
use super::verdict::{outcome, Finding, Judgement};
use super::{assert, checks, observe, select, steps};
use crate::model::{CheckOutcome, Evidence, ProxyAction};

/// Runs `scenario` against the target in `env`.
pub(crate) async fn run_check(env: Arc<Env>, scenario: &Scenario) -> CheckOutcome {
    let started = Instant::now();
    let elapsed = || started.elapsed().as_millis() as u64;
    if let Some(reason) = select::missing_capability(&env, scenario) {
        let skip = Judgement {
            finding: Finding::Skipped(reason),
            level: scenario.level,
            reference: scenario.reference.clone(),
            steps: vec![],
            precondition: false,
        };
        return outcome(scenario, &[skip], &|_| Vec::new(), Vec::new(), elapsed());
    }
    let mut state = CheckState::new(scenario);
    let proxy = if scenario.faults.is_empty() {
        None
    } else {
        match FaultProxy::start(&env.profile.base_urls.value, &scenario.faults).await {
            Ok(p) => Some(p),
            Err(e) => {
                let j = undecided(
                    scenario,
                    format!("could not start the fault-injecting proxy: {e}"),
                );
                return outcome(scenario, &[j], &|_| Vec::new(), Vec::new(), elapsed());
            }
        }
    };
    let proxy_urls = proxy.as_ref().map(FaultProxy::base_urls);
    if let Some(procedure) = scenario.procedure {
        let (judgements, mut evidence) =
            checks::run_procedure(&env, scenario, procedure, &state, proxy_urls.as_deref()).await;
        if let Some(p) = proxy {
            attach_to_evidence(&mut evidence, &p.events());
            p.shutdown().await;
        }
        return outcome(scenario, &judgements, &|_| Vec::new(), evidence, elapsed());
    }
    let wants_counters = scenario.assertions.iter().any(|a| {
        a.value
            .kinds()
            .iter()
            .any(|k| matches!(k, AssertKind::SideEffects(_)))
    });
    if wants_counters {
        state.counters_before = Some(observe::read_counters(&env).await);
    }
    steps::run_steps(&env, scenario, &mut state, proxy_urls.as_deref()).await;
    let events = proxy.as_ref().map(FaultProxy::events).unwrap_or_default();
    attach_proxy_actions(&mut state, &events);
    let judgements = assert::evaluate(&env, scenario, &state, &events).await;
    if let Some(p) = proxy {
        p.shutdown().await;
    }
    let evidence_for = |step: &str| -> Vec<Evidence> {
        state
            .result(step)
            .exchanges
            .iter()
            .map(|e| e.evidence.clone())
            .collect()
    };
    let all: Vec<Evidence> = scenario
        .steps
        .iter()
        .flat_map(|s| evidence_for(&s.value.name()))
        .collect();
    outcome(scenario, &judgements, &evidence_for, all, elapsed())
}

fn undecided(scenario: &Scenario, why: String) -> Judgement {
    Judgement {
        finding: Finding::Undecided(why),
        level: scenario.level,
        reference: scenario.reference.clone(),
        steps: vec![],
        precondition: false,
    }
}

/// Pairs each proxied exchange with the proxy's record of it: same step tag, in send order.
pub(crate) fn attach_proxy_actions(state: &mut CheckState, events: &[ProxyEvent]) {
    for (step, result) in state.results.iter_mut() {
        let mut mine = events
            .iter()
            .filter(|e| e.step.as_deref() == Some(step.as_str()));
        let mut proxied: Vec<&mut crate::client::Exchange> = result
            .exchanges
            .iter_mut()
            .filter(|e| e.evidence.request.via_proxy)
            .collect();
        proxied.sort_by_key(|e| e.started);
        for ex in proxied {
            if let Some(ev) = mine.next() {
                ex.evidence.proxy = Some(action_of(ev));
            }
        }
    }
}

/// The same pairing for a procedure's evidence (in send order per step).
fn attach_to_evidence(evidence: &mut [Evidence], events: &[ProxyEvent]) {
    let mut used = vec![false; events.len()];
    for ev in evidence.iter_mut().filter(|e| e.request.via_proxy) {
        let next = events
            .iter()
            .enumerate()
            .find(|(i, e)| !used[*i] && e.step.as_deref() == Some(ev.request.step.as_str()));
        if let Some((i, e)) = next {
            used[i] = true;
            ev.proxy = Some(action_of(e));
        }
    }
}

/// A proxy event in the evidence's words.
pub(crate) fn action_of(ev: &ProxyEvent) -> ProxyAction {
    ProxyAction {
        rule: ev.rule.clone(),
        fault: ev.fault.clone(),
        upstream_status: ev.upstream_status,
        client_complete: ev.client_complete,
    }
}
