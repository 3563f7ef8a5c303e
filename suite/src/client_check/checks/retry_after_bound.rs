//! `retry-after-bound`: a `Retry-After` of an hour does not hang the caller. The client retries
//! within a short bound (it caps the wait or ignores it: which, and after how long, is said), or
//! gives up at once and surfaces the error (it honours the wait by handing it to its caller); a
//! client still waiting, with no retry and no exit, at the bound follows a wait the server chose
//! past any bound its caller can rely on.
//!
//! Decided within [`BOUND`] of the answer by observing, never by waiting the hour: the command
//! is stopped at the bound, however long it took to start and send its first attempt. Two runs
//! answered a 503 without `Retry-After` measure the client's own back-off after that status,
//! which tells a retry that ignored the header (as soon as that back-off) from one that capped it
//! (later), and whether the client retries a 503 at all (a client that gives up on every 503
//! shows nothing about the wait). SHOULD: sleeping the hour duplicates nothing and
//! leaks nothing; it blocks the caller, and a CI job running it hangs until its own timeout kills
//! it mid-operation.

use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, delays, ClientCheck, CommandRun, Ctx, Judgement, Situation, WAIT_SLACK};
use crate::client_check::command::Exit;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;
use crate::report::human_duration;

/// See the module documentation.
pub struct RetryAfterBound;

/// The wait the long answer asks for: an hour (the longest `retry_after` a profile may set).
const LONG_WAIT: Duration = Duration::from_secs(3600);
/// How long the client is watched after the hour's answer: 5 s (the run's deadline still
/// bounds the whole run). Long enough for a client's own back-off of a few hundred ms, or a cap of
/// a few seconds, on a loaded machine; short enough that a client that sleeps costs a CI run 5 s.
pub const BOUND: Duration = Duration::from_secs(5);
/// A retry no later than three times the client's own back-off after a plain 503, and this, is
/// "as soon as its own back-off": the header was ignored. A jittered draw (0.25–1.75 times the
/// base) is at most seven times another, so the longest of two draws, tripled, covers a third.
const IGNORED_MARGIN: Duration = Duration::from_millis(250);
/// The run answered a 503 with `Retry-After` of an hour.
const LONG: &str = "unavailable-for-an-hour";
/// The runs answered a 503 without `Retry-After`: the client's own back-off after that status.
const PLAIN: [&str; 2] = ["unavailable-plain-first", "unavailable-plain-second"];

impl ClientCheck for RetryAfterBound {
    fn about(&self) -> About {
        about(
            "retry-after-bound",
            "A Retry-After of an hour does not hang the caller: the client caps or ignores it, or gives up with the error",
            Level::Should,
            "article: what the client should do (a bounded number of retries, then give up); RFC 9110 §10.2.3 (Retry-After: how long the client ought to wait)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        let mut long = Situation::new(
            LONG,
            vec![ctx.planned_wait(AnswerKind::Unavailable, Some(LONG_WAIT), Times::First(1))],
        );
        long.after_answer = Some(BOUND);
        let plain = |name| {
            Situation::new(
                name,
                vec![ctx.planned(AnswerKind::Unavailable, false, Times::First(1))],
            )
        };
        std::iter::once(long)
            .chain(PLAIN.iter().map(|name| plain(name)))
            .collect()
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let plain: Vec<&CommandRun> = runs
            .iter()
            .filter(|r| PLAIN.contains(&r.situation))
            .collect();
        // The client's own first back-off after a plain 503: the longest over the runs.
        let own = plain
            .iter()
            .filter_map(|r| delays(&r.attempts).first().copied())
            .max();
        runs.iter()
            .filter(|r| r.situation == LONG)
            .map(|long| {
                Judgement::new(judge_long(ctx, long, own, plain.len()))
                    .on_steps(std::iter::once(LONG).chain(PLAIN))
            })
            .collect()
    }
}

fn ms(d: Duration) -> String {
    human_duration(d.as_millis() as u64)
}

