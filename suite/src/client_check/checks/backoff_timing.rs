//! `backoff`'s own timing: the situations that measure how long a client waits before it retries
//! a failure that carries no `Retry-After` — a 502, a 503, a connection reset, a lost response, a
//! timeout — and the rules on the distribution of those delays (docs/client.md, "How backoff
//! judges a random process").
//!
//! The delays are read per retry (the first, the second, …) and pooled over every run that
//! retried, whatever failed: "at once" is the median at every retry under [`AT_ONCE`] (MUST);
//! "the first retry at once" is the first retry's median under it while a later one's is not
//! (SHOULD). Growth and jitter are judged within one kind of failure, the one retried in the most
//! runs (a client may use another fixed delay for another kind, which pooled would look drawn):
//! growth is the upper quartile at the last retry longer than at the first by [`GROWTH`] and a
//! quarter (SHOULD); jitter is, at some retry whose median is at least [`AT_ONCE`], the median
//! longer than the shortest by [`JITTER`] and [`JITTER_SHARE`] of it (SHOULD). Medians and
//! quartiles, not the longest or shortest alone, so that the few late wake-ups of a loaded
//! machine move no verdict.
//!
//! Samples: a first round of [`Family::first_round`] runs of each kind; then the kind retried
//! most is run until it has [`BASE_RUNS`] runs, and, where a statistic sits within a factor of
//! two of its line, until it has [`MOST_RUNS`].

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::rules::Fault;
use idemspec_scenarios::Level;

use super::{delays, delays_text, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::situation::{Planned, Times};
use crate::engine::Finding;
use crate::report::human_duration;

/// A median delay under this at a retry is a retry "at once" (100 ms).
pub(super) const AT_ONCE: Duration = Duration::from_millis(100);
/// At one retry, the runs' median delay this much longer than their shortest (and by
/// [`JITTER_SHARE`]) shows jitter: a ±10 % draw around 250 ms spreads them by tens of ms, while a
/// fixed delay's median stays within a few ms of its shortest (docs/client.md has the rates).
const JITTER: Duration = Duration::from_millis(10);
/// …and by this share of the shortest: one part in twenty-five.
const JITTER_SHARE: u32 = 25;
/// A delay that grows is at least this much longer at the last retry than at the first (and by a
/// quarter): exponential backoff doubles; scheduling noise does not make a constant delay grow
/// by this.
const GROWTH: Duration = Duration::from_millis(50);
/// Runs of the kind of failure retried most before growth and jitter are judged: a median of six
/// ignores the two runs a loaded machine woke late.
pub(super) const BASE_RUNS: usize = 6;
/// Runs of that kind, at most, when a statistic sits near its line.
pub(super) const MOST_RUNS: usize = 12;
/// The source of the rule on the first retry.
const FIRST_RETRY_SOURCE: &str = "Google Cloud: retry strategy (exponential backoff: the first \
     retry waits 1 s plus a random part); AWS Architecture Blog: Exponential Backoff And Jitter";

/// A kind of failure without `Retry-After` whose retries' delays are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Family {
    /// A 502 on the first three attempts.
    BadGateway,
    /// A 503 without `Retry-After` on the first three attempts.
    Unavailable,
    /// The connection reset before any answer, three times.
    Reset,
    /// The response dropped after the work was done, three times.
    LostResponse,
    /// The first attempt held until the client gives up on it (its own timeout, which may be long:
    /// once).
    Timeout,
}

/// Every family, in the order a tie for "retried most" is broken.
const FAMILIES: [Family; 5] = [
    Family::BadGateway,
    Family::Unavailable,
    Family::Reset,
    Family::LostResponse,
    Family::Timeout,
];

