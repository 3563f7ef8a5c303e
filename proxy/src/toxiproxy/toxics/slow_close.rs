//! `slow_close`: when the sending side closes, the close is passed on `delay` ms later
//! (Toxiproxy's `toxics/slow_close.go`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{bounded_ms, AttrError};

/// The attributes of a `slow_close` toxic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SlowClose {
    /// How long a close waits, ms.
    pub delay: i64,
}

impl SlowClose {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        bounded_ms("delay", self.delay)
    }

    /// The wait before a close is passed on.
    pub(crate) fn delay(&self) -> Duration {
        Duration::from_millis(self.delay as u64)
    }
}
