//! `bounded-retries`: when every attempt is answered 502 (a gateway error most clients retry), the client gives up — with an error —
//! within the profile's bound (`gives_up`: attempts and time).

use idemspec_scenarios::Level;

use super::{about, attempts, ClientCheck, Ctx, Judgement, Observed, Situation};
use crate::client_check::command::Exit;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;
use crate::report::human_duration;

/// See the module documentation.
pub struct BoundedRetries;

impl ClientCheck for BoundedRetries {
    fn about(&self) -> About {
        about(
            "bounded-retries",
            "Retries are bounded: the client gives up, with an error, within the bound",
            Level::Must,
            "article: what the client should do (a bounded number of retries)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        let mut situation = Situation::new(
            "always-502",
            vec![ctx.plan("502", ctx.bad_gateway(), Times::Always)],
        );
        situation.deadline = Some(ctx.profile.give_up_within().min(ctx.timeout));
        vec![situation]
    }

    fn judge(&self, ctx: &Ctx, runs: &[Observed]) -> Vec<Judgement> {
        let max = ctx.profile.max_attempts() as usize;
        runs.iter()
            .map(|run| {
                let n = run.attempts.len();
                let took = human_duration(run.output.elapsed.as_millis() as u64);
                let finding = match &run.output.exit {
                    Exit::TimedOut(after) => Finding::Broken(format!(
                            "still retrying when killed after {} ({}, every one answered 502): the client does not give up",
                            humantime::format_duration(*after),
                            attempts(n)
                        ),
                    ),
                    Exit::Code(0) => Finding::Broken(format!("exited 0 after {}, every one answered 502: the failure is hidden from the caller", attempts(n)),
                    ),
                    Exit::NotStarted(why) => Finding::Undecided(format!("the command did not run: {why}")),
                    exit if n > max => Finding::Broken(format!("gave up only after {} ({exit}, {took}); the bound is {max}", attempts(n)),
                    ),
                    // Nothing retried, nothing to bound: not a pass on what it never did.
                    exit if n <= 1 => Finding::Recorded(format!("gave up after its first attempt, without a retry ({exit}, {took}): no retries to bound")),
                    exit => Finding::Held(format!("gave up after {} in {took} ({exit})", attempts(n))),
                };
                Judgement::on(run.situation, finding)
            })
            .collect()
    }
}
