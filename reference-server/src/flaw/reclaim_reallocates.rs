//! `reclaim-reallocates`: a record reclaimed after the in-flight TTL gets a new nonce, so its side
//! effects start over: a handler still running past the TTL and the retry that reclaimed its key
//! each make a worker.

use crate::idempotency::{Bend, OnInFlight, Rules};
use crate::store::IdempotencyRecord;

/// Reclaims where the rules it wraps do, with a new nonce.
pub struct ReclaimReallocates;

impl Bend for ReclaimReallocates {
    fn on_in_flight(
        &self,
        inner: &dyn Rules,
        record: &IdempotencyRecord,
        past_ttl: bool,
    ) -> OnInFlight {
        match inner.on_in_flight(record, past_ttl) {
            OnInFlight::Reclaim { .. } => OnInFlight::Reclaim {
                nonce: uuid::Uuid::new_v4().to_string(),
            },
            other => other,
        }
    }
}
