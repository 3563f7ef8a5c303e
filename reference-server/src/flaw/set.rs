//! The flaws by name (`--flaw NAME`, repeatable) and the set a server runs with.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{
    cache_5xx, check_then_act, endpoint_unscoped, global_keyspace, no_delete_replay,
    no_fingerprint, no_idempotency, no_in_flight_ttl, non_resumable, proceed_in_flight,
    reclaim_reallocates,
};
use crate::idempotency::{ArticleRules, Bend, Bent, Rules};

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
    /// An in-flight record is never reclaimed: after a crash the key is locked out for good.
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
    /// Replays carry none of their stored headers (`Location`, `Content-Type`).
    ReplayDropsHeaders,
    /// Records are keyed by (principal, key) without the endpoint, and a hit recorded on another
    /// endpoint is replayed as this request's answer.
    EndpointUnscoped,
    /// A record reclaimed after the in-flight TTL gets a fresh nonce, so its side effects start
    /// over: a handler still running past the TTL and the retry that reclaimed its key each make
    /// a worker.
    ReclaimReallocates,
    /// A create's answer (and its replay) carries no `Location`.
    CreateDropsLocation,
    /// A create whose boot fails still writes its worker: a failed request leaves a resource behind.
    FailedCreateLeavesWorker,
}

/// The flaws that are wrappers around a route (in the router), not bends of the layer's rules.
pub const WRAPPERS: &[Flaw] = &[Flaw::ReplayDropsHeaders, Flaw::CreateDropsLocation];

impl Flaw {
    /// The rule of the idempotency layer this flaw bends, from its file; `None` for a wrapper
    /// ([`WRAPPERS`]) and for the fleet's `failed-create-leaves-worker`.
    pub fn bend(self) -> Option<Box<dyn Bend>> {
        Some(match self {
            Self::NoIdempotency => Box::new(no_idempotency::NoIdempotency),
            Self::NoFingerprint => Box::new(no_fingerprint::NoFingerprint),
            Self::CheckThenAct => Box::new(check_then_act::CheckThenAct),
            Self::NoInFlightTtl => Box::new(no_in_flight_ttl::NoInFlightTtl),
            Self::Cache5xx => Box::new(cache_5xx::Cache5xx),
            Self::GlobalKeyspace => Box::new(global_keyspace::GlobalKeyspace),
            Self::NoDeleteReplay => Box::new(no_delete_replay::NoDeleteReplay),
            Self::NonResumable => Box::new(non_resumable::NonResumable),
            Self::ProceedInFlight => Box::new(proceed_in_flight::ProceedInFlight),
            Self::EndpointUnscoped => Box::new(endpoint_unscoped::EndpointUnscoped),
            Self::ReclaimReallocates => Box::new(reclaim_reallocates::ReclaimReallocates),
            Self::ReplayDropsHeaders
            | Self::CreateDropsLocation
            | Self::FailedCreateLeavesWorker => return None,
        })
    }

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

    /// The rules the idempotency layer follows with these flaws: the [`ArticleRules`], bent by each
    /// active flaw that bends one.
    pub fn rules(&self) -> Arc<dyn Rules> {
        self.iter()
            .filter_map(Flaw::bend)
            .fold(Arc::new(ArticleRules), |inner, bend| {
                Arc::new(Bent::new(inner, bend))
            })
    }
}

#[cfg(test)]
mod tests {
    use http::{Method, StatusCode};

    use super::*;
    use crate::idempotency::{Keyed, OnInFlight, OnMismatch};
    use crate::store::{IdempotencyRecord, RecordState};

    #[test]
    fn names_are_kebab_case() {
        assert_eq!(Flaw::Cache5xx.name(), "cache-5xx");
        assert_eq!(Flaw::CheckThenAct.name(), "check-then-act");
        assert_eq!(Flaw::NoInFlightTtl.name(), "no-in-flight-ttl");
        assert_eq!(Flaw::ReplayDropsHeaders.name(), "replay-drops-headers");
    }

    /// A record of `state` with `fingerprint`, nonce `n`, started at 0, never expiring.
    fn record(state: RecordState, fingerprint: &str) -> IdempotencyRecord {
        IdempotencyRecord {
            state,
            fingerprint: fingerprint.into(),
            nonce: "n".into(),
            started_at: 0,
            expires_at: i64::MAX,
            response: None,
        }
    }

