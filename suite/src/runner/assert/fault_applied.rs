//! `fault_applied: {step, upstream}`: a precondition on what the proxy did to a step — the server
//! did the work and the client never heard (`worked`), or the request never reached the server
//! (`not_reached`). When it does not hold, the situation the check is about never happened.

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::scenario::{FaultApplied, UpstreamOutcome};

use super::Judge;
use crate::engine::Finding::{self, Held, Undecided};
use crate::runner::context::CheckRun;

impl Judge for FaultApplied {
    fn judge(&self, run: &CheckRun) -> Finding {
        let step = &self.step;
        let mine: Vec<&ProxyEvent> = run
            .events()
            .iter()
            .filter(|e| e.step.as_deref() == Some(step.as_str()))
            .collect();
        if mine.is_empty() {
            return Undecided(format!("the proxy saw no request of step `{step}`"));
        }
        let faulted = || mine.iter().filter(|e| e.fault.is_some());
        let ok = match self.upstream {
            UpstreamOutcome::Worked => faulted().any(|e| {
                e.upstream_status.is_some_and(|s| (200..300).contains(&s)) && !e.client_complete
            }),
            UpstreamOutcome::NotReached => faulted().any(|e| e.upstream_sends == 0),
        };
        let seen: Vec<String> = mine.iter().map(|e| upstream_did(e)).collect();
        match (ok, self.upstream) {
            (true, UpstreamOutcome::Worked) => Held(format!(
                "the server did `{step}`'s work and the response was lost"
            )),
            (true, UpstreamOutcome::NotReached) => {
                Held(format!("`{step}` never reached the server"))
            }
            (false, _) => Undecided(format!(
                "the fault on `{step}` did not happen as planned: {}",
                seen.join(", ")
            )),
        }
    }
}

/// What the proxy did with one request and what it saw the upstream do, for a reader: `drop_response,
/// the upstream answered 500`, `passed through, the upstream never answered (reset)`, `refuse,
/// never sent upstream`.
fn upstream_did(e: &ProxyEvent) -> String {
    let fault = e.fault.as_deref().unwrap_or("passed through");
    let upstream = match (e.upstream_sends, e.upstream_status, &e.upstream_error) {
        (0, _, _) => "never sent upstream".to_owned(),
        (_, Some(s), _) => format!("the upstream answered {s}"),
        (_, None, _) if e.upstream_head_refused.is_some() => format!(
            "the upstream answered, with a head the proxy refuses ({})",
            e.upstream_head_refused.as_deref().unwrap_or_default()
        ),
        (_, None, Some(why)) => format!("the upstream never answered ({why})"),
        (_, None, None) => "the upstream never answered".to_owned(),
    };
    format!("{fault}, {upstream}")
}

#[cfg(test)]
mod tests {
    use super::upstream_did;

    fn event(fault: Option<&str>, sends: u8, status: Option<u16>, error: Option<&str>) -> String {
        let e: idemspec_proxy::ProxyEvent = serde_json::from_value(serde_json::json!({
            "seq": 1, "at": "2026-01-01T00:00:00Z", "method": "POST", "path": "/w",
            "idempotency_key": null, "step": "first", "rule": null, "fault": fault,
            "upstream_sends": sends, "upstream_status": status, "upstream_error": error,
            "error_side": null, "client_status": null, "client_bytes": 0,
            "client_complete": false, "client_disconnected": false, "duration_ms": 3
        }))
        .expect("an event");
        upstream_did(&e)
    }

    #[test]
    fn what_the_upstream_did_is_said_in_words_never_a_dash() {
        assert_eq!(
            event(Some("drop_response"), 1, Some(500), None),
            "drop_response, the upstream answered 500"
        );
        assert_eq!(
            event(Some("drop_response"), 1, None, Some("connection reset")),
            "drop_response, the upstream never answered (connection reset)"
        );
        assert_eq!(
            event(None, 1, None, None),
            "passed through, the upstream never answered"
        );
        assert_eq!(
            event(Some("refuse"), 0, None, None),
            "refuse, never sent upstream"
        );
    }

    #[test]
    fn a_head_the_proxy_refused_is_an_answer_not_silence() {
        let mut e: idemspec_proxy::ProxyEvent = serde_json::from_value(serde_json::json!({
            "seq": 1, "at": "2026-01-01T00:00:00Z", "method": "POST", "path": "/w",
            "idempotency_key": null, "step": "first", "rule": "lost", "fault": "drop_response",
            "upstream_sends": 1, "upstream_status": null, "upstream_error": "a head refused",
            "error_side": "upstream", "client_status": null, "client_bytes": 0,
            "client_complete": false, "client_disconnected": false, "duration_ms": 3
        }))
        .expect("an event");
        e.upstream_head_refused = Some("more than 100 headers".into());
        assert_eq!(
            upstream_did(&e),
            "drop_response, the upstream answered, with a head the proxy refuses (more than 100 \
             headers)"
        );
    }
}
