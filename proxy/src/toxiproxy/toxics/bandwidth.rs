//! `bandwidth`: the stream passes at most `rate` KB/s (1 KB = 1000 bytes), written in pieces
//! of at most 100 ms worth of bytes (Toxiproxy's `toxics/bandwidth.go`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::AttrError;

/// The largest accepted rate, KB/s (10 GB/s; any faster is no limit on loopback).
const MAX_RATE: i64 = 10_000_000;

/// The attributes of a `bandwidth` toxic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Bandwidth {
    /// KB/s; 0 lets the bytes through at full speed.
    pub rate: i64,
}

impl Bandwidth {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        if !(0..=MAX_RATE).contains(&self.rate) {
            return Err(AttrError::range("rate", 0, MAX_RATE, "KB/s"));
        }
        Ok(())
    }

    /// The size of one piece, bytes: 100 ms worth at `rate`; `None` without a limit.
    pub(crate) fn piece(&self) -> Option<usize> {
        (self.rate > 0).then(|| (self.rate * 100) as usize)
    }

    /// How long `bytes` take at `rate`.
    pub(crate) fn time_for(&self, bytes: usize) -> Duration {
        if self.rate <= 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(bytes as u64 * 1000 / self.rate as u64)
    }
}
