//! The HTML report (`--report-html FILE`): one self-contained page — no network, no external
//! assets — with the summary, every check with its verdict, sentences and evidence, and for each
//! check a timeline of its requests drawn as SVG: one bar per attempt on a time axis per step,
//! coloured by how it ended, outlined where the proxy applied a fault (in the spirit of Jepsen's
//! timelines), or, for a check with hundreds of attempts, stacked counts per time slice.

use std::fmt::Write as _;

use super::format::{checks, counts};
use super::{evidence_text, human_duration};
use crate::model::{
    AttemptEnd, CheckOutcome, ExitCode, ExitPolicy, Lane, RunReport, Timeline, Verdict,
};

/// Width of the drawing area of a timeline, in SVG units.
const PLOT: f64 = 860.0;
/// Width of the lane labels, in SVG units.
const LABEL: f64 = 150.0;
/// Height of one lane.
const ROW: f64 = 18.0;
/// Height of one sub-row of a lane whose attempts overlap.
const SUB_ROW: f64 = 6.0;
/// Height of an aggregated timeline's bars at their tallest.
const BARS: f64 = 120.0;

/// The report's header lines as paragraphs, its warnings marked as such.
fn header_lines(report: &RunReport) -> String {
    let warnings = report
        .warnings
        .iter()
        .map(|w| format!("<p class=\"run-warning\">{}</p>", esc(w)));
    let reached = report
        .tls_lines()
        .into_iter()
        .map(|line| format!("<p>{}</p>", esc(&line)));
    warnings.chain(reached).collect()
}

