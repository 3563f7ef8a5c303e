//! `backoff`: retries wait, and wait longer each time, with jitter; a `Retry-After` on a 409 in
//! flight, a 429 or a 503 is honoured.
//!
//! Timing is judged by lower bounds and wide margins only, because a loaded machine only ever
//! makes delays longer: "no backoff" is a median delay under [`AT_ONCE`]; growth is the last delay
//! longer than the first by [`GROWTH`] and a quarter; jitter is some two of the four runs waiting
//! delays that differ by more than [`JITTER`] and a quarter at some retry.

use std::time::Duration;

use idemspec_scenarios::Level;

use super::{about, delays, delays_text, ClientCheck, Ctx, Judgement, Observed, Situation};
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;
use crate::report::human_duration;

/// See the module documentation.
pub struct Backoff;

/// Retries this soon after the previous answer (the median of them) did not back off.
const AT_ONCE: Duration = Duration::from_millis(100);
/// Two runs' delays closer than this (or than a quarter of the longer) show no jitter: a loaded
/// machine alone moves a delay by 100 ms now and then (seen: a constant 1 s delay measured 1.01 s
/// and 1.11 s).
const JITTER: Duration = Duration::from_millis(100);
/// A delay that grows is at least this much longer than the first (and by a quarter): exponential
/// backoff doubles; scheduling noise does not make a constant delay grow by this.
const GROWTH: Duration = Duration::from_millis(50);
/// How much sooner than `Retry-After` a retry may come (clock granularity; a client that sleeps
/// exactly the header's seconds must pass).
const RETRY_AFTER_SLACK: Duration = Duration::from_millis(50);
/// The situations with plain 502s (no `Retry-After`), run four times to compare delays: with three
/// retries a run, two runs of a client jittered by ±50 % look alike by these margins about one time
/// in seven, three runs about one in seventy, four runs about one in a thousand (simulated).
const PLAIN: [&str; 4] = ["502s-first", "502s-second", "502s-third", "502s-fourth"];

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
                vec![ctx.plan("502", ctx.bad_gateway(), Times::First(3))],
            )
        };
        let after = |name, planned, fault| {
            Situation::new(name, vec![ctx.plan(planned, fault, Times::First(1))])
        };
        vec![
            plain(PLAIN[0]),
            plain(PLAIN[1]),
            plain(PLAIN[2]),
            plain(PLAIN[3]),
            after("retry-after-409", "in-flight 409", ctx.in_flight()),
            after(
                "retry-after-429",
                "429",
                ctx.answer(429, "rate-limited", "Too Many Requests", true),
            ),
            after("retry-after-503", "503", ctx.unavailable(true)),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[Observed]) -> Vec<Judgement> {
        let plain: Vec<(&Observed, Vec<Duration>)> = runs
            .iter()
            .filter(|r| PLAIN.contains(&r.situation))
            .map(|r| (r, delays(&r.attempts)))
            .collect();
        let mut found = judge_plain(&plain);
        let retry_after = ctx.profile.retry_after();
        for run in runs.iter().filter(|r| !PLAIN.contains(&r.situation)) {
            let status = run.attempts[0].client_status.unwrap_or_default();
            let on = |finding| Judgement::on(run.situation, finding);
            found.push(match delays(&run.attempts).first() {
                None => on(Finding::Recorded(format!(
                    "`{}`: a {status} with Retry-After was not retried",
                    run.situation
                ))),
                Some(d) if *d + RETRY_AFTER_SLACK >= retry_after => on(Finding::Held(format!(
                    "`{}`: waited {} after a {status} with Retry-After: {}",
                    run.situation,
                    human_duration(d.as_millis() as u64),
                    retry_after.as_secs()
                ))),
                Some(d) => on(Finding::Broken(format!(
                    "`{}`: retried {} after a {status} that said Retry-After: {}",
                    run.situation,
                    human_duration(d.as_millis() as u64),
                    retry_after.as_secs()
                )))
                .at(Level::Should),
            });
        }
        found
    }
}

/// Backoff, growth and jitter over the plain-502 runs.
fn judge_plain(plain: &[(&Observed, Vec<Duration>)]) -> Vec<Judgement> {
    let names: Vec<&'static str> = plain.iter().map(|(r, _)| r.situation).collect();
    let retried: Vec<&(&Observed, Vec<Duration>)> =
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
    // The median, not the longest: one retry delayed by a loaded machine is not a backoff.
    let mut all: Vec<Duration> = retried
        .iter()
        .flat_map(|(_, d)| d.iter().copied())
        .collect();
    all.sort();
    if all[all.len() / 2] < AT_ONCE {
        return vec![on(Finding::Broken(
            format!(
                "retried at once after a 502 (delays {shown}; their median is under {}): without backoff, clients that failed together hammer the recovering server together",
                human_duration(AT_ONCE.as_millis() as u64)
            ),
        ))];
    }
    let mut found = vec![on(Finding::Held(format!(
        "backed off after a 502 (delays {shown})"
    )))];
    let comparable: Vec<&Vec<Duration>> = retried
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d.len() > 1)
        .collect();
    if comparable.is_empty() {
        found.push(on(Finding::Recorded(
            "one retry per run: whether delays grow is not observable".into(),
        )));
    } else if !comparable.iter().any(|d| {
        let (first, last) = (d[0], d[d.len() - 1]);
        last > first + GROWTH && last > first + first / 4
    }) {
        found.push(on(Finding::Broken(
            format!("the delays do not grow ({shown}): a server that stays down is retried at the same rate"),
        )).at(Level::Should));
    }
    // Jitter: some pair of runs waited a clearly different delay at some retry.
    let runs: Vec<&Vec<Duration>> = retried.iter().map(|(_, d)| d).collect();
    let comparable_runs = runs.len() > 1 && runs.iter().all(|d| d.len() == runs[0].len());
    if comparable_runs {
        let differ = runs.iter().enumerate().any(|(i, a)| {
            runs[i + 1..].iter().any(|b| {
                a.iter().zip(b.iter()).any(|(x, y)| {
                    let gap = x.abs_diff(*y);
                    gap > JITTER && gap > (*x).max(*y) / 4
                })
            })
        });
        found.push(if differ {
            on(Finding::Held(format!("the delays differ between runs ({shown}): jitter")))
        } else {
            on(Finding::Broken(
                format!(
                    "the {} runs waited the same delays at every retry (within {} ms or a quarter): without jitter, clients that failed together retry together",
                    runs.len(),
                    JITTER.as_millis()
                ),
            ))
            .at(Level::Should)
        });
    }
    found
}
