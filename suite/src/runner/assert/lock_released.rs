//! `lock_released: {step, since, within}`: after a request was abandoned (a crash, or a handler
//! that hangs while its client gave up), how long its key stayed locked — from the abandoned
//! request's start to the first retry that was not refused as in flight — judged by the contract:
//! beyond a declared in-flight TTL (plus slack) is a broken MUST; with no TTL declared, a key still
//! locked at the run's lockout bound is a broken SHOULD, with the time and the article's advice.
//! Only a refusal seen past the limit breaks the rule: where the first retry came late (a target
//! that took longer than the TTL to restart) and found the key free, no lock past the TTL was seen.
//! A retry that got no answer (timed out, reset, a 5xx) counts as the key free only when its twin
//! (the same request sent beside it, see `crate::runner::context::twin_step`) was refused as in
//! flight while the retry was still unanswered: the retry held the key. A twin that was not refused is
//! itself where the key was seen free.
//! Otherwise it is UNKNOWN: an API that makes same-key requests wait on the abandoned record answers
//! neither (its key stays locked for as long as that wait), and nor does one with no in-flight lock
//! at all (whose twin runs the hanging handler too; `concurrent-same-key` owns that defect). Where
//! the contract declares that wait (`in_flight_wait`), the retries are given its time, a retry
//! answered its `then` status still found the key locked, and `wait_bounded` judges the wait.

use idemspec_scenarios::scenario::{Level, LockReleased};

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::reading::{refused, within};
use crate::runner::context::CheckRun;
use crate::runner::context::Needs;
use crate::runner::context::{twin_step, TWIN_AFTER};

impl Judge for LockReleased {
    fn needs(&self) -> Needs {
        Needs {
            twins: vec![self.step.clone()],
            ..Needs::default()
        }
    }

