//! `reset_peer`: on the first data after the toxic took hold, wait `timeout` ms, then reset the
//! connection (TCP RST: `SO_LINGER` 0); the data is dropped (Toxiproxy's `toxics/reset_peer.go`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{bounded_ms, AttrError};

/// The attributes of a `reset_peer` toxic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ResetPeer {
    /// How long after the first data the reset comes, ms; 0: at once.
    pub timeout: i64,
}

impl ResetPeer {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        bounded_ms("timeout", self.timeout)
    }

    /// The wait between the first data and the reset.
    pub(crate) fn after(&self) -> Duration {
        Duration::from_millis(self.timeout as u64)
    }
}
