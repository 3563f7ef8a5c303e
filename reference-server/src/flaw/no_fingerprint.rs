//! `no-fingerprint`: the fingerprint is not compared, so a different request with a used key gets
//! the first request's answer.

use crate::idempotency::{Bend, OnMismatch, Rules};
use crate::store::IdempotencyRecord;

/// Treats a different fingerprint as the same.
pub struct NoFingerprint;

impl Bend for NoFingerprint {
    fn on_mismatch(
        &self,
        _inner: &dyn Rules,
        _record: &IdempotencyRecord,
        _endpoint: &str,
    ) -> OnMismatch {
        OnMismatch::Ignore
    }
}
