//! The evidence of one check as plain text lines: the rule broken, the notes, and every exchange
//! (request, what the proxy did, response). Shared by the terminal, JUnit and Markdown reporters so
//! all three tell the same story in the same words.

use crate::model::{CheckOutcome, Evidence, ProxyAction, RequestRecord, ResponseRecord, Verdict};

/// Indentation of one nesting level in the evidence text.
const INDENT: &str = "  ";

/// The evidence of `outcome` as plain lines, without a heading (the caller names the check).
///
/// The first line states the outcome with the rule's source, labelled by verdict (`rule broken:
/// … [source: article: lost responses]`); notes follow, then one block per exchange in the order
/// the runner recorded them.
pub fn lines(outcome: &CheckOutcome) -> Vec<String> {
    let mut out = vec![format!(
        "{}: {}{}",
        summary_label(outcome.verdict),
        outcome.summary,
        source_suffix(outcome)
    )];
    out.extend(outcome.documented_line());
    out.extend(outcome.notes.iter().map(|note| format!("note: {note}")));
    for (index, evidence) in outcome.evidence.iter().enumerate() {
        exchange(&mut out, index + 1, evidence);
    }
    out
}

/// ` [source: REFERENCE]` to follow the summary, or nothing when the summary already cites it
/// (a source is never printed twice, nor for a SKIP).
pub fn source_suffix(outcome: &CheckOutcome) -> String {
    // A SKIP broke no rule: its sentence is about the profile, not the source.
    if outcome.verdict == Verdict::Skip || outcome.summary.contains(&outcome.reference) {
        String::new()
    } else {
        format!(" [source: {}]", outcome.reference)
    }
}

/// The evidence of `outcome` as one block of text, each line prefixed by `indent`.
pub fn text(outcome: &CheckOutcome, indent: &str) -> String {
    lines(outcome)
        .iter()
        .map(|line| format!("{indent}{line}\n"))
        .collect()
}

/// How the summary sentence is introduced for each verdict.
fn summary_label(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "observed",
        Verdict::Fail | Verdict::Warn => "rule broken",
        Verdict::Info => "recorded",
        Verdict::Skip => "skipped",
        Verdict::Unknown => "undecided",
    }
}

fn exchange(out: &mut Vec<String>, number: usize, evidence: &Evidence) {
    let request = &evidence.request;
    out.push(format!(
        "#{number} step {}: {} {} {}",
        request.step,
        request.method,
        request.path,
        if request.via_proxy {
            "via proxy"
        } else {
            "direct"
        }
    ));
    out.push(format!("{INDENT}{}", request_identity(request)));
    out.push(format!(
        "{INDENT}sent body: {}",
        excerpt(&request.body_excerpt)
    ));
    if let Some(proxy) = &evidence.proxy {
        out.push(format!("{INDENT}proxy: {}", proxy_action(proxy)));
    }
    match &evidence.response {
        Some(response) => response_lines(out, response),
        None => out.push(format!("{INDENT}response: none")),
    }
    if let Some(error) = &evidence.error {
        out.push(format!("{INDENT}error: {error}"));
    }
}

fn request_identity(request: &RequestRecord) -> String {
    let key = match &request.idempotency_key {
        Some(key) => format!("key {}", shown_key(key)),
        None => "no key".to_owned(),
    };
    format!("principal {}, {key}", request.principal)
}

fn response_lines(out: &mut Vec<String>, response: &ResponseRecord) {
    let reason = http::StatusCode::from_u16(response.status)
        .ok()
        .and_then(|status| status.canonical_reason())
        .map(|reason| format!(" {reason}"))
        .unwrap_or_default();
    out.push(format!(
        "{INDENT}response: {}{reason} after {}",
        response.status,
        super::human_duration(response.elapsed_ms)
    ));
    for (name, value) in &response.headers {
        out.push(format!("{INDENT}{INDENT}{name}: {value}"));
    }
    if let Some(problem_type) = &response.problem_type {
        out.push(format!("{INDENT}{INDENT}problem type: {problem_type}"));
    }
    out.push(format!(
        "{INDENT}{INDENT}body: {}",
        excerpt(&response.body_excerpt)
    ));
}

/// What the proxy did, in one clause: which rule, which fault, whether the upstream did the work
/// and whether the client heard back.
pub fn proxy_action(proxy: &ProxyAction) -> String {
    let applied = match (&proxy.rule, &proxy.fault) {
        (Some(rule), Some(fault)) => format!("rule `{rule}` applied {fault}"),
        (Some(rule), None) => format!("rule `{rule}` matched"),
        (None, Some(fault)) => format!("applied {fault}"),
        (None, None) => "passed through".to_owned(),
    };
    let upstream = match (proxy.upstream_status, &proxy.upstream_head_refused) {
        (Some(status), _) => format!("upstream answered {status}"),
        (None, Some(limit)) => {
            format!("upstream answered with a head the proxy refuses ({limit})")
        }
        (None, None) => "upstream never answered".to_owned(),
    };
    let client = if proxy.client_complete {
        "client got the response"
    } else {
        "client got no complete response"
    };
    format!("{applied}; {upstream}; {client}")
}

fn quoted(value: &str) -> String {
    format!("{value:?}")
}

/// Longest key shown whole in evidence text, in characters; the JSON report keeps it whole.
const KEY_SHOWN_CHARS: usize = 80;

/// A key as evidence shows it: quoted, and cut after [`KEY_SHOWN_CHARS`] characters with its
/// length (an over-long key is a test input of up to 65,536 characters, not something to read).
fn shown_key(key: &str) -> String {
    let chars = key.chars().count();
    if chars <= KEY_SHOWN_CHARS {
        return quoted(key);
    }
    let head: String = key.chars().take(KEY_SHOWN_CHARS).collect();
    format!("{}… ({chars} characters)", quoted(&head))
}

fn excerpt(body: &str) -> String {
    if body.is_empty() {
        "(empty)".to_owned()
    } else {
        // Keep every exchange on its own lines: a multi-line body would blur the layout.
        body.replace('\n', "\\n").replace('\r', "\\r")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_over_long_key_is_cut_with_its_length() {
        assert_eq!(shown_key("K1"), "\"K1\"");
        let long = "k".repeat(300);
        let shown = shown_key(&long);
        assert_eq!(shown, format!("\"{}\"… (300 characters)", "k".repeat(80)));
    }
}
