//! `succeeded_within: {step, within}`: the step (with `retry`) reached a 2xx in time, counted from
//! its first attempt.

use idemspec_scenarios::scenario::SucceededWithin;

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::reading::within;
use crate::runner::context::CheckRun;

impl Judge for SucceededWithin {
    fn judge(&self, run: &CheckRun) -> Finding {
        let limit = within(&self.within, run.contract(), run.ctx().lockout_bound);
        let view = run.step(&self.step);
        let attempts = view.exchanges.len();
        match view.meta.succeeded_after {
            Some(t) if t <= limit => Held(format!(
                "`{}` succeeded after {} ms ({attempts} attempts), within {} ms",
                self.step,
                t.as_millis(),
                limit.as_millis()
            )),
            Some(t) => Broken(format!(
                "`{}` succeeded only after {} ms; the limit is {} ms",
                self.step,
                t.as_millis(),
                limit.as_millis()
            )),
            None if attempts == 0 => Undecided(format!("step `{}` sent no request", self.step)),
            None => {
                let last = view.exchanges.last().copied();
                let why = last
                    .and_then(|e| replayed_with_wrong_status(run, e))
                    .unwrap_or_else(|| "locked out".into());
                Broken(format!(
                    "`{}` never succeeded in {} ms ({attempts} attempts, last: {}): {why}",
                    self.step,
                    limit.as_millis(),
                    last.map(|e| e.describe()).unwrap_or_default()
                ))
            }
        }
    }
}

/// When a non-2xx answer carries a stored response — the body of an earlier 2xx with the same key,
/// or a created resource — the key is not locked: its response is replayed with the wrong status.
fn replayed_with_wrong_status(run: &CheckRun, last: &Exchange) -> Option<String> {
    let status = last.status?;
    if last.body.is_empty() {
        return None;
    }
    let key = &last.evidence.request.idempotency_key;
    let earlier = run.exchanges().iter().find(|e| {
        e.is_success() && e.body == last.body && &e.evidence.request.idempotency_key == key
    });
    if let Some(e) = earlier {
        return Some(format!(
            "the retries got the body of step `{}`'s {} with status {status}: the stored response is replayed with the wrong status, the key is not locked out",
            e.evidence.request.step,
            e.status.unwrap_or_default()
        ));
    }
    run.ctx().created_id(last).map(|id| {
        format!(
            "the retries got {status} with the body of resource `{id}`: a stored response replayed with the wrong status, not a key locked out"
        )
    })
}
