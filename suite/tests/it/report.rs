//! The reporters render a fixed sample report the same way every time (snapshots), agree with each
//! other, and never invent a verdict.

use idemspec::model::{ExitPolicy, RunReport, Verdict};
use idemspec::report::{json, junit, markdown, terminal, Palette, ReportFiles, TerminalOptions};

use crate::support::redact::redacted;
use crate::support::sample;

/// Removes ANSI escape sequences (CSI ... letter).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn plain() -> TerminalOptions {
    TerminalOptions {
        palette: Palette::PLAIN,
        policy: ExitPolicy::default(),
    }
}

#[test]
fn terminal_report_snapshot() {
    let text = terminal::render(&sample::report(), plain());
    assert!(
        !text.contains('\u{1b}'),
        "plain output must carry no escapes"
    );
    redacted!(insta::assert_snapshot!(text));
}

#[test]
fn coloured_terminal_report_is_the_plain_one_plus_escapes() {
    let report = sample::report();
    let coloured = terminal::render(
        &report,
        TerminalOptions {
            palette: Palette::COLOURED,
            policy: ExitPolicy::default(),
        },
    );
    assert!(coloured.contains("\u{1b}["), "colour was asked for");
    assert_eq!(strip_ansi(&coloured), terminal::render(&report, plain()));
}

#[test]
fn terminal_prints_details_for_every_check_but_a_plain_pass() {
    let text = terminal::render(&sample::report(), plain());
    let below_table = text
        .split("╰")
        .last()
        .expect("the table has a bottom border");
    for (id, shown) in [
        ("lost-response", true),
        ("endpoint-scope", true),
        ("retry-storm", true),
        ("never-processed", false),
        ("stuck-in-flight", true),
        ("mismatch-status", true),
    ] {
        assert_eq!(
            below_table.contains(id),
            shown,
            "{id} details shown: {below_table}"
        );
    }
    // A SKIP shows its reason, an INFO what it recorded.
    assert!(below_table.contains("skipped: the target profile has no `crash` and `restart` hooks"));
    assert!(below_table.contains("note: mismatch answered 417"));
    // The evidence names the rule with its source, what the proxy did, and the responses.
    assert!(below_table.contains("rule broken: a retry after a lost response must replay"));
    assert!(below_table.contains("[source: article: the lost response; ietf-draft-07 §2.6]"));
    assert!(below_table.contains("rule `drop-first-create` applied drop_response; upstream answered 201; client got no complete response"));
    assert!(below_table.contains("location: /v1/workers/wkr-0002"));
}

#[test]
fn summary_follows_allow_unknown_without_changing_verdicts() {
    let mut report = sample::report();
    // Only UNKNOWN left: fails by default, passes with --allow-unknown.
    report.checks.retain(|c| c.verdict != Verdict::Fail);
    report.stats.fail = 0;
    let strict = terminal::summary(&report, plain());
    let lenient = terminal::summary(
        &report,
        TerminalOptions {
            policy: ExitPolicy {
                allow_unknown: true,
                ..ExitPolicy::default()
            },
            ..plain()
        },
    );
    assert!(strict.starts_with("result: FAILED."), "{strict}");
    assert!(lenient.starts_with("result: ok."), "{lenient}");
    assert!(
        lenient.contains("1 unknown (UNKNOWN allowed by --allow-unknown)"),
        "{lenient}"
    );
}

#[test]
fn junit_report_snapshot() {
    let xml = junit::render(&sample::report(), Default::default()).expect("the sample renders");
    redacted!(insta::assert_snapshot!(xml));
}

#[test]
fn junit_marks_fail_and_unknown_as_failures_and_skip_as_skipped() {
    let xml = junit::render(&sample::report(), Default::default()).expect("the sample renders");
    assert_eq!(xml.matches("<testcase ").count(), 6);
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
    assert!(xml.contains(r#"type="FAIL""#) && xml.contains(r#"type="UNKNOWN""#));
    assert_eq!(xml.matches("<skipped ").count(), 1);
    assert_eq!(xml.matches(r#"classname="leasebroker""#).count(), 6);
}

#[test]
fn json_report_snapshot_and_round_trip() {
    let report = sample::report();
    let text = json::render(&report).expect("the sample renders");
    redacted!(insta::assert_snapshot!(text));
    let back: RunReport = json::parse(&text).expect("the report reads back");
    assert_eq!(back.checks, report.checks);
    assert_eq!(back.stats, report.stats);
    assert_eq!(back.version, idemspec::model::RunReport::VERSION);
}

#[test]
fn markdown_report_snapshot() {
    let text = markdown::render(&sample::report(), ExitPolicy::default());
    redacted!(insta::assert_snapshot!(text));
}

#[test]
fn markdown_escapes_table_cells_and_collapses_evidence() {
    let text = markdown::render(&sample::report(), ExitPolicy::default());
    assert!(text.starts_with("## idemspec: `leasebroker` FAILED"));
    assert_eq!(text.matches("<details>").count(), 5);
    assert_eq!(text.matches("</details>").count(), 5);
    // Every table row has exactly the table's six pipes (titles may not break the table).
    for row in text.lines().filter(|l| l.starts_with("| `")) {
        assert_eq!(row.replace("\\|", "").matches('|').count(), 6, "{row}");
    }
}

#[test]
fn report_files_are_written_where_asked_with_the_rendered_content() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("nested/dir")).expect("create the directory");
    let files = ReportFiles {
        junit: Some(dir.path().join("nested/dir/junit.xml")),
        json: Some(dir.path().join("report.json")),
        markdown: Some(dir.path().join("summary.md")),
        html: None,
    };
    let report = sample::report();
    let written = files
        .write(&report, ExitPolicy::default())
        .expect("writable temp dir");
    assert_eq!(written.len(), 3);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).expect("written");
    assert_eq!(
        read("nested/dir/junit.xml"),
        junit::render(&report, Default::default()).expect("renders")
    );
    assert_eq!(read("report.json"), json::render(&report).expect("renders"));
    assert_eq!(
        read("summary.md"),
        markdown::render(&report, ExitPolicy::default())
    );
}

/// Report paths are checked before the run: a directory that does not exist is not created, a
/// path under a file (`/dev/null/x.json`) and a directory in the way are refused, naming the flag.
#[test]
fn report_paths_are_checked_before_the_run_and_no_directory_is_created() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no/such/dir/report.json");
    std::fs::create_dir(dir.path().join("taken")).expect("create dir");
    let cases = [
        (missing.clone(), "does not exist; create it first"),
        ("/dev/null/x.json".into(), "is not a directory"),
        (dir.path().join("taken"), "it is a directory"),
    ];
    for (path, says) in cases {
        let files = ReportFiles {
            json: Some(path.clone()),
            ..ReportFiles::default()
        };
        let err = files
            .check()
            .expect_err("refused before the run")
            .to_string();
        assert!(
            err.starts_with("`--report-json` cannot write") && err.contains(says),
            "{}: {err}",
            path.display()
        );
    }
    assert!(!dir.path().join("no").exists(), "no directory was created");
    let fine = ReportFiles {
        json: Some(dir.path().join("report.json")),
        junit: Some("/dev/stdout".into()),
        ..ReportFiles::default()
    };
    fine.check()
        .expect("a new file in an existing directory, and /dev/stdout");
}

