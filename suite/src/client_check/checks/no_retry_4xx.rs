//! `no-retry-4xx`: a mismatch (the contract's status for "same key, different request") and other
//! permanent 4xx are not retried: the same request with the same key gets the same answer. The
//! permanent 4xx carries `Retry-After: 1` ([`PERMANENT_RETRY_AFTER`]): a wait does not make a
//! refusal of the request itself retryable (some SDKs retry any status that carries one).

use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;

/// The `Retry-After` the permanent 4xx carries (one second, in the profile's
/// `retry_after_header`). Not the mismatch's: its status is often the in-flight 409's, which a
/// client tells apart by `Retry-After` alone.
pub const PERMANENT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// See the module documentation.
pub struct NoRetry4xx;

impl ClientCheck for NoRetry4xx {
    fn about(&self) -> About {
        about(
            "no-retry-4xx",
            "A mismatch and other permanent 4xx are not retried",
            Level::Must,
            "article: what the client should do (a mismatch is a bug, not a retry); ietf-draft-07 §2.7 (error handling); stripe: idempotency; RFC 9110 §10.2.3 (Retry-After asks for a wait, it does not make a request acceptable)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        vec![
            Situation::new(
                "mismatch",
                vec![ctx.planned(AnswerKind::Mismatch, false, Times::Always)],
            ),
            Situation::new(
                "permanent-4xx",
                vec![ctx.planned_wait(
                    AnswerKind::Invalid,
                    Some(PERMANENT_RETRY_AFTER),
                    Times::Always,
                )],
            ),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let mut found = Vec::new();
        for run in runs {
            let status = run.attempts[0].client_status.unwrap_or_default();
            let n = run.attempts.len();
            let waited = if run.situation == "permanent-4xx" {
                let (name, value) = ctx.profile.retry_after_field(PERMANENT_RETRY_AFTER);
                format!(
                    " (it carried `{name}: {value}`, which does not make a refusal of the request retryable)"
                )
            } else {
                String::new()
            };
            found.push(Judgement::on(
                run.situation,
                if run.retried() {
                    Finding::Broken(format!(
                            "`{}`: a {status} was retried {} times ({}): it is permanent{waited}, so the retries can never succeed and only load the server",
                            run.situation,
                            n - 1,
                            run.output.exit
                        ),
                    )
                } else {
                    Finding::Held(format!("`{}`: a {status} was not retried", run.situation))
                },
            ));
            if run.output.exit.succeeded() {
                found.push(Judgement::on(
                    run.situation,
                    Finding::Recorded(format!(
                        "`{}`: the command exited 0 after a {status}: does the error reach the caller?",
                        run.situation
                    )),
                ));
            }
        }
        found
    }
}
