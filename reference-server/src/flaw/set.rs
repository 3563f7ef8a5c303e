//! The flaws by name (`--flaw NAME`, repeatable) and the set a server runs with.

use std::collections::BTreeSet;

/// One deliberately broken rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Flaw {
    /// The Idempotency-Key is ignored: every request runs, with fresh side-effect sub-keys.
    NoIdempotency,
    /// The fingerprint is not compared: a different request with a used key gets the old response.
    NoFingerprint,
    /// The claim is a read, a 250 ms pause, then a write: concurrent same-key requests all run
    /// (each racer with side-effect sub-keys of its own, so the race shows as several workers; a retry
    /// of one record still resumes).
    CheckThenAct,
    /// An in-flight record is never reclaimed: after a crash the key is locked out until retention ends.
    NoInFlightTtl,
    /// 5xx outcomes are stored and replayed instead of marking the record failed.
    #[value(name = "cache-5xx")]
    Cache5xx,
    /// Records are keyed by (endpoint, key) without the principal: one principal's response leaks to another.
    GlobalKeyspace,
    /// DELETE is not covered by the idempotency layer: a retried DELETE gets 404.
    NoDeleteReplay,
    /// Side effects use fresh random sub-keys on every attempt: a retry after a partial failure
    /// allocates a second node and leaks the first lease.
    NonResumable,
    /// A request finding its key in flight runs anyway (fresh sub-keys) instead of getting 409.
    ProceedInFlight,
    /// Replays drop `Location` and `Content-Type`.
    ReplayDropsHeaders,
    /// Records are keyed by (principal, key) without the endpoint, and a hit recorded on another
    /// endpoint is replayed as this request's answer.
    EndpointUnscoped,
    /// A record reclaimed after the in-flight TTL gets a fresh nonce, so its side effects start
    /// over: a handler still running past the TTL and the retry that reclaimed its key each make
    /// a worker.
    ReclaimReallocates,
    /// A create's 201 carries no `Location`.
    CreateDropsLocation,
    /// A create whose boot fails still writes its worker: a failed request leaves a resource behind.
    FailedCreateLeavesWorker,
}

impl Flaw {
    /// The flag value, e.g. `check-then-act`.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }
}

/// The set of active flaws.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flaws(BTreeSet<Flaw>);

impl Flaws {
    /// The set of `flaws`.
    pub fn new(flaws: impl IntoIterator<Item = Flaw>) -> Self {
        Self(flaws.into_iter().collect())
    }

    /// Whether `flaw` is active.
    pub fn has(&self, flaw: Flaw) -> bool {
        self.0.contains(&flaw)
    }

    /// The active flaws, in a stable order.
    pub fn iter(&self) -> impl Iterator<Item = Flaw> + '_ {
        self.0.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kebab_case() {
        assert_eq!(Flaw::Cache5xx.name(), "cache-5xx");
        assert_eq!(Flaw::CheckThenAct.name(), "check-then-act");
        assert_eq!(Flaw::NoInFlightTtl.name(), "no-in-flight-ttl");
        assert_eq!(Flaw::ReplayDropsHeaders.name(), "replay-drops-headers");
    }
}
