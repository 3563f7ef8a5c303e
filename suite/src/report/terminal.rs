//! The terminal report: a header naming the target and the contract assumed, a table of every check
//! (id, title, level, verdict, time), under it the evidence of every FAIL, WARN and UNKNOWN, the
//! reason of every SKIP, what every INFO recorded and the notes of a PASS, and a summary line with
//! the counts.

use std::fmt::Write as _;

use tabled::builder::Builder;
use tabled::settings::object::{Cell, Columns};
use tabled::settings::{Alignment, Color, Style, Width};

use super::format::{checks, counts};
use super::{evidence_text, human_duration, Palette};
use crate::model::{CheckOutcome, ExitCode, ExitPolicy, RunReport, Verdict};

/// Widest title shown in the table, in characters.
const TITLE_WIDTH: usize = 60;

/// How to render the terminal report.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalOptions {
    /// Colours, when stdout is a terminal and the user did not turn them off.
    pub palette: Palette,
    /// What the run may end with and still succeed (`--allow-unknown`, `--allow-nothing-judged`);
    /// the summary's result says so.
    pub policy: ExitPolicy,
}

/// Whether a check gets a block under the table: every verdict but PASS (evidence, the reason of a
/// SKIP, what an INFO recorded), and a PASS that noted what another check owns.
pub fn has_details(check: &CheckOutcome) -> bool {
    check.verdict != Verdict::Pass || !check.notes.is_empty()
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
    if let Some(log) = &report.target_log {
        let _ = writeln!(
            out,
            "{}\n",
            palette.dim(&format!("target started by idemspec; its log: {log}"))
        );
    }
    let warn = palette.verdict_style(Verdict::Warn);
    for warning in &report.warnings {
        let _ = writeln!(out, "{}", palette.paint(warn, warning));
    }
    let tls = report.tls_lines();
    for line in &tls {
        let _ = writeln!(out, "{}", palette.dim(line));
    }
    if !report.warnings.is_empty() || !tls.is_empty() {
        out.push('\n');
    }
    out.push_str(&table(&report.checks, palette));
    out.push('\n');

    for check in &report.checks {
        let body = match check.verdict {
            // A plain PASS is its row; a PASS that saw what another check owns shows that note.
            _ if !has_details(check) => continue,
            Verdict::Pass => check
                .notes
                .iter()
                .map(|note| format!("  note: {note}\n"))
                .collect(),
            _ => evidence_text::text(check, "  "),
        };
        out.push('\n');
        let _ = writeln!(
            out,
            "{} {} {}",
            palette.verdict(check.verdict, &check.label()),
            palette.bold(&check.id),
            palette.dim(&format!("({}) {}", check.level, check.title))
        );
        out.push_str(&body);
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
            check.label(),
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
    let policy = options.policy;
    let result = match stats.exit_code(policy) {
        ExitCode::Success => options.palette.verdict(Verdict::Pass, "ok"),
        ExitCode::NothingJudged => options.palette.verdict(Verdict::Fail, "NOTHING JUDGED"),
        _ => options.palette.verdict(Verdict::Fail, "FAILED"),
    };
    let mut unknown_note = String::new();
    if stats.unknown > 0 && policy.allow_unknown {
        unknown_note.push_str(" (UNKNOWN allowed by --allow-unknown)");
    }
    if stats.documented_fail > 0 && !policy.fail_documented {
        unknown_note
            .push_str(" (a FAIL as documented does not fail the run; --fail-documented makes it)");
    }
    if stats.judged() == 0 {
        unknown_note.push_str(if policy.allow_nothing_judged {
            " (no check judged anything; allowed by --allow-nothing-judged)"
        } else {
            " (no check judged anything: every one was skipped, only recorded, or undecided)"
        });
    }
    format!(
        "result: {result}. {}{unknown_note} ({} in {})",
        counts(stats),
        checks(report.checks.len()),
        human_duration(report.duration_ms)
    )
}