#[test]
fn unwritable_report_names_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A directory where the file should go cannot be replaced by a report.
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).expect("create dir");
    let files = ReportFiles {
        json: Some(target.clone()),
        ..ReportFiles::default()
    };
    let err = files
        .write(&sample::report(), ExitPolicy::default())
        .expect_err("a directory is in the way");
    assert_eq!(
        err.to_string(),
        format!("write report `{}`", target.display())
    );
}

/// Two flags naming one file (even spelled differently) are refused before the run: the later
/// report would silently replace the earlier one.
#[test]
fn two_reports_in_one_file_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = ReportFiles {
        junit: Some(dir.path().join("out.xml")),
        markdown: Some(dir.path().join(".").join("out.xml")),
        ..ReportFiles::default()
    };
    let err = files.check().expect_err("one file, two reports");
    let text = err.to_string();
    assert!(
        text.contains("--report-junit") && text.contains("--report-markdown"),
        "{text}"
    );
    let distinct = ReportFiles {
        junit: Some(dir.path().join("out.xml")),
        json: Some(dir.path().join("out.json")),
        markdown: Some(dir.path().join("out.md")),
        html: None,
    };
    distinct.check().expect("three files");
}

/// A new report is readable by others (a CI artefact; the temporary file it is written through is
/// 0600), an existing file keeps its mode, and a symlink (`/dev/stdout` is one) is written through,
/// not replaced by a regular file.
#[cfg(unix)]
#[test]
fn report_files_are_readable_and_symlinks_are_written_through() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("written").permissions().mode() & 0o777;
    let fresh = dir.path().join("fresh.json");
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "old").expect("write");
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let real = dir.path().join("real.md");
    std::fs::write(&real, "").expect("write");
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let files = ReportFiles {
        junit: Some(kept.clone()),
        json: Some(fresh.clone()),
        markdown: Some(link.clone()),
        html: None,
    };
    let report = sample::report();
    files
        .write(&report, ExitPolicy::default())
        .expect("writable temp dir");
    assert_eq!(mode(&fresh), 0o644);
    assert_eq!(mode(&kept), 0o640);
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("still there")
            .file_type()
            .is_symlink(),
        "the symlink was replaced"
    );
    assert_eq!(
        std::fs::read_to_string(&real).expect("written through"),
        markdown::render(&report, ExitPolicy::default())
    );
}

#[test]
fn long_titles_are_cut_in_the_table_and_sources_never_repeated() {
    let mut report = sample::report();
    let lost = &mut report.checks[1];
    lost.title = "word ".repeat(30);
    lost.summary = format!("the retry created a second worker ({})", lost.reference);
    let text = terminal::render(&report, plain());
    let row = text
        .lines()
        .find(|l| l.contains("│ lost-response"))
        .expect("the row is there");
    assert!(row.contains('…'), "{row}");
    assert!(row.chars().count() < 130, "{row}");
    let rule = text
        .lines()
        .find(|l| l.trim_start().starts_with("rule broken: the retry created"))
        .expect("the evidence is there");
    assert_eq!(rule.matches("ietf-draft-07 §2.6").count(), 1, "{rule}");
}

/// Every field the JSON report holds is documented in `docs/reading-reports.md`: a field added to
/// the model without a line in the schema fails here.
#[test]
fn every_json_field_is_documented() {
    fn keys(value: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    out.insert(key.clone());
                    keys(inner, out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|i| keys(i, out)),
            _ => {}
        }
    }
    let doc = include_str!("../../../docs/reading-reports.md");
    let value = serde_json::to_value(sample::report()).expect("serialises");
    let mut all = std::collections::BTreeSet::new();
    keys(&value, &mut all);
    let undocumented: Vec<&String> = all
        .iter()
        .filter(|key| {
            ["`", "."]
                .iter()
                .flat_map(|before| ["`", "[]`"].map(|after| format!("{before}{key}{after}")))
                .all(|form| !doc.contains(&form))
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/reading-reports.md: {undocumented:?}"
    );
}
