//! `backoff`: retries wait, and wait longer each time, with jitter; a `Retry-After` on a 409 in
//! flight, a 429 or a 503 is honoured.
//!
//! The client's own back-off is measured on every failure without `Retry-After` it retries (a
//! 502, a 503, a reset, a lost response, a timeout) and judged by the rules of
//! [`backoff_timing`](super::backoff_timing); the answers with `Retry-After` follow, asking for a
//! wait longer than that back-off. When no failure without `Retry-After` was retried, the
//! client's own back-off was not seen and the check does not pass on the waits alone.

use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::backoff_timing as timing;
use super::{about, delays, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::command::Exit;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;
use crate::report::human_duration;

/// See the module documentation.
pub struct Backoff;

/// How much sooner than `Retry-After` a retry may come (clock granularity; a client that sleeps
/// exactly the header's seconds must pass).
const RETRY_AFTER_SLACK: Duration = Duration::from_millis(50);
/// The situations with `Retry-After`, sent once the client's own back-off is measured.
const WITH_WAIT: [&str; 3] = [
    "retry-after-in-flight",
    "retry-after-rate-limit",
    "retry-after-unavailable",
];

impl ClientCheck for Backoff {
    fn about(&self) -> About {
        about(
            "backoff",
            "Retries back off (growing delays, jitter) and honour Retry-After on a 409 in flight, 429 and 503",
            Level::Must,
            "article: what the client should do (exponential backoff with jitter); RFC 9110 §10.2.3 (Retry-After)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        timing::first_round(ctx)
    }

    /// More runs of the failure retried most where the first round showed too few or sits near
    /// a line ([`timing::more_samples`]); beside the first of them, the answers with a wait,
    /// longer than the back-off the first round measured ([`wait_for`]).
    fn follow_up(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Situation> {
        let mut more = timing::more_samples(ctx, runs);
        if runs.iter().any(|r| WITH_WAIT.contains(&r.situation)) {
            return more;
        }
        let wait = wait_for(ctx, timing::own_back_off(runs));
        // Named by what they answer, whose status the profile's `answers` may change.
        let after = |name, kind| {
            Situation::new(
                name,
                vec![ctx.planned_wait(kind, Some(wait), Times::First(1))],
            )
        };
        // An API without in-flight state never answers a 409 in flight (`in_flight_state: false`).
        if ctx.profile.in_flight_state() {
            more.push(after(WITH_WAIT[0], AnswerKind::InFlight));
        }
        more.extend([
            after(WITH_WAIT[1], AnswerKind::RateLimited),
            after(WITH_WAIT[2], AnswerKind::Unavailable),
        ]);
        more
    }

    /// The timing rules on the runs without `Retry-After`, then what the client did with each
    /// wait; a wait honoured is recorded, not held, when the client's own back-off was not seen
    /// (a PASS never rests on the waits alone).
    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let (mut found, seen) = timing::judge(runs);
        let own = timing::own_back_off(runs);
        for run in runs.iter().filter(|r| !timing::is_timing(r)) {
            let mut judged = judge_retry_after(ctx, run, own);
            if let (false, Finding::Held(m)) = (seen, &judged.finding) {
                judged.finding = Finding::Recorded(format!(
                    "{m} (its own back-off was not seen: no failure without Retry-After was retried)"
                ));
            }
            found.push(judged);
        }
        found
    }
}

/// The wait the answers ask for: the profile's `retry_after`, or, where the client's own first
/// back-off is as long, twice that back-off in whole seconds (at most [`LONGEST_WAIT`]), so that
/// waiting it out shows the header was read.
fn wait_for(ctx: &Ctx, own: Option<Duration>) -> Duration {
    let asked = ctx.profile.retry_after();
    let Some(own) = own else { return asked };
    let twice = (own * 2).as_secs_f64().ceil() as u64;
    asked.max(Duration::from_secs(twice).min(LONGEST_WAIT))
}

/// The longest wait [`wait_for`] raises the profile's `retry_after` to.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// What a client did after an answer with `Retry-After` (or the vendor's header): waited it out,
/// capped it (at the number it documents, or at one it does not), ignored it; and whether its own
/// back-off (`own`, its longest first delay after a failure without `Retry-After`) leaves that
/// unshown.
fn judge_retry_after(ctx: &Ctx, run: &CommandRun, own: Option<Duration>) -> Judgement {
    let status = run.attempts[0].client_status.unwrap_or_default();
    let wait = wait_for(ctx, own);
    let (header, value) = ctx.profile.retry_after_field(wait);
    let said = format!("{header}: {value}");
    let cap = ctx.profile.retry_after_cap();
    let name = run.situation;
    let on = |finding| Judgement::on(name, finding);
    let ms = |d: Duration| human_duration(d.as_millis() as u64);
    let Some(d) = delays(&run.attempts).first().copied() else {
        // A wait longer than the run: the deadline came first, and nothing was retried early.
        if matches!(run.output.exit, Exit::TimedOut(_)) && wait >= ctx.timeout {
            return on(Finding::Held(format!(
                "`{name}`: made no retry before the run's deadline ({}) after a {status} that \
                 said {said}, longer than the run",
                humantime::format_duration(ctx.timeout)
            )));
        }
        if let Exit::TimedOut(after) = run.output.exit {
            return on(Finding::Recorded(format!(
                "`{name}`: no retry of a {status} with {said} before the run was killed after \
                 {}, longer than the wait asked for ({}): it waits far longer than asked, or hangs",
                humantime::format_duration(after),
                humantime::format_duration(wait)
            )));
        }
        // Whether a 429 should have been retried is `rate-limit`'s rule, not a timing.
        let owner = if name == "retry-after-rate-limit" {
            " (rate-limit judges that)"
        } else {
            ""
        };
        return on(Finding::Recorded(format!(
            "`{name}`: a {status} with {said} was not retried{owner}"
        )));
    };
    let own_text = |own: Duration| {
        format!(
            "its own first back-off without Retry-After is up to {}",
            ms(own)
        )
    };
    if d + RETRY_AFTER_SLACK >= wait {
        return match own.filter(|o| *o + RETRY_AFTER_SLACK >= wait) {
            // Its own back-off is as long: the wait shows nothing of the header.
            Some(o) => on(Finding::Recorded(format!(
                "`{name}`: waited {} after a {status} with {said}, but {}, so whether it honours \
                 the header is not shown; a `retry_after` longer than that would show it",
                ms(d),
                own_text(o)
            ))),
            None => on(Finding::Held(format!(
                "`{name}`: waited {} after a {status} with {said}",
                ms(d)
            ))),
        };
    }
    // A documented cap, kept: recorded with its number, not judged as ignoring it.
    if let Some(c) = cap.filter(|c| d + RETRY_AFTER_SLACK >= *c) {
        return on(Finding::Recorded(format!(
            "`{name}`: waited {} after a {status} that said {said}, capping it as the profile's \
             `retry_after_cap: {}` documents",
            ms(d),
            humantime::format_duration(c)
        )));
    }
    let what = match (cap, own) {
        (Some(c), _) => format!(
            ", sooner than even its documented cap (`retry_after_cap: {}`)",
            humantime::format_duration(c)
        ),
        // Longer than its own back-off, yet short of the header: it may cap the header,
        // or back off longer after this status (several SDKs use another base for a throttle);
        // either way the wait was not honoured, and which it was is not shown.
        (None, Some(o)) if d > o + RETRY_AFTER_SLACK => format!(
            ": longer than its own first back-off ({}), but short of the header: it caps the \
             header near {}, or backs off longer after a {status} than after a failure without \
             Retry-After; if \
             its documentation gives a cap, give it as `retry_after_cap`",
            ms(o),
            ms(d)
        ),
        (None, Some(o)) => format!(
            ", as its own back-off does ({}): it ignores the header",
            own_text(o)
        ),
        (None, None) => String::new(),
    };
    on(Finding::Broken(format!(
        "`{name}`: retried {} after a {status} that said {said}{what}",
        ms(d)
    )))
    .at(Level::Should)
}
