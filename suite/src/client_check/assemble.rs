//! From a graded check and its observed situations to the [`CheckOutcome`] every reporter
//! renders: each attempt as [`Evidence`] (what the client sent, what the proxy did, what it was
//! answered), each situation as a timeline lane, each run of the command as a note (how it
//! ended, its output).

use idemspec_scenarios::rules::Fault;

use super::attempt::Attempt;
use super::situation::CommandRun;
use super::Ctx;
use crate::engine::{About, Graded};
use crate::model::{
    AttemptEnd, CheckOutcome, Evidence, Lane, ProxyAction, RequestRecord, ResponseRecord, Timeline,
    Verdict,
};
use crate::report::human_duration;

/// The most exchanges one check's evidence shows.
const MAX_EVIDENCE: usize = 24;

/// The outcome of a check graded `graded` over `runs`, taking `duration_ms`.
pub fn outcome(
    ctx: &Ctx,
    about: About,
    graded: Graded,
    runs: &[CommandRun],
    duration_ms: u64,
) -> CheckOutcome {
    let mut graded = graded;
    let mut notes = std::mem::take(&mut graded.notes);
    let mut evidence = Vec::new();
    if graded.verdict != Verdict::Pass {
        let shown = |o: &&CommandRun| {
            graded.support.is_empty() || graded.support.iter().any(|s| s == o.situation)
        };
        for run in runs.iter().filter(shown) {
            notes.push(run_note(ctx, run));
            for (i, attempt) in run.attempts.iter().enumerate() {
                if evidence.len() < MAX_EVIDENCE {
                    evidence.push(exchange(ctx, run, i + 1, attempt));
                }
            }
        }
    }
    about.outcome(graded, notes, evidence, duration_ms, timeline(runs))
}

/// How one run of the command went, in a sentence: its attempts and keys, its exit, its output.
pub fn run_note(ctx: &Ctx, run: &CommandRun) -> String {
    let keys: Vec<String> = run
        .attempts
        .iter()
        .map(|a| {
            a.key
                .as_deref()
                .map_or("no key".into(), |k| format!("{k:?}"))
        })
        .collect();
    let mut note = format!(
        "run `{}`: {} attempt{} of {} ({}), then {} after {}",
        run.situation,
        run.attempts.len(),
        if run.attempts.len() == 1 { "" } else { "s" },
        ctx.operation_label(),
        if keys.is_empty() {
            "none".to_owned()
        } else {
            keys.join(", ")
        },
        run.output.exit,
        human_duration(run.output.elapsed.as_millis() as u64),
    );
    if !run.others.is_empty() {
        let shown: Vec<&str> = run.others.iter().take(5).map(String::as_str).collect();
        note.push_str(&format!("; other requests: {}", shown.join(", ")));
    }
    if let Some(output) = run.output.excerpt() {
        note.push_str(&format!("; output: {output}"));
    }
    note
}

fn exchange(ctx: &Ctx, run: &CommandRun, number: usize, attempt: &Attempt) -> Evidence {
    let planned = attempt.rule.as_deref().and_then(|r| run.planned(r));
    let response = attempt.client_status.map(|status| {
        let (headers, body) = match planned.map(|p| &p.fault) {
            Some(Fault::Respond {
                headers,
                body,
                content_type,
                ..
            }) => {
                let mut h: Vec<(String, String)> = headers
                    .iter()
                    .map(|(n, v)| (n.to_owned(), v.to_owned()))
                    .collect();
                h.extend(
                    content_type
                        .as_ref()
                        .map(|t| ("Content-Type".to_owned(), t.clone())),
                );
                (h, body.clone())
            }
            _ => ctx.success_as_sent(),
        };
        // A body's own `type` member is an RFC 9457 problem type only in a problem document.
        let problem = headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("content-type")
                && v.to_ascii_lowercase()
                    .starts_with("application/problem+json")
        });
        ResponseRecord {
            status,
            problem_type: problem
                .then(|| serde_json::from_str::<serde_json::Value>(&body).ok())
                .flatten()
                .and_then(|v| v.get("type")?.as_str().map(str::to_owned)),
            headers,
            body_excerpt: body.chars().take(200).collect(),
            elapsed_ms: attempt.duration_ms,
        }
    });
    Evidence {
        request: RequestRecord {
            step: format!("{} #{number}", run.situation),
            method: attempt.method.clone(),
            path: attempt.path.clone(),
            principal: "client".into(),
            idempotency_key: attempt.key.clone(),
            // The proxy records no request bodies; the key, method and path are what is judged.
            body_excerpt: "(not recorded)".into(),
            via_proxy: true,
        },
        response,
        error: transport_error(attempt),
        proxy: Some(ProxyAction {
            rule: attempt.rule.clone(),
            fault: attempt.fault.clone(),
            upstream_status: attempt.upstream_status,
            upstream_head_refused: attempt.upstream_head_refused.clone(),
            client_complete: attempt.client_complete,
        }),
    }
}

/// Why the client got no complete response, in words.
fn transport_error(attempt: &Attempt) -> Option<String> {
    if attempt.client_complete {
        return None;
    }
    Some(match attempt.fault.as_deref() {
        Some("drop_response" | "refuse") => "connection closed before response".to_owned(),
        Some("reset_mid_response") => "connection reset mid-response".to_owned(),
        Some("hang") => format!(
            "no response: the client gave up after {}",
            human_duration(attempt.duration_ms)
        ),
        _ if attempt.client_disconnected => "the client went away before the response".into(),
        _ => attempt
            .error
            .clone()
            .unwrap_or_else(|| "no complete response".into()),
    })
}

/// One lane per situation, each attempt from the check's first request.
fn timeline(runs: &[CommandRun]) -> Timeline {
    let first = runs
        .iter()
        .flat_map(|r| r.attempts.first())
        .map(|a| a.start)
        .min();
    let Some(first) = first else {
        return Timeline::default();
    };
    let lanes = runs
        .iter()
        .filter(|r| r.attempted())
        .map(|run| Lane {
            name: run.situation.to_owned(),
            attempts: run
                .attempts
                .iter()
                .map(|a| crate::model::Span {
                    start_ms: u64::try_from((a.start - first).whole_milliseconds()).unwrap_or(0),
                    duration_ms: a.duration_ms,
                    end: end_of(a),
                    status: a.client_status,
                    fault: a.fault.clone(),
                    upstream_status: a.upstream_status,
                })
                .collect(),
        })
        .collect();
    Timeline::of(lanes)
}

fn end_of(a: &Attempt) -> AttemptEnd {
    let rule = a.rule.as_deref().unwrap_or_default();
    match a.client_status {
        _ if !a.client_complete => AttemptEnd::NoResponse,
        Some(200..=299) => AttemptEnd::Success,
        Some(_) if rule.starts_with("in-flight") => AttemptEnd::InFlight,
        Some(_) if rule.starts_with("mismatch") => AttemptEnd::Mismatch,
        Some(400..=499) => AttemptEnd::ClientError,
        _ => AttemptEnd::ServerError,
    }
}
