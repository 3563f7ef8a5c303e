//! Deliberate flaws (`--flaw NAME`, repeatable): each breaks exactly one rule of the contract, so the
//! suite can be proven to catch it. Without flaws the server is correct.

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

/// What the idempotency layer does, derived once from the active flaws. Each switch is named for the
/// correct behaviour and is `true` without flaws; each flaw turns exactly one off, so the layer reads
/// as the correct implementation with a few `if` at the points a flaw breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behaviour {
    /// Requests with a key are recorded and replayed at all (`no-idempotency` turns it off).
    pub idempotency: bool,
    /// `DELETE` is covered like the other mutating methods (`no-delete-replay`).
    pub covers_delete: bool,
    /// A record's scope includes the principal (`global-keyspace`).
    pub scope_by_principal: bool,
    /// A record's scope includes the endpoint (`endpoint-unscoped`: the endpoint travels inside the
    /// stored fingerprint instead, and a completed hit from another endpoint is replayed).
    pub scope_by_endpoint: bool,
    /// The same key with a different fingerprint is refused with 409 (`no-fingerprint`).
    pub compare_fingerprint: bool,
    /// The claim is one atomic statement (`check-then-act`: a read, a pause, a write).
    pub atomic_claim: bool,
    /// An in-flight record is reclaimed once the in-flight TTL has passed (`no-in-flight-ttl`).
    pub in_flight_ttl: bool,
    /// A request finding its key in flight gets 409 (`proceed-in-flight`: it runs anyway).
    pub refuse_in_flight: bool,
    /// A 5xx marks the record failed instead of being stored (`cache-5xx`).
    pub fail_on_5xx: bool,
    /// Side effects are keyed by sub-keys derived from the record, so a retry resumes them
    /// (`non-resumable`: fresh random sub-keys every attempt).
    pub resumable_side_effects: bool,
    /// Replays carry the stored `Location` and `Content-Type` (`replay-drops-headers`).
    pub replay_headers: bool,
    /// A record reclaimed after the in-flight TTL keeps its nonce, so the retry resumes the
    /// running attempt's side effects (`reclaim-reallocates`: a fresh nonce).
    pub reclaim_resumes: bool,
    /// A create's 201 carries `Location` (`create-drops-location`).
    pub create_location: bool,
    /// A create whose boot fails writes no worker (`failed-create-leaves-worker`).
    pub failed_create_writes_nothing: bool,
}

impl Behaviour {
    /// The contract leasebroker implements (the `article` preset of docs/profile-reference.md): every
    /// switch on.
    pub const CORRECT: Self = Self {
        idempotency: true,
        covers_delete: true,
        scope_by_principal: true,
        scope_by_endpoint: true,
        compare_fingerprint: true,
        atomic_claim: true,
        in_flight_ttl: true,
        refuse_in_flight: true,
        fail_on_5xx: true,
        resumable_side_effects: true,
        replay_headers: true,
        reclaim_resumes: true,
        create_location: true,
        failed_create_writes_nothing: true,
    };

    /// The behaviour with `flaws` active.
    pub fn of(flaws: &Flaws) -> Self {
        let correct = |flaw| !flaws.has(flaw);
        Self {
            idempotency: correct(Flaw::NoIdempotency),
            covers_delete: correct(Flaw::NoDeleteReplay),
            scope_by_principal: correct(Flaw::GlobalKeyspace),
            scope_by_endpoint: correct(Flaw::EndpointUnscoped),
            compare_fingerprint: correct(Flaw::NoFingerprint),
            atomic_claim: correct(Flaw::CheckThenAct),
            in_flight_ttl: correct(Flaw::NoInFlightTtl),
            refuse_in_flight: correct(Flaw::ProceedInFlight),
            fail_on_5xx: correct(Flaw::Cache5xx),
            resumable_side_effects: correct(Flaw::NonResumable),
            replay_headers: correct(Flaw::ReplayDropsHeaders),
            reclaim_resumes: correct(Flaw::ReclaimReallocates),
            create_location: correct(Flaw::CreateDropsLocation),
            failed_create_writes_nothing: correct(Flaw::FailedCreateLeavesWorker),
        }
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

    #[test]
    fn no_flaws_is_the_correct_behaviour() {
        assert_eq!(Behaviour::of(&Flaws::default()), Behaviour::CORRECT);
    }

    #[test]
    fn each_flaw_turns_off_exactly_one_switch() {
        let switches = |b: Behaviour| {
            [
                b.idempotency,
                b.covers_delete,
                b.scope_by_principal,
                b.scope_by_endpoint,
                b.compare_fingerprint,
                b.atomic_claim,
                b.in_flight_ttl,
                b.refuse_in_flight,
                b.fail_on_5xx,
                b.resumable_side_effects,
                b.replay_headers,
                b.reclaim_resumes,
                b.create_location,
                b.failed_create_writes_nothing,
            ]
        };
        let mut off = std::collections::BTreeSet::new();
        for flaw in <Flaw as clap::ValueEnum>::value_variants() {
            let behaviour = Behaviour::of(&Flaws::new([*flaw]));
            let broken: Vec<usize> = switches(behaviour)
                .iter()
                .enumerate()
                .filter(|(_, on)| !**on)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(broken.len(), 1, "{}: {behaviour:?}", flaw.name());
            assert!(off.insert(broken[0]), "{} shares its switch", flaw.name());
        }
    }
}
