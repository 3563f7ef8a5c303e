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

use super::{about, retried_after_wait, ClientCheck, CommandRun, Ctx, Judgement, Situation};
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
    let status = run.attempts[0].client_status.unwrap_or_default();
    retried_after_wait(
        ctx,
        run,
        &status.to_string(),
        "): the server asked for the request again after the wait, and the caller gets an error \
         for a request that would have succeeded",
    )
}
