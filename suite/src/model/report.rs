//! The whole result of a run, as every report file renders it.

use serde::{Deserialize, Serialize};

use super::{CheckOutcome, RunStats};

/// The whole result of a run, as the JSON report serialises it (with a `version` field).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Schema version of this report; bumped on incompatible changes.
    pub version: u32,
    /// The target profile's name.
    pub target: String,
    /// The contract preset the verdicts were judged against, e.g. `article`.
    pub contract: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time of the whole run, in ms.
    pub duration_ms: u64,
    /// One outcome per check, in run order.
    pub checks: Vec<CheckOutcome>,
    /// Counts per verdict.
    pub stats: RunStats,
    /// The log of a target idemspec started itself (the profile's `process`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_log: Option<String>,
}

impl RunReport {
    /// The schema version this build writes in [`RunReport::version`]; bumped on incompatible
    /// changes (fields are only ever added within a version; `docs/reading-reports.md`).
    pub const VERSION: u32 = 1;
}
