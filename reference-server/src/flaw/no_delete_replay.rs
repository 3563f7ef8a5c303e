//! `no-delete-replay`: `DELETE` is not covered by the idempotency layer, so a retried `DELETE` runs
//! again and gets `404`.

use http::Method;

use crate::idempotency::{Bend, Rules};

/// Covers what the rules it wraps cover, but `DELETE`.
pub struct NoDeleteReplay;

impl Bend for NoDeleteReplay {
    fn covers(&self, inner: &dyn Rules, method: &Method) -> bool {
        method != Method::DELETE && inner.covers(method)
    }
}
