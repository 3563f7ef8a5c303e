//! `rate-limit`: a 429 with `Retry-After` (the profile's `retry_after`) is retried, not reported
//! as a failure. The server asks for the request again after the wait (RFC 6585 §4: it "MAY
//! include a Retry-After header indicating how long to wait before making a new request"), and
//! the article's client retries what may succeed later; a client that gives up hands its caller
//! an error for a request that would have succeeded. SHOULD: nothing is duplicated and nothing
//! leaks when it gives up, and the article names network failures and 5xx, not 429, as what to
//! retry. The retry's key is `same-key`'s and its timing `backoff`'s, whose
//! `retry-after-rate-limit` run is the one place a 429 was judged before (on its wait).

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, delays, retry_delay_text, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::command::Exit;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct RateLimit;

impl ClientCheck for RateLimit {
    fn about(&self) -> About {
        about(
            "rate-limit",
            "A 429 with Retry-After is retried after the wait, not reported as a failure",
            Level::Should,
            "RFC 6585 §4 (429 Too Many Requests: Retry-After, how long to wait before a new request); RFC 9110 §10.2.3",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        vec![Situation::new(
            "rate-limited",
            vec![ctx.planned(AnswerKind::RateLimited, true, Times::First(1))],
        )]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        runs.iter()
            .map(|run| Judgement::on(run.situation, judge_run(ctx, run)))
            .collect()
    }
}

/// What the client did with the one 429 of `run`.
fn judge_run(ctx: &Ctx, run: &CommandRun) -> Finding {
    let wait = ctx.profile.retry_after();
    let (header, value) = ctx.profile.retry_after_field(wait);
    let said = format!("{header}: {value}");
    let status = run.attempts[0].client_status.unwrap_or_default();
    let run_took = humantime::format_duration(ctx.timeout);
    match (delays(&run.attempts).first(), &run.output.exit) {
        (Some(d), exit) if exit.succeeded() => Finding::Held(format!(
            "retried the {status} and completed (the retry came {})",
            retry_delay_text(*d, wait, &said)
        )),
        (Some(_), exit) => Finding::Undecided(format!(
            "retried after the {status} and was answered the success, but the command ended with \
             {exit}"
        )),
        // Still waiting out a wait longer than the run: nothing to judge.
        (None, Exit::TimedOut(_)) if wait >= ctx.timeout => Finding::Recorded(format!(
            "no retry before the run's deadline ({run_took}), which came before the {status}'s \
             `{said}` ended: whether it retries is not seen"
        )),
        (None, Exit::TimedOut(_)) => Finding::Broken(format!(
            "never retried the {status} that said `{said}`: it was still running, without a \
             retry, when killed after {run_took}"
        )),
        (None, Exit::Code(0)) => Finding::Broken(format!(
            "exited 0 after a {status} that said `{said}`, without a retry: the request was never \
             done, and the caller is told it was"
        )),
        (None, exit) => Finding::Broken(format!(
            "gave up on a {status} that said `{said}` ({exit}): the server asked for the request \
             again after the wait, and the caller gets an error for a request that would have \
             succeeded"
        )),
    }
}
