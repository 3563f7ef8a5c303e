//! `backoff`: retries wait, and wait longer each time, with jitter; a `Retry-After` on a 409 in
//! flight, a 429 or a 503 is honoured.
//!
//! Timing is judged by lower bounds and wide margins only, because a loaded machine only ever
//! makes delays longer: "no backoff" is a median delay under [`AT_ONCE`]; growth is the last delay
//! longer than the first; jitter is two runs' delays differing by more than [`JITTER`] and 5 %.

use std::time::Duration;

use idemspec_scenarios::Level;

use super::{about, delays, delays_text, ClientCheck, Ctx, Judged, Observed, Situation};
use crate::client_check::finding::Finding;
use crate::client_check::outcome::About;
use crate::client_check::situation::Times;
use crate::report::human_duration;

/// See the module documentation.
pub struct Backoff;

/// Retries this soon after the previous answer (the median of them) did not back off.
const AT_ONCE: Duration = Duration::from_millis(100);
/// Two runs' delays closer than this (or than 5 %) show no jitter: only timing noise.
const JITTER: Duration = Duration::from_millis(20);
/// How much sooner than `Retry-After` a retry may come (clock granularity; a client that sleeps
/// exactly the header's seconds must pass).
const RETRY_AFTER_SLACK: Duration = Duration::from_millis(50);
/// The situations with plain 502s (no `Retry-After`), run twice to compare delays.
const PLAIN: [&str; 2] = ["502s-first", "502s-second"];

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
            after("retry-after-409", "in-flight 409", ctx.in_flight()),
            after(
                "retry-after-429",
                "429",
                ctx.answer(429, "rate-limited", "Too Many Requests", true),
            ),
            after("retry-after-503", "503", ctx.unavailable(true)),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[Observed]) -> Vec<Judged> {
        let plain: Vec<(&Observed, Vec<Duration>)> = runs
            .iter()
            .filter(|r| PLAIN.contains(&r.situation))
            .map(|r| (r, delays(&r.attempts)))
            .collect();
        let mut found = judge_plain(&plain);
        let retry_after = ctx.profile.retry_after();
        for run in runs.iter().filter(|r| !PLAIN.contains(&r.situation)) {
            let status = run.attempts[0].client_status.unwrap_or_default();
            let finding = match delays(&run.attempts).first() {
                None => Finding::Recorded(format!(
                    "`{}`: a {status} with Retry-After was not retried",
                    run.situation
                )),
                Some(d) if *d + RETRY_AFTER_SLACK >= retry_after => Finding::Held(format!(
                    "`{}`: waited {} after a {status} with Retry-After: {}",
                    run.situation,
                    human_duration(d.as_millis() as u64),
                    retry_after.as_secs()
                )),
                Some(d) => Finding::Broken(
                    Level::Should,
                    format!(
                        "`{}`: retried {} after a {status} that said Retry-After: {}",
                        run.situation,
                        human_duration(d.as_millis() as u64),
                        retry_after.as_secs()
                    ),
                ),
            };
            found.push(Judged::on(run.situation, finding));
        }
        found
    }
}

/// Backoff, growth and jitter over the plain-502 runs.
fn judge_plain(plain: &[(&Observed, Vec<Duration>)]) -> Vec<Judged> {
    let names: Vec<&'static str> = plain.iter().map(|(r, _)| r.situation).collect();
    let retried: Vec<&(&Observed, Vec<Duration>)> =
        plain.iter().filter(|(_, d)| !d.is_empty()).collect();
    let on = |finding| Judged {
        finding,
        situations: names.clone(),
    };
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
            Level::Must,
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
    } else if !comparable
        .iter()
        .any(|d| d[d.len() - 1] > d[0] + Duration::from_millis(10))
    {
        found.push(on(Finding::Broken(
            Level::Should,
            format!("the delays do not grow ({shown}): a server that stays down is retried at the same rate"),
        )));
    }
    if let [(_, a), (_, b)] = plain {
        if a.len() == b.len() && !a.is_empty() {
            let differ = a.iter().zip(b).any(|(x, y)| {
                let gap = x.abs_diff(*y);
                gap > JITTER && gap > (*x).max(*y) / 20
            });
            found.push(on(if differ {
                Finding::Held(format!("the delays differ between two runs ({shown}): jitter"))
            } else {
                Finding::Broken(
                    Level::Should,
                    format!(
                        "two runs waited the same delays ({shown}): without jitter, clients that failed together retry together"
                    ),
                )
            }));
        }
    }
    found
}
