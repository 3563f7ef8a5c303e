//! The contract's rules at each point where a server could get them wrong, one method of [`Rules`]
//! each: which requests are recorded, a record's scope, the seed of the side-effect sub-keys, the
//! claim, and what a different fingerprint, a key in flight and an answer's status get.
//!
//! [`ArticleRules`] keeps every rule (the `article` preset of docs/profile-reference.md); the layer
//! (`layer.rs`, `decide.rs`, `completion.rs`) asks it and never knows of flaws. A deliberate flaw (`crate::flaw`) is a
//! [`Bend`]: one rule bent, the rest passed through to the rules it wraps ([`Bent`]), so flaws
//! compose.

use std::sync::Arc;

use futures::future::BoxFuture;
use http::{Method, StatusCode};

use super::{is_storable, OpSeed};
use crate::store::{IdempotencyRecord, RecordStore, Scope, StoreError, UnguardedRecords};

/// A keyed request as the rules see it: who sent it, to which endpoint (`METHOD /route`), with
/// which key, and its fingerprint (hex SHA-256).
#[derive(Debug, Clone, Copy)]
pub struct Keyed<'a> {
    /// The principal.
    pub principal: &'a str,
    /// The endpoint, `METHOD /route` as the router matched it.
    pub endpoint: &'a str,
    /// The Idempotency-Key.
    pub key: &'a str,
    /// The request's fingerprint.
    pub fingerprint: &'a str,
}

/// The claim to make: a record of `scope` with `fingerprint`, at `now`, that may be swept from
/// `expires_at` once completed (both ms since the epoch).
#[derive(Debug, Clone, Copy)]
pub struct ClaimOf<'a> {
    /// The record's scope.
    pub scope: &'a Scope,
    /// The fingerprint to store.
    pub fingerprint: &'a str,
    /// The claim's time, ms since the epoch.
    pub now: i64,
    /// When a new record may be swept once completed, ms since the epoch.
    pub expires_at: i64,
}

/// The statements a claim may be made of: the records' ([`RecordStore::claim`], the atomic one)
/// and the unguarded read and overwrite ([`UnguardedRecords`]) that only a bent claim uses.
#[derive(Clone, Copy)]
pub struct ClaimStores<'a> {
    /// The idempotency records.
    pub records: &'a dyn RecordStore,
    /// The same records, read and overwritten without a claim.
    pub unguarded: &'a dyn UnguardedRecords,
}

/// What a claim found.
#[derive(Debug, Clone)]
pub enum Claimed {
    /// This request owns the record, claimed at `started_at` with `nonce`; `first`: the nonce is
    /// new (no attempt of this operation ran before, nothing to resume).
    Owned {
        /// The claim token: when the claim was taken, ms since the epoch.
        started_at: i64,
        /// The salt of the side-effect sub-keys.
        nonce: String,
        /// Whether no attempt ran before.
        first: bool,
    },
    /// A record someone else holds, which the state machine decides over.
    Found(IdempotencyRecord),
}

/// What a request whose fingerprint differs from its key's record gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMismatch {
    /// `409 key-reused-with-different-request`.
    Refuse,
    /// The record's stored answer.
    Replay,
    /// As if the fingerprints were the same.
    Ignore,
}

/// What a request finding its key's record in flight gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnInFlight {
    /// Take the record over (an optimistic reclaim), salting the sub-keys with `nonce`.
    Reclaim {
        /// The record's nonce (the retry resumes the stuck attempt) or a new one.
        nonce: String,
    },
    /// `409 request-in-progress` with `Retry-After`.
    Refuse,
    /// Run without owning the record: fresh sub-keys, nothing recorded.
    RunUnowned,
}

