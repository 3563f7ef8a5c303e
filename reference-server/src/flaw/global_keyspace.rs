//! `global-keyspace`: records are scoped by (endpoint, key) without the principal, so one
//! principal's answer is replayed to another who sends the same key.

use crate::idempotency::{Bend, Keyed, Rules};
use crate::store::Scope;

/// Puts `*` for the principal in every record's scope.
pub struct GlobalKeyspace;

impl Bend for GlobalKeyspace {
    fn scope(&self, inner: &dyn Rules, request: Keyed<'_>) -> (Scope, String) {
        let (scope, fingerprint) = inner.scope(request);
        let scope = Scope {
            principal: "*".into(),
            ..scope
        };
        (scope, fingerprint)
    }
}
