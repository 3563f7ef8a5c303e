//! The client checks, one file each, behind [`ClientCheck`]: the situations a check runs the
//! command in, and how it judges what was observed (`docs/client.md` lists them with their
//! sources).

mod backoff;
mod bounded_retries;
mod distinct_keys;
mod in_flight;
mod key_format;
mod key_present;
mod no_retry_4xx;
mod same_key;

use std::time::Duration;

use idemspec_scenarios::Level;

use super::attempt::Attempt;
use super::finding::Judged;
use super::outcome::About;
use super::situation::{Observed, Situation};
use super::Ctx;

/// One client check.
pub trait ClientCheck: Send + Sync {
    /// What it is: id, title, level, source.
    fn about(&self) -> About;
    /// The situations it runs the command in, one after another.
    fn situations(&self, ctx: &Ctx) -> Vec<Situation>;
    /// What it finds in the situations where the command made at least one attempt (a situation
    /// without any is undecided before this is called).
    fn judge(&self, ctx: &Ctx, runs: &[Observed]) -> Vec<Judged>;

    /// Its id.
    fn id(&self) -> &'static str {
        self.about().id
    }
}

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
    ]
}

/// The ids, titles, levels and sources of every client check (for `--only`, docs and tests).
pub fn list() -> Vec<About> {
    catalogue().iter().map(|c| c.about()).collect()
}

/// An `About` for a check.
const fn about(
    id: &'static str,
    title: &'static str,
    level: Level,
    reference: &'static str,
) -> About {
    About {
        id,
        title,
        level,
        reference,
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

/// `key "k"` or `no key`.
fn key_text(key: Option<&str>) -> String {
    key.map_or("no key".into(), |k| format!("{k:?}"))
}