/// The rules the idempotency layer follows, at each point a server could bend them.
pub trait Rules: Send + Sync + 'static {
    /// Whether a mutating request with `method` is recorded and replayed at all.
    fn covers(&self, method: &Method) -> bool;

    /// The record's scope for `request`, and the fingerprint stored with it.
    fn scope(&self, request: Keyed<'_>) -> (Scope, String);

    /// The seed of `request`'s side-effect sub-keys, before the record's nonce salts it.
    fn seed(&self, request: Keyed<'_>) -> OpSeed;

    /// Whether [`Rules::claim`] is one atomic statement, which a create's own transaction can
    /// carry instead (the layer's unit of work).
    fn claim_is_atomic(&self) -> bool;

    /// The claim, made of the statements `on` offers: insert an in-flight record, or find the
    /// existing one.
    ///
    /// # Errors
    /// The store's.
    fn claim<'a>(
        &'a self,
        on: ClaimStores<'a>,
        claim: ClaimOf<'a>,
    ) -> BoxFuture<'a, Result<Claimed, StoreError>>;

    /// What a request whose fingerprint differs from `record`'s gets, on `endpoint`.
    fn on_mismatch(&self, record: &IdempotencyRecord, endpoint: &str) -> OnMismatch;

    /// What a request finding `record` in flight gets; `past_ttl`: the in-flight TTL has passed.
    fn on_in_flight(&self, record: &IdempotencyRecord, past_ttl: bool) -> OnInFlight;

    /// Whether an answer of `status` is stored and replayed; otherwise it marks the record failed
    /// (a retry runs again). A failure after the answer (an asynchronous create's) releases the
    /// key only where a 5xx is not stored.
    fn stores(&self, status: StatusCode) -> bool;
}

/// The rules leasebroker keeps: every rule of the article's contract (the `article` preset of
/// docs/profile-reference.md), which a `--flaw` bends one at a time. Named for the article, not
/// "contract": in the suite a `Contract` is what a target profile declares.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArticleRules;

impl Rules for ArticleRules {
    fn covers(&self, _method: &Method) -> bool {
        true
    }

    /// (principal, endpoint, key), the fingerprint as it is.
    fn scope(&self, request: Keyed<'_>) -> (Scope, String) {
        let scope = Scope {
            principal: request.principal.to_owned(),
            endpoint: request.endpoint.to_owned(),
            key: request.key.to_owned(),
        };
        (scope, request.fingerprint.to_owned())
    }

    /// Derived from (principal, endpoint, key): every retry finds the same sub-keys.
    fn seed(&self, request: Keyed<'_>) -> OpSeed {
        OpSeed::derive(request.principal, request.endpoint, request.key)
    }

    fn claim_is_atomic(&self) -> bool {
        true
    }

    /// One atomic statement ([`RecordStore::claim`]): exactly one of any number of concurrent
    /// callers inserts the record.
    fn claim<'a>(
        &'a self,
        on: ClaimStores<'a>,
        claim: ClaimOf<'a>,
    ) -> BoxFuture<'a, Result<Claimed, StoreError>> {
        Box::pin(async move {
            let found = on
                .records
                .claim(claim.scope, claim.fingerprint, claim.now, claim.expires_at)
                .await?;
            Ok(if found.inserted {
                Claimed::Owned {
                    started_at: found.record.started_at,
                    nonce: found.record.nonce,
                    first: true,
                }
            } else {
                Claimed::Found(found.record)
            })
        })
    }

    fn on_mismatch(&self, _record: &IdempotencyRecord, _endpoint: &str) -> OnMismatch {
        OnMismatch::Refuse
    }

    /// Refused while the in-flight TTL runs; then reclaimed keeping the record's nonce, so the
    /// retry resumes the stuck attempt's side effects.
    fn on_in_flight(&self, record: &IdempotencyRecord, past_ttl: bool) -> OnInFlight {
        if past_ttl {
            OnInFlight::Reclaim {
                nonce: record.nonce.clone(),
            }
        } else {
            OnInFlight::Refuse
        }
    }

    /// Terminal outcomes ([`is_storable`]): 2xx and 4xx but 408, 409, 425 and 429; never a 5xx.
    fn stores(&self, status: StatusCode) -> bool {
        is_storable(status)
    }
}