impl Family {
    /// The prefix of its situations' names (`502s-1`, `resets-4`).
    fn prefix(self) -> &'static str {
        match self {
            Family::BadGateway => "502s",
            Family::Unavailable => "503s",
            Family::Reset => "resets",
            Family::LostResponse => "lost-responses",
            Family::Timeout => "timeouts",
        }
    }

    /// What failed, in words.
    fn words(self) -> &'static str {
        match self {
            Family::BadGateway => "a 502",
            Family::Unavailable => "a 503",
            Family::Reset => "a reset",
            Family::LostResponse => "a lost response",
            Family::Timeout => "a timeout",
        }
    }

    /// Runs in the first round: the 502, which most clients retry, three times; the rest once.
    fn first_round(self) -> usize {
        if self == Family::BadGateway {
            3
        } else {
            1
        }
    }

    fn planned(self, ctx: &Ctx) -> Planned {
        let thrice = Times::First(3);
        match self {
            Family::BadGateway => ctx.planned(AnswerKind::BadGateway, false, thrice),
            Family::Unavailable => ctx.planned(AnswerKind::Unavailable, false, thrice),
            Family::Reset => ctx.plan("reset", Fault::Refuse { reset: true }, thrice),
            Family::LostResponse => ctx.plan("drop", Fault::DropResponse {}, thrice),
            Family::Timeout => ctx.plan("hang", Fault::Hang { forward: true }, Times::First(1)),
        }
    }

    /// Its `n`th run (from 1).
    fn situation(self, ctx: &Ctx, n: usize) -> Situation {
        Situation::new(sample_name(self.prefix(), n), vec![self.planned(ctx)])
    }

    /// The family of a situation named `name`, and the run's number in it.
    fn of(name: &str) -> Option<(Family, usize)> {
        FAMILIES.iter().find_map(|f| {
            let n = name.strip_prefix(f.prefix())?.strip_prefix('-')?;
            Some((*f, n.parse().ok()?))
        })
    }
}

/// `PREFIX-N` as a `&'static str` (a situation's name), made once per name for the life of the
/// process: at most [`MOST_RUNS`] names per family.
fn sample_name(prefix: &str, n: usize) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeMap<String, &'static str>>> = OnceLock::new();
    let name = format!("{prefix}-{n}");
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    names
        .entry(name.clone())
        .or_insert_with(|| Box::leak(name.into_boxed_str()))
}

/// Whether `run` is one of the timing situations.
pub(super) fn is_timing(run: &CommandRun) -> bool {
    Family::of(run.situation).is_some()
}

/// The first round: every family, [`Family::first_round`] runs each.
pub(super) fn first_round(ctx: &Ctx) -> Vec<Situation> {
    FAMILIES
        .iter()
        .flat_map(|f| (1..=f.first_round()).map(move |n| f.situation(ctx, n)))
        .collect()
}

/// The client's own first back-off: the longest first delay of the first round's runs (`None`
/// when it retried none). Only the first round, so that it is the same number before and after
/// more samples are taken.
pub(super) fn own_back_off(runs: &[CommandRun]) -> Option<Duration> {
    runs.iter()
        .filter(|r| Family::of(r.situation).is_some_and(|(f, n)| n <= f.first_round()))
        .filter_map(|r| delays(&r.attempts).first().copied())
        .max()
}

/// The runs that retried, by family.
fn retried(runs: &[CommandRun]) -> BTreeMap<Family, Vec<(&CommandRun, Vec<Duration>)>> {
    let mut by: BTreeMap<Family, Vec<(&CommandRun, Vec<Duration>)>> = BTreeMap::new();
    for run in runs {
        let Some((family, _)) = Family::of(run.situation) else {
            continue;
        };
        let d = delays(&run.attempts);
        if !d.is_empty() {
            by.entry(family).or_default().push((run, d));
        }
    }
    by
}

/// The family retried in the most runs (ties in [`FAMILIES`]' order).
fn main_family(by: &BTreeMap<Family, Vec<(&CommandRun, Vec<Duration>)>>) -> Option<Family> {
    FAMILIES
        .iter()
        .copied()
        .filter(|f| by.contains_key(f))
        .max_by_key(|f| (by[f].len(), std::cmp::Reverse(*f)))
}

/// More runs of the family retried most: up to [`BASE_RUNS`], then up to [`MOST_RUNS`] where a
/// statistic sits within a factor of two of its line; none when it has enough (or nothing was
/// retried).
pub(super) fn more_samples(ctx: &Ctx, runs: &[CommandRun]) -> Vec<Situation> {
    let by = retried(runs);
    let Some(main) = main_family(&by) else {
        return Vec::new();
    };
    let have = runs
        .iter()
        .filter(|r| Family::of(r.situation).is_some_and(|(f, _)| f == main))
        .count();
    let all: Vec<&Vec<Duration>> = by.values().flatten().map(|(_, d)| d).collect();
    let main_delays: Vec<&Vec<Duration>> = by[&main].iter().map(|(_, d)| d).collect();
    let target = if have < BASE_RUNS {
        BASE_RUNS
    } else if have < MOST_RUNS && near_a_line(&all, &main_delays) {
        MOST_RUNS
    } else {
        return Vec::new();
    };
    (have + 1..=target)
        .map(|n| main.situation(ctx, n))
        .collect()
}

