//! `in-flight`: a 409 in flight (the contract's in-flight status, with `Retry-After`) is waited
//! out and retried, not reported as a failure; the retry's key is `same-key`'s to judge and its
//! timing `backoff`'s (the sentence says whether the retry came after the wait). An API that
//! keeps no in-flight state (`in_flight_state: false`) never sends that answer: recorded.

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, delays, retry_delay_text, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::command::Exit;
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
        let wait = ctx.profile.retry_after();
        let (header, value) = ctx.profile.retry_after_field(wait);
        let said = format!("{header}: {value}");
        runs.iter()
            .map(|run| {
                let status = run.attempts[0].client_status.unwrap_or_default();
                let killed = matches!(run.output.exit, Exit::TimedOut(_));
                let finding = match (delays(&run.attempts).first(), run.output.exit.succeeded()) {
                    // Still waiting out a Retry-After longer than the run: nothing to judge.
                    (None, _) if killed && wait >= ctx.timeout => Finding::Recorded(format!(
                        "no retry before the run's deadline ({}), which came before the {status}'s \
                         Retry-After of {} ended: whether it waits it out and retries is not seen",
                        humantime::format_duration(ctx.timeout),
                        humantime::format_duration(wait)
                    )),
                    (None, _) if killed => Finding::Broken(format!(
                        "never retried the {status} in flight: it was still running, without a \
                         retry, when killed after {} (Retry-After was {})",
                        humantime::format_duration(ctx.timeout),
                        humantime::format_duration(wait)
                    )),
                    (None, _) => Finding::Broken(format!(
                            "gave up on a {status} in flight ({}{}): the operation is completing on the server, the caller sees an error, and a caller that tries again{} creates a second",
                            run.output.exit,
                            // Its own last words say whether it gave up or could not read the answer.
                            last_words(run).map(|w| format!("; it said {w:?}")).unwrap_or_default(),
                            // Of a key only where the client sent one.
                            if run.attempts[0].key.is_some() { " with a new key" } else { "" }
                        ),
                    ),
                    (Some(d), true) => Finding::Held(format!(
                        "retried the {status} in flight and completed (the retry came {})",
                        retry_delay_text(*d, wait, &said)
                    )),
                    (Some(_), false) => Finding::Undecided(format!(
                        "retried after the {status} and was answered the success, but the command ended with {}",
                        run.output.exit
                    )),
                };
                Judgement::on(run.situation, finding)
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
