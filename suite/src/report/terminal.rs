//! The terminal report: a header naming the target and the contract assumed, a table of every check
//! (id, title, level, verdict, time), the evidence of every FAIL, WARN and UNKNOWN under it, and a
//! summary line with the counts.

use std::fmt::Write as _;

use tabled::builder::Builder;
use tabled::settings::object::{Cell, Columns};
use tabled::settings::{Alignment, Color, Style, Width};

use super::format::{checks, counts};
use super::{evidence, human_duration, Palette};
use crate::model::{CheckOutcome, ExitCode, RunReport, Verdict};

/// Widest title shown in the table, in characters.
const TITLE_WIDTH: usize = 60;

/// How to render the terminal report.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalOptions {
    /// Colours, when stdout is a terminal and the user did not turn them off.
    pub palette: Palette,
    /// Whether UNKNOWN verdicts are tolerated (`--allow-unknown`); the summary's result says so.
    pub allow_unknown: bool,
}

/// Verdicts whose evidence is printed under the table.
pub fn needs_evidence(verdict: Verdict) -> bool {
    matches!(verdict, Verdict::Fail | Verdict::Warn | Verdict::Unknown)
}

/// The whole terminal report as text (ends with a newline).
pub fn render(report: &RunReport, options: TerminalOptions) -> String {
    let palette = options.palette;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} target {}, contract {}, {}\n",
        palette.bold("idemspec"),
        palette.bold(&report.target),
        palette.bold(&report.contract),
        checks(report.checks.len())
    );
    out.push_str(&table(&report.checks, palette));
    out.push('\n');

    let flagged: Vec<&CheckOutcome> = report
        .checks
        .iter()
        .filter(|check| needs_evidence(check.verdict))
        .collect();
    for check in flagged {
        out.push('\n');
        let _ = writeln!(
            out,
            "{} {} {}",
            palette.verdict(check.verdict, check.verdict.label()),
            palette.bold(&check.id),
            palette.dim(&format!("({}) {}", check.level, check.title))
        );
        out.push_str(&evidence::text(check, "  "));
    }
    out.push('\n');
    out.push_str(&summary(report, options));
    out.push('\n');
    out
}

/// The table of checks alone (no trailing newline).
pub fn table(checks: &[CheckOutcome], palette: Palette) -> String {
    let mut builder = Builder::default();
    builder.push_record(["check", "title", "level", "verdict", "time"]);
    for check in checks {
        builder.push_record([
            check.id.clone(),
            check.title.clone(),
            check.level.to_string(),
            check.verdict.label().to_owned(),
            human_duration(check.duration_ms),
        ]);
    }
    let mut table = builder.build();
    // Titles are cut to keep one line per check; the evidence and the JSON report carry them whole.
    table
        .with(Style::rounded())
        .modify(Columns::new(1..2), Width::truncate(TITLE_WIDTH).suffix("…"))
        .modify(Columns::new(4..5), Alignment::right());
    if palette.enabled {
        // Colour is set on the cell, not written into its text, so column widths stay right.
        for (row, check) in checks.iter().enumerate() {
            table.modify(Cell::new(row + 1, 3), verdict_colour(check.verdict));
        }
    }
    table.to_string()
}

fn verdict_colour(verdict: Verdict) -> Color {
    match verdict {
        Verdict::Pass => Color::FG_GREEN,
        Verdict::Fail => Color::FG_RED | Color::BOLD,
        Verdict::Warn => Color::FG_YELLOW | Color::BOLD,
        Verdict::Info => Color::FG_BLUE,
        Verdict::Skip => Color::FG_BRIGHT_BLACK,
        Verdict::Unknown => Color::FG_MAGENTA | Color::BOLD,
    }
}

/// The closing line: the overall result and the counts per verdict, e.g.
/// `result: FAILED. 14 passed, 1 failed, 1 warned, 0 info, 0 skipped, 0 unknown (16 checks in 12.30s)`.
pub fn summary(report: &RunReport, options: TerminalOptions) -> String {
    let stats = &report.stats;
    let result = match stats.exit_code(options.allow_unknown) {
        ExitCode::Success => options.palette.verdict(Verdict::Pass, "ok"),
        _ => options.palette.verdict(Verdict::Fail, "FAILED"),
    };
    let unknown_note = if stats.unknown > 0 && options.allow_unknown {
        " (UNKNOWN allowed by --allow-unknown)"
    } else {
        ""
    };
    format!(
        "result: {result}. {}{unknown_note} ({} in {})",
        counts(stats),
        checks(report.checks.len()),
        human_duration(report.duration_ms)
    )
}
