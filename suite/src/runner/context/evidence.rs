//! A check's evidence: each proxied exchange paired with the proxy's record of it, and the
//! exchanges that support a verdict, in the order they were sent.

use idemspec_proxy::ProxyEvent;

use idemspec_scenarios::profile::Contract;

use crate::http_client::Exchange;
use crate::model::{AttemptEnd, Evidence, Lane, ProxyAction, Span, Timeline};
use crate::runner::context::reading::{self, Reading};

/// Most exchanges shown as evidence for one check.
const MAX_EVIDENCE: usize = 24;

/// Pairs each proxied exchange with the proxy's event for it: the same step tag, in send order
/// (`exchanges` are in send order; the proxy logs events in arrival order).
pub(crate) fn pair_proxy_actions(exchanges: &mut [Exchange], events: &[ProxyEvent]) {
    let mut used = vec![false; events.len()];
    for ex in exchanges
        .iter_mut()
        .filter(|e| e.evidence.request.via_proxy)
    {
        let step = ex.evidence.request.step.as_str();
        let next = events
            .iter()
            .enumerate()
            .find(|(i, e)| !used[*i] && e.step.as_deref() == Some(step));
        if let Some((i, event)) = next {
            used[i] = true;
            ex.evidence.proxy = Some(action_of(event));
        }
    }
}

/// A proxy event in the evidence's words.
fn action_of(ev: &ProxyEvent) -> ProxyAction {
    ProxyAction {
        rule: ev.rule.clone(),
        fault: ev.fault.clone(),
        upstream_status: ev.upstream_status,
        upstream_head_refused: ev.upstream_head_refused.clone(),
        client_complete: ev.client_complete,
    }
}

/// The evidence for a verdict: the exchanges of `steps` (every exchange when `steps` names none
/// that sent anything), each once, in send order, at most [`MAX_EVIDENCE`].
pub(crate) fn select(exchanges: &[Exchange], steps: &[&str]) -> Vec<Evidence> {
    let of_steps: Vec<Evidence> = exchanges
        .iter()
        .filter(|e| steps.contains(&e.evidence.request.step.as_str()))
        .map(|e| e.evidence.clone())
        .collect();
    let mut chosen = if of_steps.is_empty() {
        exchanges.iter().map(|e| e.evidence.clone()).collect()
    } else {
        of_steps
    };
    chosen.truncate(MAX_EVIDENCE);
    chosen
}

/// Every exchange (in send order) on a time axis from the first one's start, one lane per step in
/// first-send order, each attempt sorted by the contract.
pub(crate) fn timeline(exchanges: &[Exchange], contract: &Contract) -> Timeline {
    let Some(first) = exchanges.iter().map(|e| e.started).min() else {
        return Timeline::default();
    };
    let mut lanes: Vec<Lane> = Vec::new();
    for ex in exchanges {
        let attempt = Span {
            start_ms: ex.started.duration_since(first).as_millis() as u64,
            duration_ms: ex.elapsed.as_millis() as u64,
            end: end_of(ex, contract),
            status: ex.status,
            fault: ex.evidence.proxy.as_ref().and_then(|p| p.fault.clone()),
            upstream_status: ex.evidence.proxy.as_ref().and_then(|p| p.upstream_status),
        };
        let step = &ex.evidence.request.step;
        match lanes.iter_mut().find(|l| &l.name == step) {
            Some(lane) => lane.attempts.push(attempt),
            None => lanes.push(Lane {
                name: step.clone(),
                attempts: vec![attempt],
            }),
        }
    }
    Timeline::of(lanes)
}

fn end_of(ex: &Exchange, contract: &Contract) -> AttemptEnd {
    match reading::read(ex, contract) {
        Reading::NoAnswer => AttemptEnd::NoResponse,
        Reading::Replay { .. } => AttemptEnd::Replay,
        Reading::Success => AttemptEnd::Success,
        Reading::Conflict => AttemptEnd::Conflict,
        Reading::InFlightRefusal | Reading::WaitRanOut => AttemptEnd::InFlight,
        Reading::MismatchRefusal => AttemptEnd::Mismatch,
        Reading::Crash => AttemptEnd::ServerError,
        Reading::MissingKeyRefusal | Reading::OtherFailure if ex.is_server_failure() => {
            AttemptEnd::ServerError
        }
        Reading::MissingKeyRefusal | Reading::OtherFailure => AttemptEnd::ClientError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::profile::{ContractSpec, Preset};

    fn ended(status: u16, contract: &Contract) -> AttemptEnd {
        let mut ex = Exchange::failed("s", String::new());
        ex.status = Some(status);
        end_of(&ex, contract)
    }

    /// A status the contract gives both refusals says neither: the article's 409 is "in flight or
    /// mismatch"; the IETF draft's 409 and 422 say which.
    #[test]
    fn a_status_both_refusals_share_is_labelled_as_either() {
        let article = ContractSpec::default().resolve();
        assert_eq!(ended(409, &article), AttemptEnd::Conflict);
        assert_eq!(ended(422, &article), AttemptEnd::ClientError);
        let draft = ContractSpec {
            preset: Preset::IetfDraft,
            ..ContractSpec::default()
        }
        .resolve();
        assert_eq!(ended(409, &draft), AttemptEnd::InFlight);
        assert_eq!(ended(422, &draft), AttemptEnd::Mismatch);
        assert_eq!(ended(503, &draft), AttemptEnd::ServerError);
    }
}
