//! `limit_data`: the connection is closed once `bytes` bytes have passed in the toxic's
//! direction (Toxiproxy's `toxics/limit_data.go`).

use serde::{Deserialize, Serialize};

use super::AttrError;

/// The attributes of a `limit_data` toxic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct LimitData {
    /// How many bytes pass before the close; 0 closes on the first data.
    pub bytes: i64,
}

impl LimitData {
    pub(super) fn check(&self) -> Result<(), AttrError> {
        if self.bytes < 0 {
            return Err(AttrError::range("bytes", 0, i64::MAX, "bytes"));
        }
        Ok(())
    }

    /// How many of `offered` bytes may pass when `sent` have passed, and whether the limit is
    /// then reached.
    pub(crate) fn admit(&self, sent: u64, offered: usize) -> (usize, bool) {
        let left = (self.bytes as u64).saturating_sub(sent);
        let take = left.min(offered as u64);
        (take as usize, take == left)
    }
}