/// Renders `report` as one HTML page; `policy` decides the result shown at the top.
pub fn render(report: &RunReport, policy: ExitPolicy) -> String {
    let result = match report.stats.exit_code(policy) {
        ExitCode::Success => ("passed", "pass"),
        ExitCode::NothingJudged => ("judged nothing", "unknown"),
        _ => ("FAILED", "fail"),
    };
    // A failed run opens on what did not pass: the passing checks are one click away.
    let (body, checked) = if result.1 == "fail" {
        (" class=\"only-open\"", " checked")
    } else {
        ("", "")
    };
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>idemspec: {target} {result}</title><style>{STYLE}</style></head><body{body}>\n\
         <header><h1>idemspec: <code>{target}</code> <span class=\"result {class}\">{result}</span></h1>\
         <p>Contract assumed: <code>{contract}</code>. {n} in {time}, started {started}: {counts}.</p>{tls}\
         <label><input type=\"checkbox\" id=\"only-open\"{checked}> show only checks that did not pass</label>\
         </header>\n",
        target = esc(&report.target),
        result = result.0,
        class = result.1,
        contract = esc(&report.contract),
        n = checks(report.checks.len()),
        time = human_duration(report.duration_ms),
        started = esc(&report.started_at),
        counts = counts(&report.stats),
        tls = header_lines(report),
    );
    out.push_str(&overview(report));
    out.push_str(&legend());
    for check in &report.checks {
        out.push_str(&section(check));
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

/// The table of checks, each row linking to its section.
fn overview(report: &RunReport) -> String {
    let mut out = String::from(
        "<table class=\"overview\"><thead><tr><th>check</th><th>title</th><th>level</th>\
         <th>verdict</th><th>time</th></tr></thead><tbody>\n",
    );
    for c in &report.checks {
        let _ = writeln!(
            out,
            "<tr class=\"row {v}\"><td><a href=\"#check-{id}\"><code>{id}</code></a></td><td>{title}</td>\
             <td>{level}</td><td><span class=\"badge {v}\">{label}</span></td><td class=\"num\">{time}</td></tr>",
            id = esc(&c.id),
            title = esc(&c.title),
            level = c.level,
            v = class(c.verdict),
            label = c.label(),
            time = human_duration(c.duration_ms),
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

/// What each colour and outline means.
fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">Timelines: ");
    for end in AttemptEnd::ALL {
        let _ = write!(
            out,
            "<span><svg width=\"14\" height=\"10\"><rect width=\"14\" height=\"10\" class=\"{}\"/></svg> {}</span> ",
            end_class(end),
            end.label()
        );
    }
    out.push_str(
        "<span><svg width=\"14\" height=\"10\"><rect width=\"14\" height=\"10\" class=\"success faulted\"/></svg> \
         the proxy applied a fault</span> — hover a bar for its status and what the proxy saw the upstream do.</p>\n",
    );
    out
}

/// One check: heading, sentences, timeline, evidence.
fn section(c: &CheckOutcome) -> String {
    let v = class(c.verdict);
    let open = matches!(c.verdict, Verdict::Fail | Verdict::Warn | Verdict::Unknown);
    let mut out = String::new();
    let _ = write!(
        out,
        "<section class=\"check {v}\" id=\"check-{id}\" data-verdict=\"{verdict}\">\
         <h2><span class=\"badge {v}\">{label}</span> <code>{id}</code> <small>({level})</small> {title}</h2>\
         <p class=\"summary\">{summary}</p><p class=\"source\">source: {reference}</p>",
        id = esc(&c.id),
        verdict = c.verdict.label(),
        label = c.label(),
        level = c.level,
        title = esc(&c.title),
        summary = esc(&c.summary),
        reference = esc(&c.reference),
    );
    if let Some(line) = c.documented_line() {
        let _ = write!(out, "<p class=\"documented\">{}</p>", esc(&line));
    }
    if !c.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for note in &c.notes {
            let _ = write!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul>");
    }
    out.push_str(&timeline(&c.timeline));
    if !c.evidence.is_empty() {
        let lines = evidence_text::lines(c);
        let _ = write!(
            out,
            "<details{}><summary>evidence: {} exchange{}, in the order sent</summary><pre>{}</pre></details>",
            if open { " open" } else { "" },
            c.evidence.len(),
            if c.evidence.len() == 1 { "" } else { "s" },
            esc(&lines.join("\n"))
        );
    }
    out.push_str("</section>\n");
    out
}

/// A timeline as SVG: lanes of bars, or stacked counts per time slice.
fn timeline(t: &Timeline) -> String {
    if t.attempts == 0 {
        return "<p class=\"timeline empty\">No request was sent.</p>".into();
    }
    let span = t.span_ms.max(1) as f64;
    let x = |ms: u64| LABEL + ms as f64 / span * PLOT;
    let mut out = String::new();
    if t.buckets.is_empty() {
        let mut rows = String::new();
        let mut y = 0.0;
        for lane in &t.lanes {
            y += lane_row(&mut rows, lane, y, &x);
        }
        let _ = write!(
            out,
            "<svg class=\"timeline\" role=\"img\" viewBox=\"0 0 {w} {height}\" width=\"100%\" \
             aria-label=\"{n} requests over {span}\">{rows}",
            w = LABEL + PLOT + 10.0,
            height = y + 24.0,
            n = t.attempts,
            span = human_duration(t.span_ms),
        );
        out.push_str(&axis(t, y + 4.0, &x));
        out.push_str("</svg>");
        return out;
    }
    let tallest = t
        .buckets
        .iter()
        .map(|b| b.counts.iter().sum::<u32>())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let _ = write!(
        out,
        "<p class=\"aggregate\">{n} requests from {lanes} steps or clients: too many to draw one by \
         one, so each bar counts the requests that started in {bucket}, by how they ended.</p>\
         <svg class=\"timeline aggregated\" role=\"img\" viewBox=\"0 0 {w} {h}\" width=\"100%\" \
         aria-label=\"{n} requests in {count} time slices\">",
        n = t.attempts,
        lanes = t.lanes_aggregated,
        bucket = human_duration(t.bucket_ms),
        w = LABEL + PLOT + 10.0,
        h = BARS + 28.0,
        count = t.buckets.len(),
    );
    let width = (t.bucket_ms as f64 / span * PLOT).max(1.0);
    for b in &t.buckets {
        let mut top = BARS;
        let total: u32 = b.counts.iter().sum();
        for (end, count) in AttemptEnd::ALL.iter().zip(b.counts) {
            if count == 0 {
                continue;
            }
            let h = f64::from(count) / tallest * BARS;
            top -= h;
            let _ = write!(
                out,
                "<rect class=\"{cls}\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{width:.1}\" height=\"{h:.1}\">\
                 <title>{start}: {count} {label}</title></rect>",
                cls = end_class(*end),
                x = x(b.start_ms),
                start = human_duration(b.start_ms),
                label = end.label(),
            );
        }
        if b.faulted > 0 {
            let _ = write!(
                out,
                "<rect class=\"fault-mark\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"3\">\
                 <title>{start}: {faulted} of {total} faulted by the proxy</title></rect>",
                x = x(b.start_ms),
                y = BARS + 1.0,
                start = human_duration(b.start_ms),
                faulted = b.faulted,
            );
        }
    }
    let _ = write!(
        out,
        "<text class=\"label\" x=\"4\" y=\"14\">{} at most</text>",
        tallest as u64
    );
    out.push_str(&axis(t, BARS + 6.0, &x));
    out.push_str("</svg>");
    out
}

/// Draws one lane at `y` — its name and one bar per attempt, each with a tooltip — and returns its
/// height. Attempts that overlap in time (a concurrent step) get sub-rows of their own, so every
/// one of them is seen.
fn lane_row(out: &mut String, lane: &Lane, y: f64, x: &dyn Fn(u64) -> f64) -> f64 {
    // Greedy interval packing: each attempt takes the first sub-row free at its start.
    let mut ends: Vec<u64> = Vec::new();
    let placed: Vec<usize> = lane
        .attempts
        .iter()
        .map(|a| {
            let end = a.start_ms + a.duration_ms.max(1);
            match ends.iter().position(|e| *e <= a.start_ms) {
                Some(i) => {
                    ends[i] = end;
                    i
                }
                None => {
                    ends.push(end);
                    ends.len() - 1
                }
            }
        })
        .collect();
    let sub = ends.len().max(1) as f64;
    let bar = if sub > 1.0 { SUB_ROW - 1.0 } else { ROW - 6.0 };
    let height = if sub > 1.0 { sub * SUB_ROW + 6.0 } else { ROW };
    let _ = write!(
        out,
        "<text class=\"label\" x=\"4\" y=\"{:.1}\">{}</text>",
        y + ROW - 5.0,
        esc(&lane.name)
    );
    for (a, row) in lane.attempts.iter().zip(placed) {
        let start = x(a.start_ms);
        let width = (x(a.start_ms + a.duration_ms) - start).max(2.0);
        let status = a.status.map_or("no response".into(), |s| s.to_string());
        let proxy = match (&a.fault, a.upstream_status) {
            (Some(f), Some(u)) => format!("; proxy: {f}, upstream answered {u}"),
            (Some(f), None) => format!("; proxy: {f}, upstream never answered"),
            (None, Some(u)) => format!("; proxy passed it through, upstream answered {u}"),
            (None, None) => String::new(),
        };
        let _ = write!(
            out,
            "<rect class=\"{cls}{faulted}\" x=\"{start:.1}\" y=\"{top:.1}\" width=\"{width:.1}\" \
             height=\"{bar:.1}\" rx=\"1\"><title>{name}: {status} after {took} ({label}){proxy}</title></rect>",
            cls = end_class(a.end),
            faulted = if a.fault.is_some() { " faulted" } else { "" },
            top = y + 3.0 + row as f64 * SUB_ROW,
            name = esc(&lane.name),
            took = human_duration(a.duration_ms),
            label = a.end.label(),
            proxy = esc(&proxy),
        );
    }
    height
}

/// The time axis under a timeline: 0, the middle and the end.
fn axis(t: &Timeline, y: f64, x: &dyn Fn(u64) -> f64) -> String {
    let mut out = format!(
        "<line class=\"axis\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
        x(0),
        x(t.span_ms)
    );
    for (ms, anchor) in [(0, "start"), (t.span_ms / 2, "middle"), (t.span_ms, "end")] {
        let _ = write!(
            out,
            "<text class=\"tick\" text-anchor=\"{anchor}\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x(ms),
            y + 14.0,
            human_duration(ms)
        );
    }
    out
}

fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Warn => "warn",
        Verdict::Info => "info",
        Verdict::Skip => "skip",
        Verdict::Unknown => "unknown",
    }
}

