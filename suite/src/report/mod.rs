//! Reporters: the terminal table with evidence, JUnit XML, JSON, Markdown and HTML, and the progress
//! display.
//!
//! The [`Reporter`] receives the run's [`RunEvent`](crate::model::RunEvent)s and fans them out:
//! to the progress display as they arrive, and at the end to the terminal report and the report
//! files, each of which renders the finished [`RunReport`](crate::model::RunReport); none of them
//! computes a verdict (model: nextest's reporter, one event stream fanned out to several outputs).
//!
//! - [`reporter`]: the [`Reporter`] and the [`Output`] it prints through.
//! - [`terminal`]: the table of checks, the evidence of every FAIL/WARN/UNKNOWN, the summary line.
//! - [`junit`]: one `<testcase>` per check (quick-junit), for CI test-result viewers.
//! - [`json`]: the [`RunReport`](crate::model::RunReport) itself, versioned (`docs/reading-reports.md`).
//! - [`markdown`]: a table and collapsible evidence for a CI job summary.
//! - [`html`]: one self-contained page with every check's evidence and a timeline of its requests.
//! - [`progress`]: the indicatif progress bar, shown only on a terminal.
//! - [`files`]: writes the requested report files.

pub mod evidence_text;
pub mod files;
mod format;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod progress;
pub mod reporter;
pub mod terminal;

pub use files::{ReportError, ReportFiles};
pub use format::{human_duration, Palette};
pub use progress::Progress;
pub use reporter::{Output, Reporter, ReporterOptions};
pub use terminal::TerminalOptions;
