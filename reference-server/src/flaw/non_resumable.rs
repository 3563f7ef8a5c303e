//! `non-resumable`: side effects use fresh random sub-keys on every attempt, so a retry after a
//! partial failure allocates a second node and leaks the first lease.

use crate::idempotency::{Bend, Keyed, OpSeed, Rules};

/// A random seed for every attempt.
pub struct NonResumable;

impl Bend for NonResumable {
    fn seed(&self, _inner: &dyn Rules, _request: Keyed<'_>) -> OpSeed {
        OpSeed::random()
    }
}
