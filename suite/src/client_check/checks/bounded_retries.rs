//! `bounded-retries`: when every attempt is answered 502 (a gateway error most clients retry), the client gives up — with an error —
//! within the profile's bound (`gives_up`: attempts and time).

use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, attempts, delays, ClientCheck, CommandRun, Ctx, Judgement, Situation};
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
            vec![ctx.planned(AnswerKind::BadGateway, false, Times::Always)],
        );
        situation.deadline = Some(ctx.profile.give_up_within().min(ctx.timeout));
        vec![situation]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let max = ctx.profile.max_attempts() as usize;
        runs.iter()
            .map(|run| {
                let n = run.attempts.len();
                let took = human_duration(run.output.elapsed.as_millis() as u64);
                let bound = ctx.profile.give_up_within();
                let finding = match (&run.output.exit, lingered(run)) {
                    // The run's deadline (`--command-timeout`) came before the profile's bound:
                    // the client still had time, so a quiet spell may be its next back-off wait
                    // (a jittered doubling can be several times its longest wait so far), not a
                    // process that stopped retrying and lingers.
                    (Exit::TimedOut(after), _) if *after < bound => Finding::Undecided(format!(
                        "killed after {}, the run's deadline (`--command-timeout`), before the \
                         profile's bound `gives_up.within: {}` ({}): whether it gives up within \
                         its bound is not seen",
                        humantime::format_duration(*after),
                        humantime::format_duration(bound),
                        attempts(n)
                    )),
                    (Exit::TimedOut(after), Some((idle, longest))) => {
                        Finding::Broken(format!(
                            "stopped retrying but did not exit: its last attempt ended {} before it was killed after {} ({}), longer than three times any wait between its attempts (at most {}): the process lingers, and a CI job running it hangs",
                            human_duration(idle.as_millis() as u64),
                            humantime::format_duration(*after),
                            attempts(n),
                            human_duration(longest.as_millis() as u64)
                        ))
                    }
                    (Exit::TimedOut(after), None) => Finding::Broken(format!(
                            "still retrying when killed after {} ({}, every one answered 502): the client does not give up",
                            humantime::format_duration(*after),
                            attempts(n)
                        ),
                    ),
                    (Exit::Code(0), _) => Finding::Broken(format!("exited 0 after {}, every one answered 502: the failure is hidden from the caller", attempts(n)),
                    ),
                    (Exit::NotStarted(why), _) => Finding::Undecided(format!("the command did not run: {why}")),
                    (exit, _) if n > max => Finding::Broken(format!("gave up only after {} ({exit}, {took}); the bound is {max}", attempts(n)),
                    ),
                    // Nothing retried, nothing to bound: not a pass on what it never did.
                    (exit, _) if n <= 1 => Finding::Recorded(format!("gave up after its first attempt, without a retry ({exit}, {took}): no retries to bound")),
                    (exit, _) => Finding::Held(format!("gave up after {} in {took} ({exit})", attempts(n))),
                };
                Judgement::on(run.situation, finding)
            })
            .collect()
    }
}

/// The least quiet time after the last attempt that reads as "stopped retrying": 2 s.
const LINGER_MIN: Duration = Duration::from_secs(2);

/// For a run killed at its deadline: how long it had been quiet since its last attempt ended, and
/// its longest wait between attempts, where the quiet was longer than three times that wait and
/// than [`LINGER_MIN`]: the client had stopped retrying, but its process had not exited. Asked
/// only of a run killed at the profile's bound, when it should have exited either way.
fn lingered(run: &CommandRun) -> Option<(Duration, Duration)> {
    let last = run.attempts.last()?;
    let killed = run.output.started + run.output.elapsed;
    let idle: Duration = (killed - last.end()).try_into().ok()?;
    let longest = delays(&run.attempts).into_iter().max().unwrap_or_default();
    (idle > LINGER_MIN && idle > longest * 3).then_some((idle, longest))
}
