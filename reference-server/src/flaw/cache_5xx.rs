//! `cache-5xx`: a 5xx is stored and replayed instead of marking the record failed, so a retry after
//! a transient failure gets the failure again (and an asynchronous create's failed boot keeps its
//! key answered by the stored `202`).

use http::StatusCode;

use crate::idempotency::{Bend, Rules};

/// Stores what the rules it wraps store, and every 5xx.
pub struct Cache5xx;

impl Bend for Cache5xx {
    fn stores(&self, inner: &dyn Rules, status: StatusCode) -> bool {
        inner.stores(status) || status.is_server_error()
    }
}
