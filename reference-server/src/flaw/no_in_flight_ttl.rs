//! `no-in-flight-ttl`: an in-flight record is never reclaimed, so after a crash its key is locked
//! out for good (the sweeper removes only terminal records).

use crate::idempotency::{Bend, OnInFlight, Rules};
use crate::store::IdempotencyRecord;

/// Treats every in-flight record as younger than the in-flight TTL.
pub struct NoInFlightTtl;

impl Bend for NoInFlightTtl {
    fn on_in_flight(
        &self,
        inner: &dyn Rules,
        record: &IdempotencyRecord,
        _past_ttl: bool,
    ) -> OnInFlight {
        inner.on_in_flight(record, false)
    }
}