/// Whether "at once" (the longest median over the retries, against [`AT_ONCE`]) or growth (the
/// gain of the upper quartile, against its line) is within a factor of two of its line.
fn near_a_line(all: &[&Vec<Duration>], main: &[&Vec<Duration>]) -> bool {
    let near = |value: Duration, line: Duration| value > line / 2 && value < line * 2;
    let medians = by_retry(all, median);
    let waits = medians.iter().max().copied().unwrap_or_default();
    let upper = by_retry(main, upper_quartile);
    let growth = match (upper.first(), upper.last()) {
        (Some(first), Some(last)) if upper.len() > 1 => {
            near(last.saturating_sub(*first), growth_line(*first))
        }
        _ => false,
    };
    near(waits, AT_ONCE) || growth
}

/// How much longer than the first retry's upper quartile the last one's must be to show growth.
fn growth_line(first: Duration) -> Duration {
    GROWTH.max(first / 4)
}

fn median(at: &[Duration]) -> Option<Duration> {
    let mut at = at.to_vec();
    at.sort();
    at.get(at.len() / 2).copied()
}

fn upper_quartile(at: &[Duration]) -> Option<Duration> {
    let mut at = at.to_vec();
    at.sort();
    at.get(at.len() * 3 / 4).copied()
}

/// For each retry (by position) that at least three runs made (or every run, when fewer
/// retried), `of` the runs' delays at it; the retries fewer runs made are left out.
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

fn ms(d: Duration) -> String {
    human_duration(d.as_millis() as u64)
}

/// What the timing runs show, and whether any failure without `Retry-After` was retried (when
/// none was, the client's own back-off was not seen, and nothing else may pass the check).
pub(super) fn judge(runs: &[CommandRun]) -> (Vec<Judgement>, bool) {
    let names: Vec<&'static str> = runs
        .iter()
        .filter(|r| is_timing(r))
        .map(|r| r.situation)
        .collect();
    let by = retried(runs);
    let not_retried: Vec<&str> = FAMILIES
        .iter()
        .filter(|f| {
            !by.contains_key(*f)
                && names
                    .iter()
                    .any(|n| Family::of(n).is_some_and(|(g, _)| g == **f))
        })
        .map(|f| f.words())
        .collect();
    let Some(main) = main_family(&by) else {
        let finding = Finding::Recorded(format!(
            "no failure without Retry-After was retried ({}): the client's own back-off was not \
             seen",
            not_retried.join(", ")
        ));
        return (vec![Judgement::new(finding).on_steps(names)], false);
    };
    let rest_on: Vec<&str> = by.values().flatten().map(|(r, _)| r.situation).collect();
    let on = |finding| Judgement::new(finding).on_steps(rest_on.iter().copied());
    let shown = by
        .iter()
        .map(|(f, runs)| {
            let each: Vec<String> = runs.iter().map(|(_, d)| delays_text(d)).collect();
            format!("after {} [{}]", f.words(), each.join(" | "))
        })
        .collect::<Vec<_>>()
        .join("; ");
    let unretried = if not_retried.is_empty() {
        String::new()
    } else {
        format!("; not retried: {}", not_retried.join(", "))
    };
    let all: Vec<&Vec<Duration>> = by.values().flatten().map(|(_, d)| d).collect();
    let medians = by_retry(&all, median);
    let medians_text = delays_text(&medians);
    if medians.iter().all(|m| *m < AT_ONCE) {
        let finding = Finding::Broken(format!(
            "retried at once, or nearly: the median delay at every retry is under {} ({medians_text}, \
             by retry, over {} runs; delays {shown}{unretried}): a back-off this short gives a \
             recovering server no rest, and clients that failed together hammer it together",
            ms(AT_ONCE),
            all.len()
        ));
        return (vec![on(finding)], true);
    }
    let mut found = vec![on(Finding::Held(format!(
        "backed off (median delay by retry {medians_text}, over {} runs; delays {shown}{unretried})",
        all.len()
    )))];
    if medians[0] < AT_ONCE {
        let mut first = on(Finding::Broken(format!(
            "retried its first failure at once: the first retry's median delay is {} (under {}), \
             though later retries wait ({medians_text}): every client that failed together \
             retries together at once",
            ms(medians[0]),
            ms(AT_ONCE)
        )))
        .at(Level::Should);
        first.reference = Some(FIRST_RETRY_SOURCE.into());
        found.push(first);
    }
    let main_runs: Vec<(&str, &Vec<Duration>)> =
        by[&main].iter().map(|(r, d)| (r.situation, d)).collect();
    found.extend(growth_and_jitter(main, &main_runs));
    (found, true)
}

