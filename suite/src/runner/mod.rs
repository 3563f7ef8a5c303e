//! The runner: drives each check's steps against the target (through an embedded proxy where faults
//! apply), evaluates assertions into graded verdicts and emits [`RunEvent`](crate::model::RunEvent)s.

mod options;

pub use options::{EventSink, ReferenceOptions, RunError, RunOptions, Target};

use crate::model::RunReport;

/// Runs the selected checks and returns the report; progress goes to `events`
/// (`RunStarted`, then `CheckStarted`/`CheckFinished` per check, then `RunFinished`).
///
/// # Errors
/// [`RunError`] for configuration problems, an unknown `--only` id, a reference server or proxy that
/// would not start, or a target no base URL of which answers. Failed checks are not errors.
pub async fn run(opts: RunOptions, events: EventSink) -> Result<RunReport, RunError> {
    let _ = (opts, events);
    Err(RunError::UnknownCheck("runner not implemented yet".into()))
}
