//! `restart-key`: a client that crashed after the server did the work, and before it heard back,
//! sends the same key when it runs again (the article's "keep it across retries, and across
//! process restarts if the operation matters"). Only a client that persists the key before the
//! first attempt can; most keep it in memory, so this is recorded (INFO) unless the profile
//! claims persistence (`persists_keys: true`), and then judged at SHOULD. Whose code made the
//! new key, the SDK's or the caller's, is the profile's `key_made_by`.

use idemspec_scenarios::client_profile::KeyMadeBy;
use idemspec_scenarios::rules::Fault;
use idemspec_scenarios::Level;

use super::{about, key_text, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::command::Exit;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct RestartKey;

impl ClientCheck for RestartKey {
    fn about(&self) -> About {
        about(
            "restart-key",
            "After a crash the server outlived, the client's next run sends the same key",
            Level::Should,
            "article: what the client should do (keep the key across process restarts if the operation matters)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        if !ctx.canned {
            return Vec::new();
        }
        let mut restart = Situation::new(
            "restart",
            vec![ctx.plan("held", Fault::Hang { forward: true }, Times::First(1))],
        );
        restart.restart = true;
        vec![restart]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        if !ctx.canned {
            return vec![Judgement::new(Finding::Skipped(
                "against `--upstream` idemspec cannot tell when the server did the work, so it \
                 cannot kill the command between the work and the answer"
                    .into(),
            ))];
        }
        runs.iter().map(|run| judge_restart(ctx, run)).collect()
    }
}

fn judge_restart(ctx: &Ctx, run: &CommandRun) -> Judgement {
    let on = |finding| Judgement::on(run.situation, finding);
    let Some(restarted) = &run.restarted else {
        return on(Finding::Undecided("the command was not restarted".into()));
    };
    if run.output.exit != Exit::Stopped {
        return on(Finding::Undecided(format!(
            "the first run ended ({}) before the server had done the work, so there was no \
             crash to survive",
            run.output.exit
        )));
    }
    if restarted.first_run > 1 {
        return on(Finding::Undecided(format!(
            "the first run made {} attempts, though it was killed as soon as the server had done \
             the first one's work: the others came from a process outside its process group, so \
             the restart was not clean",
            restarted.first_run
        )));
    }
    let (first, second) = run.attempts.split_at(restarted.first_run);
    let Some(again) = second.first() else {
        return on(Finding::Undecided(format!(
            "the run after the restart made no {} request ({})",
            ctx.operation_label(),
            restarted.output.exit
        )));
    };
    let before = first[0].key.as_deref();
    let after = again.key.as_deref();
    let claimed = ctx.profile.persists_keys();
    match (before, after) {
        (None, _) | (_, None) => on(Finding::Recorded(format!(
            "`restart`: no key to compare across the restart ({} before, {} after; key-present \
             judges that)",
            key_text(before),
            key_text(after)
        ))),
        (Some(b), Some(a)) if a == b => on(Finding::Held(format!(
            "`restart`: the run after the crash sent the first run's key {b:?}: the server \
             replays the work it did instead of doing it again"
        ))),
        (Some(b), Some(a)) => {
            let cost = format!(
                "`restart`: the first run sent {b:?} and was killed after the server did the \
                 work; the next run sent {a:?}, a new key, so the server does the work again: a \
                 second resource"
            );
            // Whose code made the new key: the SDK's, or the caller's, which passed it in.
            let whose = match ctx.profile.key_made_by() {
                KeyMadeBy::Sdk => "an SDK that keeps them in memory cannot do otherwise",
                KeyMadeBy::Caller => {
                    "the caller makes the key (`key_made_by: caller`): the command's own code \
                     made a new one, and only it could have kept the first across the restart"
                }
            };
            if claimed {
                on(Finding::Broken(format!(
                    "{cost}, although the profile says the client persists its keys \
                     (`persists_keys: true`)"
                )))
            } else {
                on(Finding::Recorded(format!(
                    "{cost} (the profile does not claim the client persists its keys; {whose})"
                )))
            }
        }
    }
}
