//! The Markdown report, for a CI job summary (GitHub's `$GITHUB_STEP_SUMMARY`, GitLab's
//! artefact viewer): a heading with the result, the table of checks, and for every check but a
//! plain PASS (evidence, a SKIP's reason, notes) a collapsible `<details>` block.

use std::fmt::Write as _;

use super::format::{checks, counts};
use super::{evidence_text, human_duration, terminal::has_details};
use crate::model::{ExitCode, ExitPolicy, RunReport, Verdict};

/// Renders `report` as GitHub-flavoured Markdown; `policy` (`--allow-unknown`,
/// `--allow-nothing-judged`) decides the result shown in the heading.
pub fn render(report: &RunReport, policy: ExitPolicy) -> String {
    let stats = &report.stats;
    let result = match stats.exit_code(policy) {
        ExitCode::Success => "passed",
        ExitCode::NothingJudged => "judged nothing",
        _ => "FAILED",
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## idemspec: `{}` {result}\n\nContract assumed: `{}`. {} in {}: {}.\n",
        report.target,
        report.contract,
        checks(report.checks.len()),
        human_duration(report.duration_ms),
        counts(stats),
    );
    for line in report.header_lines() {
        let _ = writeln!(out, "> {}\n", html(&line));
    }
    out.push_str("| check | title | level | verdict | time |\n|---|---|---|---|--:|\n");
    for check in &report.checks {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} {} | {} |",
            check.id,
            cell(&check.title),
            check.level,
            icon(check.verdict),
            check.label(),
            human_duration(check.duration_ms)
        );
    }
    for check in report.checks.iter().filter(|c| has_details(c)) {
        let _ = write!(
            out,
            "\n<details><summary>{} <code>{}</code> ({}): {}</summary>\n\n```text\n{}```\n\n</details>\n",
            check.label(),
            check.id,
            check.level,
            html(&check.summary),
            evidence_text::text(check, "").replace("```", "'''")
        );
    }
    out
}

fn icon(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "✅",
        Verdict::Fail => "❌",
        Verdict::Warn => "⚠️",
        Verdict::Info => "ℹ️",
        Verdict::Skip => "⏭️",
        Verdict::Unknown => "❓",
    }
}

/// Text safe inside a table cell: pipes escaped, no line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Text safe inside an HTML element.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
