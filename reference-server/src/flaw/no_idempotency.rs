//! `no-idempotency`: the Idempotency-Key is ignored. No request is recorded: every one runs, with
//! fresh side-effect sub-keys.

use http::Method;

use crate::idempotency::{Bend, Rules};

/// Covers no request.
pub struct NoIdempotency;

impl Bend for NoIdempotency {
    fn covers(&self, _inner: &dyn Rules, _method: &Method) -> bool {
        false
    }
}
