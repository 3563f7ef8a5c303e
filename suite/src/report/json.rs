//! The JSON report: the [`RunReport`] itself, pretty-printed. Its schema (with the `version`
//! field, [`RunReport::VERSION`]) is documented in `docs/reading-reports.md`; fields are only ever added within a version.

use crate::model::RunReport;

/// Renders `report` as pretty-printed JSON (ends with a newline).
///
/// # Errors
/// Only if serialisation fails, which cannot happen for the model's plain data types.
pub fn render(report: &RunReport) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    Ok(text)
}

/// Reads a JSON report back (for tools that post-process reports, and the round-trip test).
///
/// # Errors
/// When `text` is not a JSON report of this schema.
pub fn parse(text: &str) -> Result<RunReport, serde_json::Error> {
    serde_json::from_str(text)
}
