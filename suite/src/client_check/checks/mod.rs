//! The client checks, one file each, behind [`ClientCheck`]: the situations a check runs the
//! command in, and how it judges what was observed (`docs/client.md` lists them with their
//! sources).

mod backoff;
mod backoff_timing;
mod bounded_retries;
mod distinct_keys;
mod in_flight;
mod key_format;
mod key_present;
mod no_retry_4xx;
mod rate_limit;
mod restart_key;
mod retry_after_bound;
mod same_key;

use std::time::Duration;

use idemspec_scenarios::Level;

use super::attempt::Attempt;
use super::situation::{CommandRun, Situation};
use super::Ctx;
use crate::client_check::command::Exit;
use crate::engine::{About, Finding, Judgement};

/// One client check.
pub trait ClientCheck: Send + Sync {
    /// What it is: id, title, level, source.
    fn about(&self) -> About;
    /// The situations it runs the command in (at once, up to the run's parallelism).
    fn situations(&self, ctx: &Ctx) -> Vec<Situation>;
    /// Situations that depend on what the runs so far showed, run after them; asked again, with
    /// every run so far, until it returns none (at most [`FOLLOW_UPS`] times). `backoff` takes
    /// more samples where a verdict is near its line, and sends a `Retry-After` longer than the
    /// back-off it measured. None by default.
    fn follow_up(&self, _ctx: &Ctx, _so_far: &[CommandRun]) -> Vec<Situation> {
        Vec::new()
    }
    /// What it finds in the situations where the command made at least one attempt (a situation
    /// without any is undecided before this is called); a finding is at the check's level and
    /// source unless it says otherwise, and names the situations behind it.
    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement>;
}

/// How many rounds of [`ClientCheck::follow_up`] a check gets, at most.
pub const FOLLOW_UPS: usize = 3;

/// Every client check, in the order they are reported.
pub fn catalogue() -> Vec<Box<dyn ClientCheck>> {
    vec![
        Box::new(key_present::KeyPresent),
        Box::new(same_key::SameKey),
        Box::new(distinct_keys::DistinctKeys),
        Box::new(key_format::KeyFormat),
        Box::new(backoff::Backoff),
        Box::new(no_retry_4xx::NoRetry4xx),
        Box::new(bounded_retries::BoundedRetries),
        Box::new(in_flight::InFlight),
        Box::new(rate_limit::RateLimit),
        Box::new(retry_after_bound::RetryAfterBound),
        Box::new(restart_key::RestartKey),
    ]
}

/// The ids, titles, levels and sources of every client check (for `--only`, docs and tests).
pub fn list() -> Vec<About> {
    catalogue().iter().map(|c| c.about()).collect()
}

/// An `About` for a check.
fn about(id: &str, title: &str, level: Level, reference: &str) -> About {
    About {
        id: id.to_owned(),
        title: title.to_owned(),
        level,
        reference: reference.to_owned(),
    }
}

/// The delays between consecutive attempts.
fn delays(attempts: &[Attempt]) -> Vec<Duration> {
    attempts
        .windows(2)
        .map(|w| w[1].delay_after(&w[0]))
        .collect()
}

/// Delays in words: `210ms, 405ms, 803ms`.
fn delays_text(delays: &[Duration]) -> String {
    delays
        .iter()
        .map(|d| crate::report::human_duration(d.as_millis() as u64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `1 attempt`, `3 attempts`.
fn attempts(n: usize) -> String {
    format!("{n} attempt{}", if n == 1 { "" } else { "s" })
}

/// How much sooner than the wait an answer asked for a retry may come and still be said to have
/// waited it out (clock granularity: a client that sleeps exactly the header's seconds), as
/// `backoff` reads it.
const WAIT_SLACK: Duration = Duration::from_millis(50);

/// A retry `delay` after an answer that asked for `wait` in `said` (`Retry-After: 2`), in words:
/// `after 2.1s, the Retry-After: 2 waited out`, or `after 502ms, sooner than its Retry-After: 2
/// (backoff judges the wait)`. Whether the wait was kept is backoff's rule; the sentence only
/// says which it was.
fn retry_delay_text(delay: Duration, wait: Duration, said: &str) -> String {
    let after = crate::report::human_duration(delay.as_millis() as u64);
    if delay + WAIT_SLACK >= wait {
        format!("after {after}, the `{said}` waited out")
    } else {
        format!("after {after}, sooner than its `{said}` asked (backoff judges the wait)")
    }
}

/// What the client did with the one answer of `run` that asked it to retry after a wait (the
/// profile's `retry_after`, said as `Retry-After: 1`): retried and completed (held, saying
/// whether the wait was kept), retried but ended otherwise (undecided), still waiting out a wait
/// longer than the run (recorded), still running without a retry at the deadline, exited 0
/// without one, or gave up (broken; `gave_up` gives what giving up costs, after the exit). `what`
/// names the answer in a sentence (`409 in flight`). One ladder for every answer that asks for a
/// retry (in-flight's 409, rate-limit's 429), so they read alike.
fn retried_after_wait(ctx: &Ctx, run: &CommandRun, what: &str, gave_up: &str) -> Finding {
    let wait = ctx.profile.retry_after();
    let (header, value) = ctx.profile.retry_after_field(wait);
    let said = format!("{header}: {value}");
    let run_took = humantime::format_duration(ctx.timeout);
    let status = run.attempts[0].client_status.unwrap_or_default();
    match (delays(&run.attempts).first(), &run.output.exit) {
        (Some(d), exit) if exit.succeeded() => Finding::Held(format!(
            "retried the {what} and completed (the retry came {})",
            retry_delay_text(*d, wait, &said)
        )),
        (Some(_), exit) => Finding::Undecided(format!(
            "retried after the {status} and was answered the success, but the command ended with \
             {exit}"
        )),
        // Still waiting out a wait longer than the run: nothing to judge.
        (None, Exit::TimedOut(_)) if wait >= ctx.timeout => Finding::Recorded(format!(
            "no retry before the run's deadline ({run_took}), which came before the {what}'s \
             `{said}` ended: whether it waits it out and retries is not seen"
        )),
        (None, Exit::TimedOut(_)) => Finding::Broken(format!(
            "never retried the {what} that said `{said}`: it was still running, without a retry, \
             when killed after {run_took}"
        )),
        (None, Exit::Code(0)) => Finding::Broken(format!(
            "exited 0 after a {what} that said `{said}`, without a retry: the request was never \
             done, and the caller is told it was"
        )),
        (None, exit) => Finding::Broken(format!(
            "gave up on a {what} that said `{said}` ({exit}{gave_up}"
        )),
    }
}

/// `key "k"` or `no key`.
fn key_text(key: Option<&str>) -> String {
    key.map_or("no key".into(), |k| format!("{k:?}"))
}
