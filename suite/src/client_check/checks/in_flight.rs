//! `in-flight`: a 409 in flight (the contract's in-flight status, with `Retry-After`) is waited
//! out and retried, not reported as a failure; the retry's key is `same-key`'s to judge and its
//! timing `backoff`'s (the sentence says whether the retry came after the wait). An API that
//! keeps no in-flight state (`in_flight_state: false`) never sends that answer: recorded.

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, retried_after_wait, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct InFlight;

impl ClientCheck for InFlight {
    fn about(&self) -> About {
        about(
            "in-flight",
            "A 409 in flight is waited out and retried, not reported as a failure",
            Level::Should,
            "article: the client gave up too early; ietf-draft-07 §2.7 (a request still in progress)",
        )
    }

    /// None when the profile says the API keeps no in-flight state: it never sends that answer.
    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        if !ctx.profile.in_flight_state() {
            return Vec::new();
        }
        vec![Situation::new(
            "in-flight",
            vec![ctx.planned(AnswerKind::InFlight, true, Times::First(1))],
        )]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        if !ctx.profile.in_flight_state() {
            return vec![Judgement::new(Finding::Recorded(
                "the profile says the API keeps no in-flight state (`in_flight_state: false`): \
                 it never answers a retry with a conflict in flight, so what the client does \
                 with one is not judged"
                    .into(),
            ))];
        }
        runs.iter()
            .map(|run| {
                let status = run.attempts[0].client_status.unwrap_or_default();
                let gave_up = format!(
                    "{}): the operation is completing on the server, the caller sees an error, and \
                     a caller that tries again{} creates a second",
                    // Its own last words say whether it gave up or could not read the answer.
                    last_words(run)
                        .map(|w| format!("; it said {w:?}"))
                        .unwrap_or_default(),
                    // Of a key only where the client sent one.
                    if run.attempts[0].key.is_some() {
                        " with a new key"
                    } else {
                        ""
                    }
                );
                let what = format!("{status} in flight");
                Judgement::on(run.situation, retried_after_wait(ctx, run, &what, &gave_up))
            })
            .collect()
    }
}

/// The last line the command wrote (stderr, else stdout), at most 160 characters.
fn last_words(run: &CommandRun) -> Option<String> {
    let excerpt = run.output.excerpt()?;
    let line = excerpt.rsplit(" ⏎ ").next()?.trim();
    let line: String = line.chars().take(160).collect();
    (!line.is_empty()).then_some(line)
}
