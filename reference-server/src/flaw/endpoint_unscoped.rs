//! `endpoint-unscoped`: records are scoped by (principal, key) without the endpoint, and a hit
//! recorded on another endpoint is replayed as this request's answer (a reboot gets the create's
//! `201`).

use crate::idempotency::{Bend, Keyed, OnMismatch, Rules};
use crate::store::{IdempotencyRecord, RecordState, Scope};

/// Puts `*` for the endpoint in every record's scope, and keeps the endpoint in the stored
/// fingerprint instead (`METHOD /route|fingerprint`), so a hit from another endpoint is recognised
/// and replayed.
pub struct EndpointUnscoped;

impl Bend for EndpointUnscoped {
    fn scope(&self, inner: &dyn Rules, request: Keyed<'_>) -> (Scope, String) {
        let (scope, fingerprint) = inner.scope(request);
        let scope = Scope {
            endpoint: "*".into(),
            ..scope
        };
        (scope, format!("{}|{fingerprint}", request.endpoint))
    }

    fn on_mismatch(
        &self,
        inner: &dyn Rules,
        record: &IdempotencyRecord,
        endpoint: &str,
    ) -> OnMismatch {
        let other_endpoint = !record.fingerprint.starts_with(&format!("{endpoint}|"));
        if other_endpoint && record.state == RecordState::Completed {
            OnMismatch::Replay
        } else {
            inner.on_mismatch(record, endpoint)
        }
    }
}