fn end_class(end: AttemptEnd) -> &'static str {
    match end {
        AttemptEnd::Success => "success",
        AttemptEnd::Replay => "replay",
        AttemptEnd::InFlight => "in-flight",
        AttemptEnd::Mismatch => "mismatch",
        AttemptEnd::ClientError => "client-error",
        AttemptEnd::ServerError => "server-error",
        AttemptEnd::NoResponse => "no-response",
        AttemptEnd::Conflict => "conflict",
    }
}

/// Text safe in HTML content and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#1b1f24;background:#fff}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 6px}code{font-family:ui-monospace,Menlo,monospace}\
.result{padding:2px 8px;border-radius:4px;color:#fff}.result.pass{background:#1a7f37}.result.fail{background:#cf222e}.result.unknown{background:#8250df}\
table.overview{border-collapse:collapse;width:100%;margin:12px 0}table.overview td,table.overview th{border-bottom:1px solid #d0d7de;padding:4px 8px;text-align:left}\
td.num{text-align:right}.badge{display:inline-block;min-width:58px;text-align:center;border-radius:4px;padding:0 6px;font-weight:600;color:#fff}\
.run-warning{color:#fff;background:#bf8700;padding:.3em .6em;font-weight:bold}\
.badge.pass{background:#1a7f37}.badge.fail{background:#cf222e}.badge.warn{background:#bf8700}.badge.info{background:#0969da}.badge.skip{background:#6e7781}.badge.unknown{background:#8250df}\
section.check{border:1px solid #d0d7de;border-left:6px solid #6e7781;border-radius:6px;padding:10px 14px;margin:12px 0}\
section.check.pass{border-left-color:#1a7f37}section.check.fail{border-left-color:#cf222e}section.check.warn{border-left-color:#bf8700}section.check.info{border-left-color:#0969da}section.check.unknown{border-left-color:#8250df}\
.summary{margin:4px 0}.source{margin:0;color:#57606a;font-size:12px}.notes{margin:4px 0;color:#57606a}pre{white-space:pre-wrap;background:#f6f8fa;padding:8px;border-radius:4px;font-size:12px}\
svg.timeline{display:block;margin:8px 0;background:#fbfcfd;border:1px solid #eaeef2}svg .label,svg .tick{font:11px ui-monospace,Menlo,monospace;fill:#57606a}\
svg .axis{stroke:#8c959f;stroke-width:1}.success{fill:#2da44e}.replay{fill:#54aeff}.in-flight{fill:#d4a72c}.mismatch{fill:#fb8f44}.conflict{fill:#8a5a00}\
.client-error{fill:#a475f9}.server-error{fill:#cf222e}.no-response{fill:#8c959f}.faulted{stroke:#1b1f24;stroke-width:1.5;stroke-dasharray:3 2}.fault-mark{fill:#1b1f24}\
.legend span{white-space:nowrap;margin-right:10px}.legend svg{vertical-align:middle}.aggregate{color:#57606a;margin:6px 0 0}\
body.only-open section.check.pass,body.only-open section.check.skip,body.only-open tr.row.pass,body.only-open tr.row.skip{display:none}";

/// Records script errors (a test reads them) and toggles the filter; the page works without it.
const SCRIPT: &str = "\
window.idemspecErrors=[];window.addEventListener('error',function(e){window.idemspecErrors.push(String(e.message));document.documentElement.dataset.errors=window.idemspecErrors.length;});\
document.getElementById('only-open').addEventListener('change',function(e){document.body.classList.toggle('only-open',e.target.checked);});\
document.documentElement.dataset.ready=String(document.querySelectorAll('section.check').length);";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_in_content_and_attributes() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
