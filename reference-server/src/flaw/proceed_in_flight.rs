//! `proceed-in-flight`: a request finding its key in flight runs anyway, with fresh sub-keys,
//! instead of getting `409`.

use crate::idempotency::{Bend, OnInFlight, Rules};
use crate::store::IdempotencyRecord;

/// Runs, without owning the record, where the rules it wraps refuse.
pub struct ProceedInFlight;

impl Bend for ProceedInFlight {
    fn on_in_flight(
        &self,
        inner: &dyn Rules,
        record: &IdempotencyRecord,
        past_ttl: bool,
    ) -> OnInFlight {
        match inner.on_in_flight(record, past_ttl) {
            OnInFlight::Refuse => OnInFlight::RunUnowned,
            other => other,
        }
    }
}
