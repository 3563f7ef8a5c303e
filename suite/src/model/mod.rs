//! What a run produces: verdicts, evidence, per-check outcomes, run events, statistics, the report
//! and the exit codes.
//!
//! The runner emits [`RunEvent`]s; reporters (terminal, JUnit, JSON, Markdown, HTML) consume them and never
//! compute verdicts. A FAIL is data, not an `Err`.
//!
//! Layout: `claim` (the facts a sentence states, and their audit against the exchanges), `outcome` (verdicts, evidence, one check's outcome), `event` (run events), `report` (the
//! whole run), `stats` (counts per verdict), `exit` (exit codes), `timeline` (a check's requests on
//! a time axis).

pub mod claim;
mod event;
mod exit;
mod outcome;
mod report;
mod stats;
mod timeline;

pub use claim::Claim;
pub use event::RunEvent;
pub use exit::ExitCode;
pub use outcome::{
    AsDocumented, CheckOutcome, Evidence, ProxyAction, RequestRecord, ResponseRecord, Verdict,
};
pub use report::{RunReport, TlsReached, TlsServed};
pub use stats::{ExitPolicy, RunStats};
pub use timeline::{AttemptEnd, Bucket, Lane, Span, Timeline};