    /// What `rules` answer at each point a flaw may bend, one entry per rule (the claim's
    /// statement is run against a store elsewhere: the flaw matrix and `tests/it/flaws.rs`).
    fn answers(rules: &dyn Rules) -> [String; 7] {
        let request = Keyed {
            principal: "alice",
            endpoint: "POST /v1/workers",
            key: "k",
            fingerprint: "f",
        };
        let in_flight = record(RecordState::InFlight, "f");
        let reclaim_keeps_nonce = |past_ttl| match rules.on_in_flight(&in_flight, past_ttl) {
            OnInFlight::Reclaim { nonce } => format!("reclaim, nonce kept: {}", nonce == "n"),
            other => format!("{other:?}"),
        };
        let seed = rules.seed(request).sub_key("x") == rules.seed(request).sub_key("x");
        let other_endpoint = record(RecordState::Completed, "POST /v1/workers/{id}/reboot|g");
        [
            format!(
                "{} {}",
                rules.covers(&Method::POST),
                rules.covers(&Method::DELETE)
            ),
            format!("{:?}", rules.scope(request)),
            format!("seed derived: {seed}"),
            format!("atomic: {}", rules.claim_is_atomic()),
            format!(
                "{:?} {:?}",
                rules.on_mismatch(&record(RecordState::Completed, "g"), request.endpoint),
                rules.on_mismatch(&other_endpoint, request.endpoint) == OnMismatch::Replay,
            ),
            format!(
                "{} / {}",
                reclaim_keeps_nonce(true),
                reclaim_keeps_nonce(false)
            ),
            format!(
                "{} {}",
                rules.stores(StatusCode::INTERNAL_SERVER_ERROR),
                rules.stores(StatusCode::CREATED),
            ),
        ]
    }

    /// Each flaw is a wrapper, the fleet's switch, or a bend that changes exactly one of the
    /// layer's answers.
    #[test]
    fn each_bend_changes_one_rule_and_the_rest_are_wrappers_or_the_fleet_s() {
        let contract = answers(&ArticleRules);
        for flaw in <Flaw as clap::ValueEnum>::value_variants() {
            let rules = Flaws::new([*flaw]).rules();
            let changed: Vec<usize> = answers(rules.as_ref())
                .iter()
                .zip(&contract)
                .enumerate()
                .filter(|(_, (bent, kept))| bent != kept)
                .map(|(i, _)| i)
                .collect();
            match flaw.bend() {
                // Leaving the endpoint out of the scope shows at two points: the scope, and a hit
                // from another endpoint (which only a scope without it can find).
                Some(_) if *flaw == Flaw::EndpointUnscoped => assert_eq!(changed, [1, 4]),
                Some(_) => assert_eq!(changed.len(), 1, "{} changes {changed:?}", flaw.name()),
                None => {
                    assert!(
                        changed.is_empty(),
                        "{} is no bend but changes {changed:?}",
                        flaw.name()
                    );
                    assert!(
                        WRAPPERS.contains(flaw) || *flaw == Flaw::FailedCreateLeavesWorker,
                        "{} is neither a bend nor a wrapper",
                        flaw.name()
                    );
                }
            }
        }
    }

    /// One file per flaw, named after it (`flaw/check_then_act.rs` for `check-then-act`).
    #[test]
    fn each_flaw_has_its_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/flaw");
        for flaw in <Flaw as clap::ValueEnum>::value_variants() {
            let file = dir.join(format!("{}.rs", flaw.name().replace('-', "_")));
            assert!(
                file.is_file(),
                "{} has no file {}",
                flaw.name(),
                file.display()
            );
        }
    }

    #[test]
    fn bends_stack() {
        let rules = Flaws::new([Flaw::NoInFlightTtl, Flaw::ProceedInFlight]).rules();
        let record = record(RecordState::InFlight, "f");
        // Never reclaimed (the TTL is ignored), and run where the contract would refuse.
        assert_eq!(rules.on_in_flight(&record, true), OnInFlight::RunUnowned);
    }
}
