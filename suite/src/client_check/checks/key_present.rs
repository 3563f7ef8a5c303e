//! `key-present`: the mutating request carries a key — judged where it matters, when the client
//! retries it.

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::rules::Fault;
use idemspec_scenarios::Level;

use super::{about, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct KeyPresent;

impl ClientCheck for KeyPresent {
    fn about(&self) -> About {
        about(
            "key-present",
            "The mutating request carries an idempotency key whenever the client may retry it",
            Level::Must,
            "article: what the client should do (a key on every mutating request); ietf-draft-07 §2; stripe: idempotency",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        // The kinds of failure clients retry: gateway errors (clients retry different ones), a
        // broken connection, a timeout (after which the server did the work).
        vec![
            Situation::new(
                "after-502",
                vec![ctx.planned(AnswerKind::BadGateway, false, Times::First(1))],
            ),
            Situation::new(
                "after-503",
                vec![ctx.planned(AnswerKind::Unavailable, false, Times::First(1))],
            ),
            Situation::new(
                "after-reset",
                vec![ctx.plan("reset", Fault::Refuse { reset: true }, Times::First(1))],
            ),
            Situation::new(
                "after-timeout",
                vec![ctx.plan("hang", Fault::Hang { forward: true }, Times::First(1))],
            ),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let header = ctx.key_words();
        runs.iter()
            .map(|run| {
                let n = run.attempts.len();
                let missing = run.attempts.iter().filter(|a| a.key.is_none()).count();
                let unread: Vec<&str> = run
                    .attempts
                    .iter()
                    .filter(|a| a.key.is_none())
                    .filter_map(|a| a.key_unread.as_deref())
                    .collect();
                let finding = if missing > 0 && unread.len() == missing {
                    // Not seen is not absent: the request may carry a key nobody could read.
                    Finding::Undecided(format!(
                        "`{}`: the key in {header} could not be read from {missing} of {n} attempts ({}): whether they carried one is not known",
                        run.situation,
                        unread[0]
                    ))
                } else if missing == 0 {
                    Finding::Held(format!(
                        "`{}`: every attempt ({n}) carried {header}",
                        run.situation
                    ))
                } else if run.retried() {
                    Finding::Broken(format!(
                            "`{}`: the client retried {} without {header} ({missing} of {n} attempts had none): the server cannot tell a retry from a new request, so each retry may create another resource",
                            run.situation,
                            ctx.operation_label()
                        ),
                    )
                } else {
                    Finding::Recorded(format!(
                        "`{}`: sent without {header} and not retried: safe only while the client never retries",
                        run.situation
                    ))
                };
                Judgement::on(run.situation, finding)
            })
            .collect()
    }
}
