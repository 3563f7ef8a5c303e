//! One check's outcome as every report shows it: its [`Verdict`], its [`Evidence`] (the
//! requests and responses, with what the proxy did to each) and the [`CheckOutcome`] that carries
//! them.

use idemspec_scenarios::Level;
use serde::{Deserialize, Serialize};

/// The graded verdict of one check (`docs/reading-reports.md`, "Verdicts").
///
/// A check never reports [`Verdict::Pass`] without having observed what it claims: when it could
/// not decide (target unreachable, every response dropped, a hook failed) it is [`Verdict::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// The rule held and was observed to hold.
    Pass,
    /// A MUST rule was broken.
    Fail,
    /// A SHOULD rule was broken.
    Warn,
    /// Behaviour recorded, not judged (e.g. "mismatch answered 417").
    Info,
    /// The target profile lacks a capability the check needs; the outcome's summary says which.
    Skip,
    /// The run could not decide.
    Unknown,
}

impl Verdict {
    /// Upper-case label as shown in every report (`PASS`, `FAIL`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Warn => "WARN",
            Verdict::Info => "INFO",
            Verdict::Skip => "SKIP",
            Verdict::Unknown => "UNKNOWN",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One request as the runner sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The step that sent it (its index, 1-based, or its name).
    pub step: String,
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Path and query as sent, e.g. `/v1/workers?x=1`.
    pub path: String,
    /// The principal's name from the target profile.
    pub principal: String,
    /// The `Idempotency-Key` (or the profile's header) value as sent; `None` when no key was sent.
    pub idempotency_key: Option<String>,
    /// The first bytes of the body (at most 200 characters, lossy UTF-8).
    pub body_excerpt: String,
    /// Whether it went through the fault-injecting proxy (`true`) or direct to the target.
    pub via_proxy: bool,
}

/// What came back for a request, if anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRecord {
    /// HTTP status code.
    pub status: u16,
    /// The headers that matter for idempotency (Location, Retry-After, Idempotent-Replayed,
    /// Content-Type, and the contract's `replayed_header`), in the order received.
    pub headers: Vec<(String, String)>,
    /// The RFC 9457 problem `type` when the body is a problem document, so a reader can tell
    /// "in flight" from "mismatch".
    pub problem_type: Option<String>,
    /// The first bytes of the body (at most 200 characters, lossy UTF-8).
    pub body_excerpt: String,
    /// Time from sending the request to the end of the response body, in ms.
    pub elapsed_ms: u64,
}

/// What the proxy did to a request (from its event log), in words a reader understands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyAction {
    /// The rule that matched, by name; `None` when the request passed through.
    pub rule: Option<String>,
    /// The fault verb applied (`drop_response`, `refuse`, ...); `None` when passed through.
    pub fault: Option<String>,
    /// The upstream's status, when the upstream answered: proof the server did the work.
    pub upstream_status: Option<u16>,
    /// The limit the upstream's response head broke (`more than 100 headers`), when it answered
    /// with a head the proxy refuses: it answered, and the proxy passed nothing of it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_head_refused: Option<String>,
    /// Whether the client received a complete response.
    pub client_complete: bool,
}

/// One observed exchange that supports a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The request as sent.
    pub request: RequestRecord,
    /// The response, when one arrived.
    pub response: Option<ResponseRecord>,
    /// A transport-level outcome instead of (or besides) a response: `connection closed before
    /// response`, `timed out after 2000 ms`, ...
    pub error: Option<String>,
    /// What the proxy did, when the request went through it.
    pub proxy: Option<ProxyAction>,
}

impl Evidence {
    /// Whether this request's work may still be running: it got no response, and the proxy did
    /// not see the upstream answer it (it went direct, or the upstream never answered it: a
    /// response the proxy saw and dropped, or a head it refused, is work that ended).
    pub fn may_still_be_running(&self) -> bool {
        self.response.is_none()
            && self
                .proxy
                .as_ref()
                .is_none_or(|p| p.upstream_status.is_none() && p.upstream_head_refused.is_none())
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The check's id, e.g. `lost-response`.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The rule's source, e.g. `article: concurrent retries`, `ietf-draft-07 §2.7`.
    pub reference: String,
    /// The graded verdict.
    pub verdict: Verdict,
    /// One sentence: for a failure, the rule broken and how (with its source); for SKIP, the missing
    /// capability; for UNKNOWN, why the run could not decide; for PASS, what was observed.
    pub summary: String,
    /// Further observations, one sentence each (e.g. "mismatch answered 417").
    pub notes: Vec<String>,
    /// The exchanges that support the verdict (all of them for FAIL/WARN/UNKNOWN, may be empty on PASS).
    pub evidence: Vec<Evidence>,
    /// Wall time of the check, in ms.
    pub duration_ms: u64,
    /// Every request of the check on a time axis (the HTML report draws it).
    #[serde(default)]
    pub timeline: super::Timeline,
    /// The facts the summary and notes state about the exchanges, each with what proves it
    /// ([`super::Claim`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<super::Claim>,
    /// Claims the check's exchanges did not bear out ([`super::claim::audit`]), one line each: a
    /// defect of idemspec, never a finding about the target. Empty in a sound report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<String>,
    /// Set on a FAIL or WARN the target's own documentation states (the profile's
    /// `documented`): still a deviation from the article at the check's level, shown "as
    /// documented" in every report. A documented FAIL does not fail the run unless
    /// `--fail-documented` ([`super::ExitPolicy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documented: Option<AsDocumented>,
}

/// What the target's documentation says about a check's FAIL or WARN (the profile's
/// `documented[]`), as the report shows it beside the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsDocumented {
    /// What the documentation says: the profile's `says`.
    pub says: String,
    /// Where it says so: the profile's `source`, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The documented statuses (`answer`) the check's exchanges got, in order; empty when the
    /// profile names none, and then any FAIL or WARN of the check is taken as the documented one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<u16>,
}

impl CheckOutcome {
    /// The verdict as every report labels a check: `FAIL`, or `FAIL (as documented)` for one the
    /// target's documentation states.
    pub fn label(&self) -> String {
        match self.documented {
            Some(_) => format!("{} (as documented)", self.verdict.label()),
            None => self.verdict.label().to_owned(),
        }
    }

    /// `as documented: "SAYS" (SOURCE); this check's exchanges got 400, …`, the line every
    /// report shows under a documented FAIL or WARN's sentence; `None` for any other outcome.
    pub fn documented_line(&self) -> Option<String> {
        let d = self.documented.as_ref()?;
        let source = d
            .source
            .as_ref()
            .map_or(String::new(), |s| format!(" ({s})"));
        let seen = if d.seen.is_empty() {
            String::new()
        } else {
            let seen: Vec<String> = d.seen.iter().map(u16::to_string).collect();
            format!(
                "; this check's exchanges got {}, the documented answer",
                seen.join(" and ")
            )
        };
        Some(format!(
            "as documented: \"{}\"{source}{seen} (a deviation from the article all the same, at \
             its level)",
            d.says
        ))
    }

    /// Whether this outcome fails a run under `policy`: a FAIL, unless it is documented and
    /// `--fail-documented` was not given.
    pub fn fails_run(&self, policy: super::ExitPolicy) -> bool {
        self.verdict == Verdict::Fail && (self.documented.is_none() || policy.fail_documented)
    }
}
