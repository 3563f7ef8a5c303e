//! The switches the idempotency layer and the fleet read, one per flaw that bends their own logic.

use super::{Flaw, Flaws};

/// What the idempotency layer and the fleet do, derived once from the active flaws. Each switch is
/// named for the correct behaviour and is `true` without flaws; each flaw that is not a
/// [wrapper](super::WRAPPERS) turns exactly one off, so the layer reads as the correct
/// implementation with a few `if` at the points a flaw breaks.
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
    /// A record reclaimed after the in-flight TTL keeps its nonce, so the retry resumes the
    /// running attempt's side effects (`reclaim-reallocates`: a fresh nonce).
    pub reclaim_resumes: bool,
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
        reclaim_resumes: true,
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
            reclaim_resumes: correct(Flaw::ReclaimReallocates),
            failed_create_writes_nothing: correct(Flaw::FailedCreateLeavesWorker),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::WRAPPERS;
    use super::*;

    #[test]
    fn no_flaws_is_the_correct_behaviour() {
        assert_eq!(Behaviour::of(&Flaws::default()), Behaviour::CORRECT);
    }

    /// A wrapper turns off no switch; every other flaw exactly one, its own.
    #[test]
    fn each_flaw_is_a_wrapper_or_turns_off_exactly_one_switch() {
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
                b.reclaim_resumes,
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
            if WRAPPERS.contains(flaw) {
                assert!(
                    broken.is_empty(),
                    "{} is a wrapper: {behaviour:?}",
                    flaw.name()
                );
                continue;
            }
            assert_eq!(broken.len(), 1, "{}: {behaviour:?}", flaw.name());
            assert!(off.insert(broken[0]), "{} shares its switch", flaw.name());
        }
        assert_eq!(
            off.len(),
            switches(Behaviour::CORRECT).len(),
            "a switch no flaw turns off"
        );
    }
}