/// What the client did after the hour's `Retry-After` of `long`, given its own first back-off
/// after a plain 503 (`own`, `None` when none of the `plain` runs retried).
fn judge_long(ctx: &Ctx, long: &CommandRun, own: Option<Duration>, plain: usize) -> Finding {
    let status = long.attempts[0].client_status.unwrap_or_default();
    let (header, value) = ctx.profile.retry_after_field(LONG_WAIT);
    let said = format!("{status} that said `{header}: {value}`");
    if let Some(d) = delays(&long.attempts).first().copied() {
        return Finding::Held(retried_soon(ctx, &said, d, own, status));
    }
    let took = ms(long.output.elapsed);
    match &long.output.exit {
        Exit::AtBound(_) | Exit::TimedOut(_) => still_waiting(long, &said, own, ctx),
        Exit::Code(0) => Finding::Broken(format!(
            "exited 0 after a {said}, without a retry: the request was never done, and the \
             caller is told it was"
        )),
        // It gives up on any 503: nothing about the wait is shown.
        exit if own.is_none() && plain > 0 => Finding::Recorded(format!(
            "gave up on a {said} ({exit}, after {took}), as it gave up on a {status} without \
             `{header}`: it retries no {status}, so what it does with a long wait is not shown"
        )),
        exit => Finding::Held(format!(
            "gave up within the bound on a {said} ({exit}, after {took} in all), though it \
             retries a {status} without one: it hands the wait to its caller instead of sleeping \
             it"
        )),
    }
}

/// A retry `d` after the hour's answer: capped at the documented cap, capped near `d`, or the
/// header ignored (as soon as the client's own back-off `own`).
fn retried_soon(ctx: &Ctx, said: &str, d: Duration, own: Option<Duration>, status: u16) -> String {
    let head = format!("did not wait the hour: retried {} after a {said}", ms(d));
    let cap = ctx.profile.retry_after_cap();
    match own {
        Some(o) if d <= o * 3 + IGNORED_MARGIN => format!(
            "{head}, about as soon as after a {status} without it (up to {}): it ignores a wait \
             this long",
            ms(o)
        ),
        _ if cap.is_some_and(|c| d + WAIT_SLACK >= c) => format!(
            "{head}: it caps the wait, as the profile's `retry_after_cap: {}` documents",
            humantime::format_duration(cap.unwrap_or_default())
        ),
        Some(o) => format!(
            "{head}, longer than after a {status} without it (up to {}): it caps the wait near {}",
            ms(o),
            ms(d)
        ),
        None => format!(
            "{head}; it retried no {status} without the header, so whether it caps the wait or \
             ignores it is not shown"
        ),
    }
}

/// The long run was stopped at the bound (or killed at the run's deadline) with no retry: the
/// client was still waiting. Undecided when its own back-off after a plain 503 could itself have
/// run past that; recorded when the profile documents a cap it may still have been waiting out.
fn still_waiting(long: &CommandRun, said: &str, own: Option<Duration>, ctx: &Ctx) -> Finding {
    let killed = long.output.started + long.output.elapsed;
    let since: Duration = (killed - long.attempts[0].end())
        .try_into()
        .unwrap_or_default();
    // What stopped it: the bound, or the run's deadline where that came first.
    let stopped = match long.output.exit {
        Exit::TimedOut(after) => format!(
            "killed at the run's deadline ({})",
            humantime::format_duration(after)
        ),
        Exit::AtBound(after) => format!(
            "stopped at the bound ({})",
            humantime::format_duration(after)
        ),
        ref exit => format!("ended: {exit}"),
    };
    if let Some(o) = own.filter(|o| *o * 3 + IGNORED_MARGIN >= since) {
        return Finding::Undecided(format!(
            "no retry {} after a {said}, {stopped}; its own back-off after a 503 without it is \
             up to {}, too long for the bound to tell a client that ignores the header from one \
             that waits it out",
            ms(since),
            ms(o)
        ));
    }
    let waiting = format!(
        "still waiting, with no retry and no exit, {} after a {said}, {stopped}",
        ms(since)
    );
    match ctx.profile.retry_after_cap() {
        Some(c) if c + WAIT_SLACK >= since => Finding::Recorded(format!(
            "{waiting}, as the profile's `retry_after_cap: {}` allows: its caller waits up to \
             that long for each such answer",
            humantime::format_duration(c)
        )),
        Some(c) => Finding::Broken(format!(
            "{waiting}: longer than the profile's `retry_after_cap: {}` documents; its caller \
             (a CI job) may wait the hour",
            humantime::format_duration(c)
        )),
        None => Finding::Broken(format!(
            "{waiting}: it follows the server's wait past the bound, so without a cap its caller \
             (a CI job) waits the hour, and a cap above {}, if it has one, is not seen; cap it \
             (and give the cap as `retry_after_cap`) or give up and surface the wait",
            ms(since)
        )),
    }
}