/// Growth and jitter over the runs of one family (`runs`: each run's name and delays).
fn growth_and_jitter(family: Family, runs: &[(&str, &Vec<Duration>)]) -> Vec<Judgement> {
    let on = |finding| Judgement::new(finding).on_steps(runs.iter().map(|(n, _)| *n));
    let delays: Vec<&Vec<Duration>> = runs.iter().map(|(_, d)| *d).collect();
    let after = family.words();
    let n = runs.len();
    let mut found = Vec::new();
    let upper = by_retry(&delays, upper_quartile);
    match (upper.first(), upper.last()) {
        (Some(first), Some(last)) if upper.len() > 1 => {
            if last.saturating_sub(*first) <= growth_line(*first) {
                found.push(
                    on(Finding::Broken(format!(
                        "the delays after {after} do not grow (the upper quartile at each retry \
                         over {n} runs: {}; the last must be {} and a quarter longer than the \
                         first): a server that stays down is retried at the same rate",
                        delays_text(&upper),
                        ms(GROWTH)
                    )))
                    .at(Level::Should),
                );
            }
        }
        _ => found.push(on(Finding::Recorded(format!(
            "one retry per run after {after}: whether delays grow is not observable"
        )))),
    }
    if n < 3 {
        found.push(on(Finding::Recorded(format!(
            "{n} runs retried {after}: whether the delays are drawn is not observable"
        ))));
        return found;
    }
    let spread = by_retry(&delays, |at| {
        let m = median(at)?;
        let min = at.iter().min()?;
        Some(m.saturating_sub(*min))
    });
    let shortest = by_retry(&delays, |at| at.iter().min().copied());
    let medians = by_retry(&delays, median);
    // Only at a retry whose median delay is a real wait: under AT_ONCE, scheduling and the
    // client's own processing spread the delays as much as any draw would.
    let jittered = spread
        .iter()
        .zip(&shortest)
        .zip(&medians)
        .any(|((s, min), med)| *med >= AT_ONCE && *s > JITTER && *s > *min / JITTER_SHARE);
    found.push(if jittered {
        on(Finding::Held(format!(
            "the delays after {after} differ between runs: jitter"
        )))
    } else {
        on(Finding::Broken(format!(
            "the {n} runs after {after} waited the same delays at every retry (at no retry whose \
             median delay was at least {} was the median {} ms and a {}th longer than the \
             shortest): without jitter, clients that failed together retry together",
            ms(AT_ONCE),
            JITTER.as_millis(),
            JITTER_SHARE
        )))
        .at(Level::Should)
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_named_once_and_read_back_as_its_family() {
        for f in FAMILIES {
            let name = sample_name(f.prefix(), 7);
            assert_eq!(Family::of(name), Some((f, 7)));
            assert!(std::ptr::eq(name, sample_name(f.prefix(), 7)), "made once");
        }
        assert_eq!(Family::of("retry-after-in-flight"), None);
        assert_eq!(Family::of("502s-x"), None);
        assert_eq!(Family::of("lost-response"), None);
    }

    #[test]
    fn more_samples_are_asked_only_near_a_line() {
        let ms = Duration::from_millis;
        let fixed: Vec<Vec<Duration>> = (0..6).map(|_| vec![ms(500), ms(505), ms(510)]).collect();
        let fixed: Vec<&Vec<Duration>> = fixed.iter().collect();
        assert_eq!(by_retry(&fixed, median), vec![ms(500), ms(505), ms(510)]);
        assert!(
            !near_a_line(&fixed, &fixed),
            "a fixed 500 ms is far from both lines"
        );
        let short: Vec<Vec<Duration>> = (0..6).map(|i| vec![ms(10 + i), ms(60 + i)]).collect();
        let short: Vec<&Vec<Duration>> = short.iter().collect();
        assert!(
            near_a_line(&short, &short),
            "a median of 63 ms is near 100 ms"
        );
        let doubling: Vec<Vec<Duration>> = (0..6)
            .map(|i| vec![ms(250 + i), ms(500), ms(1000)])
            .collect();
        let doubling: Vec<&Vec<Duration>> = doubling.iter().collect();
        assert!(
            !near_a_line(&doubling, &doubling),
            "a doubling is far from both"
        );
    }
}