    fn level(&self, run: &CheckRun) -> Option<Level> {
        run.contract()
            .in_flight_ttl
            .is_none()
            .then_some(Level::Should)
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        let bound = run.ctx().lockout_bound;
        let limit = within(&self.within, contract, bound);
        let retries = run.step(&self.step);
        let Some(first) = retries.exchanges.first() else {
            return Undecided(format!("step `{}` sent no request", self.step));
        };
        let from = run
            .step(&self.since)
            .exchanges
            .first()
            .map_or(first.started, |e| e.started);
        // Retries and their twins in send order: the first one not refused as in flight is where
        // the key was seen free (or, unanswered, where it may have been).
        let twin_name = twin_step(&self.step);
        let mut attempts: Vec<&Exchange> = retries.exchanges.clone();
        attempts.extend(run.step(&twin_name).exchanges);
        attempts.sort_by_key(|e| e.started);
        let secs = |d: std::time::Duration| format!("{:.1} s", d.as_secs_f64());
        let ends = |e: &Exchange| e.started + e.elapsed;
        // Whether the retries went on after `e` (it was no release to the runner either).
        let later = |e: &Exchange| {
            attempts
                .iter()
                .any(|a| a.started > e.started && a.evidence.request.step == self.step)
        };
        // An unanswered attempt (no answer, a 5xx) held the key only if its twin was refused as in
        // flight while it was still unanswered: `Ok` with the sentence that says so, else `Err`
        // with why nothing could be seen.
        let held_by = |r: &Exchange| -> Result<String, String> {
            let r_name = &r.evidence.request.step;
            let twin = attempts
                .iter()
                .copied()
                .filter(|t| t.evidence.request.step == twin_name)
                .find(|t| t.started >= r.started && t.started < ends(r));
            let beside = |t: &Exchange| {
                format!(
                    "`{twin_name}`, sent with the same key {} into it, got {}",
                    secs(t.started.saturating_duration_since(r.started)),
                    t.describe()
                )
            };
            match twin {
                Some(t) if refused(t, contract) && ends(t) <= ends(r) => {
                    Ok(format!("; {}: `{r_name}` held the key", beside(t)))
                }
                Some(t) if refused(t, contract) => Err(format!(
                    "{} only {} after `{r_name}` had ended, as late as an API that makes a \
                     same-key request wait on the abandoned record and then refuses it would \
                     have refused `{r_name}` itself",
                    beside(t),
                    secs(ends(t).saturating_duration_since(ends(r)))
                )),
                Some(t) => Err(format!(
                    "{} rather than the in-flight refusal that would show `{r_name}` holding the key",
                    beside(t)
                )),
                None if r.elapsed < TWIN_AFTER => Err(format!(
                    "it ended after {} ms, before a request is sent beside an unanswered one (at {})",
                    r.elapsed.as_millis(),
                    secs(TWIN_AFTER)
                )),
                None => Err("no request was sent beside it".to_owned()),
            }
        };
        // Whether a twin sent while `r` was unanswered was answered without an in-flight
        // refusal: the key was free beside `r`.
        let freed_beside = |r: &Exchange| {
            attempts.iter().any(|t| {
                t.evidence.request.step == twin_name
                    && t.started >= r.started
                    && t.started < ends(r)
                    && !refused(t, contract)
                    && !unanswered(t)
            })
        };
        // Retries and their twins in send order: the first one not refused as in flight that
        // shows the key free is the release. An unanswered one shows it only through its twin;
        // one the retries went on after (a fast failure, a 5xx) shows nothing.
        let mut released = None;
        let mut admitted = String::new();
        for r in attempts.iter().copied().filter(|e| !refused(e, contract)) {
            if !unanswered(r) {
                released = Some(r);
                break;
            }
            match held_by(r) {
                Ok(note) => {
                    admitted = note;
                    released = Some(r);
                    break;
                }
                // The retries went on, or it is a 5xx (said below, with the status), or its twin
                // was answered (no refusal: the key was free, and the twin is the release, next in
                // send order): no answer to weigh here.
                Err(_) if later(r) || r.status.is_some() || freed_beside(r) => {}
                Err(why) => {
                    return Undecided(format!(
                        "`{}`, sent {} after the abandoned request, got no answer ({}), and {why}, so \
                         whether its key was free could not be seen: an API that makes a same-key \
                         request wait on the abandoned request's record (its key locked for as long \
                         as that wait) answers neither, and so does one without an in-flight lock, \
                         whose twin runs the hanging handler too{}",
                        r.evidence.request.step,
                        secs(r.started.saturating_duration_since(from)),
                        r.describe(),
                        if contract.in_flight_wait.is_none() {
                            "; where the API documents such a wait, declare it \
                             (`contract.in_flight_wait: {up_to, then}`), and the retries are given \
                             its time"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        let last = retries.exchanges.last().copied().unwrap_or(first);
        if released.is_none() && unanswered(last) {
            return Undecided(format!(
                "`{}` was answered {} to the end ({} retries, the last {} after the abandoned \
                 request), neither a success nor the in-flight refusal: a 5xx or a lost \
                 connection shows neither a free key nor a held one; if it is how the API refuses \
                 a request still in flight, declare it in `contract.in_flight_status`",
                self.step,
                last.describe(),
                retries.exchanges.len(),
                secs(last.started.saturating_duration_since(from))
            ));
        }
        let ttl = contract.in_flight_ttl;
        match (released, ttl) {
            (Some(r), Some(ttl)) => {
                let locked = r.started.saturating_duration_since(from);
                // The last refusal before the release: the latest moment the lock was seen held.
                let last_refused = attempts
                    .iter()
                    .take_while(|e| !std::ptr::eq(**e, r))
                    .last()
                    .map(|e| e.started.saturating_duration_since(from));
                if locked > limit && last_refused.is_none_or(|t| t <= limit) {
                    return Held(format!(
                        "the first retry not refused as in flight came {} after the abandoned request \
                         and found the key free ({}{admitted}); {} (declared in-flight TTL {})",
                        secs(locked),
                        r.describe(),
                        last_refused.map_or("no retry was refused as in flight".to_owned(), |t| {
                            format!("the last in-flight refusal came {} after it", secs(t))
                        }),
                        secs(ttl)
                    ));
                }
                if locked <= limit {
                    Held(format!(
                        "the key was locked for {} after the abandoned request (declared in-flight TTL {}, \
                         limit {}), then `{}` got {}{admitted}",
                        secs(locked), secs(ttl), secs(limit), self.step, r.describe()
                    ))
                } else {
                    Broken(format!(
                        "the key stayed locked for {}, beyond the declared in-flight TTL of {} (limit {})",
                        secs(locked), secs(ttl), secs(limit)
                    ))
                }
            }
            (Some(r), None) => Held(format!(
                "the key was locked for {} after the abandoned request (the contract declares no \
                 in-flight TTL), then `{}` got {}{admitted}",
                secs(r.started.saturating_duration_since(from)),
                self.step,
                r.describe()
            )),
            (None, Some(ttl)) => Broken(format!(
                "the key was still locked {} after the abandoned request ({} retries, last: {}), beyond the declared in-flight TTL of {}",
                secs(retries.exchanges.last().map_or(limit, |e| e.started.saturating_duration_since(from))),
                retries.exchanges.len(),
                retries.exchanges.last().map(|e| e.describe()).unwrap_or_default(),
                secs(ttl)
            )),
            (None, None) => Broken(format!(
                "the key was still locked {} after the abandoned request ({} retries, last: {}); the contract declares no in-flight TTL, so a crashed request may lock its key until the record expires. The article recommends an in-flight TTL of minutes, separate from the retention window (judged against --lockout-bound {}; the retries go on past it, to the retry step's `within`, so that a lock that ends soon after the bound is told from one that does not end)",
                secs(retries.exchanges.last().map_or(limit, |e| e.started.saturating_duration_since(from))),
                retries.exchanges.len(),
                retries.exchanges.last().map(|e| e.describe()).unwrap_or_default(),
                secs(bound)
            )),
        }
    }
}

/// Whether `e` shows nothing of the key: no answer, or a 5xx (a gateway in front of a handler that
/// hangs or waits gives up with a 502–504; a middleware may answer 500 or 503 for a record it
/// cannot take).
fn unanswered(e: &Exchange) -> bool {
    matches!(e.status, None | Some(500..=599))
}