/// One rule bent: each method is given the rules it wraps (`inner`) and passes through to them
/// unless the flaw bends it. A flaw overrides the method of the one rule it bends (two where the
/// rule shows at two points: the claim's statement and whether it is atomic; the endpoint left out
/// of the scope and the hit from another endpoint it lets a request find).
#[allow(unused_variables)]
pub trait Bend: Send + Sync + 'static {
    /// [`Rules::covers`].
    fn covers(&self, inner: &dyn Rules, method: &Method) -> bool {
        inner.covers(method)
    }

    /// [`Rules::scope`].
    fn scope(&self, inner: &dyn Rules, request: Keyed<'_>) -> (Scope, String) {
        inner.scope(request)
    }

    /// [`Rules::seed`].
    fn seed(&self, inner: &dyn Rules, request: Keyed<'_>) -> OpSeed {
        inner.seed(request)
    }

    /// [`Rules::claim_is_atomic`].
    fn claim_is_atomic(&self, inner: &dyn Rules) -> bool {
        inner.claim_is_atomic()
    }

    /// [`Rules::claim`].
    ///
    /// # Errors
    /// The store's.
    fn claim<'a>(
        &'a self,
        inner: &'a dyn Rules,
        on: ClaimStores<'a>,
        claim: ClaimOf<'a>,
    ) -> BoxFuture<'a, Result<Claimed, StoreError>> {
        inner.claim(on, claim)
    }

    /// [`Rules::on_mismatch`].
    fn on_mismatch(
        &self,
        inner: &dyn Rules,
        record: &IdempotencyRecord,
        endpoint: &str,
    ) -> OnMismatch {
        inner.on_mismatch(record, endpoint)
    }

    /// [`Rules::on_in_flight`].
    fn on_in_flight(
        &self,
        inner: &dyn Rules,
        record: &IdempotencyRecord,
        past_ttl: bool,
    ) -> OnInFlight {
        inner.on_in_flight(record, past_ttl)
    }

    /// [`Rules::stores`].
    fn stores(&self, inner: &dyn Rules, status: StatusCode) -> bool {
        inner.stores(status)
    }
}

/// `inner`'s rules with `bend` applied.
pub struct Bent {
    inner: Arc<dyn Rules>,
    bend: Box<dyn Bend>,
}

impl Bent {
    /// `inner` bent by `bend`.
    pub fn new(inner: Arc<dyn Rules>, bend: Box<dyn Bend>) -> Self {
        Self { inner, bend }
    }
}

impl Rules for Bent {
    fn covers(&self, method: &Method) -> bool {
        self.bend.covers(self.inner.as_ref(), method)
    }

    fn scope(&self, request: Keyed<'_>) -> (Scope, String) {
        self.bend.scope(self.inner.as_ref(), request)
    }

    fn seed(&self, request: Keyed<'_>) -> OpSeed {
        self.bend.seed(self.inner.as_ref(), request)
    }

    fn claim_is_atomic(&self) -> bool {
        self.bend.claim_is_atomic(self.inner.as_ref())
    }

    fn claim<'a>(
        &'a self,
        on: ClaimStores<'a>,
        claim: ClaimOf<'a>,
    ) -> BoxFuture<'a, Result<Claimed, StoreError>> {
        self.bend.claim(self.inner.as_ref(), on, claim)
    }

    fn on_mismatch(&self, record: &IdempotencyRecord, endpoint: &str) -> OnMismatch {
        self.bend.on_mismatch(self.inner.as_ref(), record, endpoint)
    }

    fn on_in_flight(&self, record: &IdempotencyRecord, past_ttl: bool) -> OnInFlight {
        self.bend
            .on_in_flight(self.inner.as_ref(), record, past_ttl)
    }

    fn stores(&self, status: StatusCode) -> bool {
        self.bend.stores(self.inner.as_ref(), status)
    }
}
