//! `latency`: every chunk waits `latency` ms, plus or minus up to `jitter` ms, before it is
//! passed on (Toxiproxy's `toxics/latency.go`).

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{bounded_ms, AttrError};

/// The attributes of a `latency` toxic, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Latency {
    /// The delay of each chunk, ms.
    pub latency: i64,
    /// The largest deviation from `latency`, either way, ms (uniform).
    pub jitter: i64,
}

impl Latency {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        bounded_ms("latency", self.latency)?;
        bounded_ms("jitter", self.jitter)
    }

    /// One chunk's delay: uniform in `[latency - jitter, latency + jitter)`, never negative.
    pub(crate) fn delay(&self, rng: &mut impl Rng) -> Duration {
        let offset = if self.jitter > 0 {
            rng.gen_range(-self.jitter..self.jitter)
        } else {
            0
        };
        Duration::from_millis((self.latency + offset).max(0) as u64)
    }
}
