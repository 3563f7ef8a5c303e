//! What a run produces: verdicts, evidence, per-check outcomes, run events and statistics.
//!
//! The runner emits [`RunEvent`]s; reporters (terminal, JUnit, JSON, Markdown) consume them and never
//! compute verdicts. A FAIL is data, not an `Err`.

mod outcome;
mod stats;

pub use outcome::{CheckOutcome, Evidence, ProxyAction, RequestRecord, ResponseRecord, Verdict};
pub use stats::{ExitCode, RunEvent, RunReport, RunStats};
