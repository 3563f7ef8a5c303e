//! The JUnit XML report (quick-junit): one `<testsuite>` named after the target, one `<testcase>`
//! per check with `classname` = the target.
//!
//! FAIL and UNKNOWN are `<failure>`s (type `FAIL` / `UNKNOWN`, message = the rule broken, text =
//! the evidence), SKIP is `<skipped>` with the reason, and PASS, WARN and INFO pass, WARN and INFO
//! carrying their evidence or notes in `<system-out>` so CI viewers still show them.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::evidence_text;
use crate::model::{CheckOutcome, ExitPolicy, RunReport, Verdict};

/// Renders `report` as JUnit XML; `policy` decides whether a FAIL the profile's `documented`
/// states is a failure (`--fail-documented`) or, as the exit code then ignores it, a passing case.
///
/// # Errors
/// Only if XML serialisation fails, which quick-junit reports for I/O on its writer.
pub fn render(
    report: &RunReport,
    policy: ExitPolicy,
) -> Result<String, quick_junit::SerializeError> {
    let mut suite = TestSuite::new(report.target.as_str());
    suite.set_time(Duration::from_millis(report.duration_ms));
    suite.add_property(("contract", report.contract.as_str()));
    suite.add_property(("started_at", report.started_at.as_str()));
    // The header every format shows (an unverified certificate's warning, how TLS was reached):
    // a property each, and the suite's output, where CI viewers show it.
    for warning in &report.warnings {
        suite.add_property(("warning", warning.as_str()));
    }
    for line in report.tls_lines() {
        suite.add_property(("tls", line.as_str()));
    }
    let header = report.header_lines();
    if !header.is_empty() {
        suite.set_system_out(header.join("\n"));
    }
    suite.add_test_cases(
        report
            .checks
            .iter()
            .map(|check| test_case(report, check, policy)),
    );

    let mut junit = Report::new("idemspec");
    junit.set_time(Duration::from_millis(report.duration_ms));
    junit.add_test_suite(suite);
    junit.to_string()
}

fn test_case(report: &RunReport, check: &CheckOutcome, policy: ExitPolicy) -> TestCase {
    let evidence = format!(
        "{} {} ({}), judged against contract `{}`\n{}",
        check.label(),
        check.id,
        check.level,
        report.contract,
        evidence_text::text(check, "  ")
    );
    let message = format!("{}{}", check.summary, evidence_text::source_suffix(check));
    // A FAIL the target's documentation states is written as a WARN is, a success with its
    // evidence in system-out, unless --fail-documented: the test view follows the exit code.
    let documented = check.documented.is_some() && !check.fails_run(policy);
    let status = match check.verdict {
        Verdict::Fail | Verdict::Unknown if !documented => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type(check.verdict.label())
                .set_message(message)
                .set_description(evidence.clone());
            status
        }
        Verdict::Skip => {
            let mut status = TestCaseStatus::skipped();
            status.set_type("SKIP").set_message(check.summary.as_str());
            status
        }
        Verdict::Pass | Verdict::Fail | Verdict::Warn | Verdict::Info | Verdict::Unknown => {
            TestCaseStatus::success()
        }
    };
    // The name is the check id alone, so CI test-history views track a check across runs.
    let mut case = TestCase::new(check.id.as_str(), status);
    case.set_classname(report.target.as_str())
        .set_time(Duration::from_millis(check.duration_ms));
    if documented || matches!(check.verdict, Verdict::Warn | Verdict::Info) {
        case.set_system_out(evidence);
    }
    case
}
