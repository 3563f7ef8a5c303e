//! `bounded-retries`: when every attempt is answered 502 (a gateway error most clients retry), or
//! every connection is reset (a transport failure, which clients that never retry a 502 retry),
//! the client gives up — with an error — within the profile's bound (`gives_up`: attempts and
//! time).

use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::rules::Fault;
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
        let bounded = |name, planned| {
            let mut situation = Situation::new(name, vec![planned]);
            situation.deadline = Some(ctx.profile.give_up_within().min(ctx.timeout));
            situation
        };
        vec![
            bounded(
                "always-502",
                ctx.planned(AnswerKind::BadGateway, false, Times::Always),
            ),
            bounded(
                "always-reset",
                ctx.plan("reset", Fault::Refuse { reset: true }, Times::Always),
            ),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let max = ctx.profile.max_attempts() as usize;
        runs.iter()
            .map(|run| {
                let n = run.attempts.len();
                let took = human_duration(run.output.elapsed.as_millis() as u64);
                let bound = ctx.profile.give_up_within();
                let every = every_one(run);
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
                            "still retrying when killed after {} ({}, every one {every}): the client does not give up",
                            humantime::format_duration(*after),
                            attempts(n)
                        ),
                    ),
                    (Exit::Code(0), _) => Finding::Broken(format!("exited 0 after {}, every one {every}: the failure is hidden from the caller", attempts(n)),
                    ),
                    (Exit::NotStarted(why), _) => Finding::Undecided(format!("the command did not run: {why}")),
                    (exit, _) if n > max => Finding::Broken(format!("gave up only after {} ({exit}, {took}, every one {every}); the bound is {max}", attempts(n)),
                    ),
                    // Nothing retried, nothing to bound: not a pass on what it never did.
                    (exit, _) if n <= 1 => Finding::Recorded(format!("gave up after its first attempt, without a retry ({every}; {exit}, {took}): no retries to bound")),
                    (exit, _) => Finding::Held(format!("gave up after {} in {took}, every one {every} ({exit})", attempts(n))),
                };
                Judgement::on(run.situation, named(run.situation, finding))
            })
            .collect()
    }
}

/// `finding` with its sentence starting with the situation's name.
fn named(situation: &str, finding: Finding) -> Finding {
    let name = |m: String| format!("`{situation}`: {m}");
    match finding {
        Finding::Held(m) => Finding::Held(name(m)),
        Finding::Broken(m) => Finding::Broken(name(m)),
        Finding::Undecided(m) => Finding::Undecided(name(m)),
        Finding::Skipped(m) => Finding::Skipped(name(m)),
        Finding::Recorded(m) => Finding::Recorded(name(m)),
    }
}

/// What every attempt of `run` got, in words: `answered 502`, `reset`.
fn every_one(run: &CommandRun) -> String {
    match run.faults.first().map(|p| &p.fault) {
        Some(Fault::Refuse { .. }) => "reset".into(),
        _ => format!(
            "answered {}",
            run.faults.first().map_or("502", |p| p.name.as_str())
        ),
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
