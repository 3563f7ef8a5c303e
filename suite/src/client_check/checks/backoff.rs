//! `backoff`: retries wait, and wait longer each time, with jitter; a `Retry-After` on a 409 in
//! flight, a 429 or a 503 is honoured.
//!
//! Timing is judged by what the recognised strategies (exponential with a random factor, full,
//! equal and decorrelated jitter) guarantee, read so that a loaded machine, which only ever makes
//! a delay longer and only now and then, cannot make a fixed delay pass: "no backoff" is an upper
//! quartile of the delays under [`AT_ONCE`] (full jitter draws some delays near zero); growth is
//! the envelope (the longest delay at each retry, over the runs) ending longer than it began by
//! [`GROWTH`] and a quarter; jitter is, at some retry whose median delay is at least [`AT_ONCE`]
//! (shorter ones are spread by scheduling alone), the runs' median delay longer than their
//! shortest by [`JITTER`] and [`JITTER_SHARE`] of it — a random draw spreads the delays both ways,
//! while a late wake-up moves one run and leaves the median where a fixed delay puts it.

use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::Level;

use super::{about, delays, delays_text, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::command::Exit;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;
use crate::report::human_duration;

/// See the module documentation.
pub struct Backoff;

/// Retries this soon after the previous answer (three in four of them) did not back off.
const AT_ONCE: Duration = Duration::from_millis(100);
/// At one retry, the runs' median delay this much longer than their shortest (and by
/// [`JITTER_SHARE`]) shows jitter: a ±10 % draw around 250 ms spreads them by tens of ms, while a
/// fixed delay's median stays within a few ms of its shortest (docs/client.md has the rates).
const JITTER: Duration = Duration::from_millis(10);
/// …and by this share of the shortest: one part in twenty-five.
const JITTER_SHARE: u32 = 25;
/// A delay that grows is at least this much longer than the first (and by a quarter): exponential
/// backoff doubles; scheduling noise does not make a constant delay grow by this.
const GROWTH: Duration = Duration::from_millis(50);
/// How much sooner than `Retry-After` a retry may come (clock granularity; a client that sleeps
/// exactly the header's seconds must pass).
const RETRY_AFTER_SLACK: Duration = Duration::from_millis(50);
/// The situations with plain 502s (no `Retry-After`), run six times to compare delays (a median
/// of six ignores the two runs a loaded machine woke late).
const PLAIN: [&str; 6] = [
    "502s-first",
    "502s-second",
    "502s-third",
    "502s-fourth",
    "502s-fifth",
    "502s-sixth",
];

impl ClientCheck for Backoff {
    fn about(&self) -> About {
        about(
            "backoff",
            "Retries back off (growing delays, jitter) and honour Retry-After on a 409 in flight, 429 and 503",
            Level::Must,
            "article: what the client should do (exponential backoff with jitter); RFC 9110 §10.2.3 (Retry-After)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        let plain = |name| {
            Situation::new(
                name,
                vec![ctx.planned(AnswerKind::BadGateway, false, Times::First(3))],
            )
        };
        PLAIN.iter().map(|name| plain(name)).collect()
    }

    /// The answers with a wait, sent once the plain runs measured the client's own back-off, so
    /// that the wait is longer than it ([`wait_for`]).
    fn follow_up(&self, ctx: &Ctx, first: &[CommandRun]) -> Vec<Situation> {
        let wait = wait_for(ctx, own_back_off(first));
        // Named by what they answer, whose status the profile's `answers` may change.
        let after = |name, kind| {
            Situation::new(
                name,
                vec![ctx.planned_wait(kind, Some(wait), Times::First(1))],
            )
        };
        vec![
            after("retry-after-in-flight", AnswerKind::InFlight),
            after("retry-after-rate-limit", AnswerKind::RateLimited),
            after("retry-after-unavailable", AnswerKind::Unavailable),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let plain: Vec<(&CommandRun, Vec<Duration>)> = runs
            .iter()
            .filter(|r| PLAIN.contains(&r.situation))
            .map(|r| (r, delays(&r.attempts)))
            .collect();
        let mut found = judge_plain(&plain);
        let own = own_back_off(runs);
        for run in runs.iter().filter(|r| !PLAIN.contains(&r.situation)) {
            found.push(judge_retry_after(ctx, run, own));
        }
        found
    }
}

/// The client's own first back-off: the longest first delay after a plain 502, over the plain
/// runs (`None` when it never retried one). A wait this long after a `Retry-After` is no evidence
/// that it read the header.
fn own_back_off(runs: &[CommandRun]) -> Option<Duration> {
    runs.iter()
        .filter(|r| PLAIN.contains(&r.situation))
        .filter_map(|r| delays(&r.attempts).first().copied())
        .max()
}

/// The wait the answers ask for: the profile's `retry_after`, or, where the client's own first
/// back-off is as long, twice that back-off in whole seconds (at most [`LONGEST_WAIT`]), so that
/// waiting it out shows the header was read.
fn wait_for(ctx: &Ctx, own: Option<Duration>) -> Duration {
    let asked = ctx.profile.retry_after();
    let Some(own) = own else { return asked };
    let twice = (own * 2).as_secs_f64().ceil() as u64;
    asked.max(Duration::from_secs(twice).min(LONGEST_WAIT))
}

/// The longest wait [`wait_for`] raises the profile's `retry_after` to.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// What a client did after an answer with `Retry-After` (or the vendor's header): waited it out,
/// capped it (at the number it documents, or at one it does not), ignored it; and whether its own
/// back-off (`own`, its longest first delay after a plain 502) leaves that unshown.
fn judge_retry_after(ctx: &Ctx, run: &CommandRun, own: Option<Duration>) -> Judgement {
    let status = run.attempts[0].client_status.unwrap_or_default();
    let wait = wait_for(ctx, own);
    let (header, value) = ctx.profile.retry_after_field(wait);
    let said = format!("{header}: {value}");
    let cap = ctx.profile.retry_after_cap();
    let name = run.situation;
    let on = |finding| Judgement::on(name, finding);
    let ms = |d: Duration| human_duration(d.as_millis() as u64);
    let Some(d) = delays(&run.attempts).first().copied() else {
        // A wait longer than the run: the deadline came first, and nothing was retried early.
        if matches!(run.output.exit, Exit::TimedOut(_)) && wait >= ctx.timeout {
            return on(Finding::Held(format!(
                "`{name}`: made no retry before the run's deadline ({}) after a {status} that \
                 said {said}, longer than the run",
                humantime::format_duration(ctx.timeout)
            )));
        }
        if let Exit::TimedOut(after) = run.output.exit {
            return on(Finding::Recorded(format!(
                "`{name}`: no retry of a {status} with {said} before the run was killed after \
                 {}, longer than the wait asked for ({}): it waits far longer than asked, or hangs",
                humantime::format_duration(after),
                humantime::format_duration(wait)
            )));
        }
        // Whether a 429 should have been retried is `rate-limit`'s rule, not a timing.
        let owner = if name == "retry-after-rate-limit" {
            " (rate-limit judges that)"
        } else {
            ""
        };
        return on(Finding::Recorded(format!(
            "`{name}`: a {status} with {said} was not retried{owner}"
        )));
    };
    let own_text =
        |own: Duration| format!("its own first back-off after a 502 is up to {}", ms(own));
    if d + RETRY_AFTER_SLACK >= wait {
        return match own.filter(|o| *o + RETRY_AFTER_SLACK >= wait) {
            // Its own back-off is as long: the wait shows nothing of the header.
            Some(o) => on(Finding::Recorded(format!(
                "`{name}`: waited {} after a {status} with {said}, but {}, so whether it honours \
                 the header is not shown; a `retry_after` longer than that would show it",
                ms(d),
                own_text(o)
            ))),
            None => on(Finding::Held(format!(
                "`{name}`: waited {} after a {status} with {said}",
                ms(d)
            ))),
        };
    }
    // A documented cap, kept: recorded with its number, not judged as ignoring it.
    if let Some(c) = cap.filter(|c| d + RETRY_AFTER_SLACK >= *c) {
        return on(Finding::Recorded(format!(
            "`{name}`: waited {} after a {status} that said {said}, capping it as the profile's \
             `retry_after_cap: {}` documents",
            ms(d),
            humantime::format_duration(c)
        )));
    }
    let what = match (cap, own) {
        (Some(c), _) => format!(
            ", sooner than even its documented cap (`retry_after_cap: {}`)",
            humantime::format_duration(c)
        ),
        // Longer than its back-off after a 502, yet short of the header: it may cap the header,
        // or back off longer after this status (several SDKs use another base for a throttle);
        // either way the wait was not honoured, and which it was is not shown.
        (None, Some(o)) if d > o + RETRY_AFTER_SLACK => format!(
            ": longer than its own first back-off after a 502 ({}), but short of the header: it \
             caps the header near {}, or backs off longer after a {status} than after a 502; if \
             its documentation gives a cap, give it as `retry_after_cap`",
            ms(o),
            ms(d)
        ),
        (None, Some(o)) => format!(
            ", as its own back-off does ({}): it ignores the header",
            own_text(o)
        ),
        (None, None) => String::new(),
    };
    on(Finding::Broken(format!(
        "`{name}`: retried {} after a {status} that said {said}{what}",
        ms(d)
    )))
    .at(Level::Should)
}

/// Backoff, growth and jitter over the plain-502 runs.
fn judge_plain(plain: &[(&CommandRun, Vec<Duration>)]) -> Vec<Judgement> {
    let names: Vec<&'static str> = plain.iter().map(|(r, _)| r.situation).collect();
    let retried: Vec<&(&CommandRun, Vec<Duration>)> =
        plain.iter().filter(|(_, d)| !d.is_empty()).collect();
    let on = |finding| Judgement::new(finding).on_steps(names.iter().copied());
    if retried.is_empty() {
        return vec![on(Finding::Recorded(
            "a plain 502 was not retried: no backoff to judge".into(),
        ))];
    }
    let shown: Vec<String> = retried
        .iter()
        .map(|(r, d)| format!("`{}`: {}", r.situation, delays_text(d)))
        .collect();
    let shown = shown.join("; ");
    // The upper quartile, not the longest: one retry delayed by a loaded machine is not a
    // backoff; nor the median: full jitter draws half its delays under half the cap.
    let mut all: Vec<Duration> = retried
        .iter()
        .flat_map(|(_, d)| d.iter().copied())
        .collect();
    all.sort();
    if all[all.len() * 3 / 4] < AT_ONCE {
        return vec![on(Finding::Broken(
            format!(
                "retried at once after a 502, or nearly (delays {shown}; three in four are under {}): a back-off this short (none, or a few tens of ms) gives a recovering server no rest, and clients that failed together hammer it together",
                human_duration(AT_ONCE.as_millis() as u64)
            ),
        ))];
    }
    let mut found = vec![on(Finding::Held(format!(
        "backed off after a 502 (delays {shown})"
    )))];
    let runs: Vec<&Vec<Duration>> = retried.iter().map(|(_, d)| d).collect();
    // Growth: the envelope, the longest delay at each retry over the runs.
    let envelope = by_retry(&runs, |at| at.iter().max().copied());
    match (envelope.first(), envelope.last()) {
        (Some(first), Some(last)) if envelope.len() > 1 => {
            if !(*last > *first + GROWTH && *last > *first + *first / 4) {
                found.push(on(Finding::Broken(format!(
                    "the delays do not grow ({shown}; the longest at each retry: {}): a server that stays down is retried at the same rate",
                    delays_text(&envelope)
                )))
                .at(Level::Should));
            }
        }
        _ => found.push(on(Finding::Recorded(
            "one retry per run: whether delays grow is not observable".into(),
        ))),
    }
    // Jitter: at some retry, the runs' median delay clearly longer than their shortest.
    if runs.len() > 2 {
        let spread = by_retry(&runs, |at| {
            let mut at = at.to_vec();
            at.sort();
            (at.len() > 2).then(|| at[at.len() / 2].saturating_sub(at[0]))
        });
        let shortest = by_retry(&runs, |at| at.iter().min().copied());
        let median = by_retry(&runs, |at| {
            let mut at = at.to_vec();
            at.sort();
            Some(at[at.len() / 2])
        });
        // Only at a retry whose median delay is a real wait: under AT_ONCE, scheduling and the
        // client's own processing spread the delays as much as any draw would.
        let jittered = spread
            .iter()
            .zip(&shortest)
            .zip(&median)
            .any(|((s, min), med)| *med >= AT_ONCE && *s > JITTER && *s > *min / JITTER_SHARE);
        found.push(if jittered {
            on(Finding::Held(format!("the delays differ between runs ({shown}): jitter")))
        } else {
            on(Finding::Broken(format!(
                "the {} runs waited the same delays at every retry (at no retry whose median delay was at least {} was it {} ms and a {}th longer than their shortest): without jitter, clients that failed together retry together",
                runs.len(),
                human_duration(AT_ONCE.as_millis() as u64),
                JITTER.as_millis(),
                JITTER_SHARE
            )))
            .at(Level::Should)
        });
    }
    found
}

/// For each retry (by position) that at least three runs made, `of` the runs' delays at it; the
/// retries fewer runs made are left out.
fn by_retry(
    runs: &[&Vec<Duration>],
    of: impl Fn(&[Duration]) -> Option<Duration>,
) -> Vec<Duration> {
    let longest = runs.iter().map(|d| d.len()).max().unwrap_or(0);
    (0..longest)
        .map_while(|i| {
            let at: Vec<Duration> = runs.iter().filter_map(|d| d.get(i).copied()).collect();
            if at.len() < 3.min(runs.len()) {
                return None;
            }
            of(&at)
        })
        .collect()
}
