//! Reporters: the terminal table with evidence, JUnit XML, JSON and Markdown, and the progress display.
//!
//! Every reporter reads a finished [`RunReport`](crate::model::RunReport) (or, for the progress
//! display, the [`RunEvent`](crate::model::RunEvent)s as they arrive) and renders it; none of them
//! computes a verdict (model: nextest's reporter, one event stream fanned out to several outputs).
//!
//! - [`terminal`]: the table of checks, the evidence of every FAIL/WARN/UNKNOWN, the summary line.
//! - [`junit`]: one `<testcase>` per check (quick-junit), for CI test-result viewers.
//! - [`json`]: the [`RunReport`](crate::model::RunReport) itself, versioned (`docs/reading-reports.md`).
//! - [`markdown`]: a table and collapsible evidence for a CI job summary.
//! - [`progress`]: the indicatif progress bar, shown only on a terminal.
//! - [`files`]: writes the requested report files.

pub mod evidence;
pub mod files;
mod format;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod progress;
pub mod terminal;

pub use files::{ReportError, ReportFiles};
pub use format::{human_duration, Palette};
pub use progress::Progress;
pub use terminal::TerminalOptions;
