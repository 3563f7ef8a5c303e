//! `timeout`: no data passes (it is dropped); the connection is closed `timeout` ms after the
//! toxic took hold of it, or held open for ever when `timeout` is 0 (Toxiproxy's
//! `toxics/timeout.go`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{bounded_ms, AttrError};

/// The attributes of a `timeout` toxic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Timeout {
    /// How long until the connection is closed, ms; 0: never.
    pub timeout: i64,
}

impl Timeout {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        bounded_ms("timeout", self.timeout)
    }

    /// How long after the toxic took hold the connection closes; `None`: never.
    pub(crate) fn close_after(&self) -> Option<Duration> {
        (self.timeout > 0).then(|| Duration::from_millis(self.timeout as u64))
    }
}
