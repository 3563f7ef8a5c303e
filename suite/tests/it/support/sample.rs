//! A fixed run report covering every verdict, for the reporters' snapshot tests.
//!
//! It reads like a real run against a flawed leasebroker: a lost response re-executed instead of
//! replayed (FAIL), an unscoped endpoint (WARN), a recorded status choice (INFO), a missing hook
//! (SKIP) and an undecidable storm (UNKNOWN).

use idemspec::model::{
    CheckOutcome, Evidence, ProxyAction, RequestRecord, ResponseRecord, RunReport, RunStats,
    Verdict,
};
use idemspec_scenarios::Level;

fn request(step: &str, method: &str, path: &str, key: Option<&str>, body: &str) -> RequestRecord {
    RequestRecord {
        step: step.to_owned(),
        method: method.to_owned(),
        path: path.to_owned(),
        principal: "alice".to_owned(),
        idempotency_key: key.map(str::to_owned),
        body_excerpt: body.to_owned(),
        via_proxy: true,
    }
}

fn created(id: &str, elapsed_ms: u64) -> ResponseRecord {
    ResponseRecord {
        status: 201,
        headers: vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("location".to_owned(), format!("/v1/workers/{id}")),
        ],
        problem_type: None,
        body_excerpt: format!(r#"{{"id":"{id}","state":"booting","image":"debian-12"}}"#),
        elapsed_ms,
    }
}

fn outcome(id: &str, title: &str, level: Level, verdict: Verdict, summary: &str) -> CheckOutcome {
    CheckOutcome {
        id: id.to_owned(),
        title: title.to_owned(),
        level,
        reference: "article: retries".to_owned(),
        verdict,
        summary: summary.to_owned(),
        notes: Vec::new(),
        evidence: Vec::new(),
        duration_ms: 412,
        timeline: Default::default(),
        claims: Vec::new(),
        audit: Vec::new(),
        documented: None,
    }
}

/// The sample report: six checks, one per verdict.
pub fn report() -> RunReport {
    let body = r#"{"image":"debian-12","cpu":2,"memory_gb":4,"labels":{"idemspec":"m-7f3a"}}"#;
    let mut never = outcome(
        "never-processed",
        "Refused before the server: the retry creates exactly one",
        Level::Must,
        Verdict::Pass,
        "the refused request never reached the server and the retry created exactly one worker",
    );
    never.duration_ms = 138;

    let mut lost = outcome(
        "lost-response",
        "Response lost after the work: the retry replays it",
        Level::Must,
        Verdict::Fail,
        "a retry after a lost response must replay the stored response, but it created a second worker (2 workers with marker m-7f3a, expected 1)",
    );
    lost.reference = "article: the lost response; ietf-draft-07 §2.6".to_owned();
    lost.duration_ms = 1_240;
    lost.evidence = vec![
        Evidence {
            request: request("1", "POST", "/v1/workers", Some("K1-7f3a"), body),
            response: None,
            error: Some("connection closed before response".to_owned()),
            proxy: Some(ProxyAction {
                rule: Some("drop-first-create".to_owned()),
                fault: Some("drop_response".to_owned()),
                upstream_status: Some(201),
                upstream_head_refused: None,
                client_complete: false,
            }),
        },
        Evidence {
            request: request("2", "POST", "/v1/workers", Some("K1-7f3a"), body),
            response: Some(created("wkr-0002", 37)),
            error: None,
            proxy: Some(ProxyAction {
                rule: None,
                fault: None,
                upstream_status: Some(201),
                upstream_head_refused: None,
                client_complete: true,
            }),
        },
    ];

    let mut scope = outcome(
        "endpoint-scope",
        "One key on two endpoints: two distinct operations",
        Level::Should,
        Verdict::Warn,
        "a key reused on another endpoint should start a distinct operation, but the create's 201 was replayed for the reboot",
    );
    scope.reference = "ietf-draft-07 §2.2".to_owned();
    let mut reboot = request(
        "2",
        "POST",
        "/v1/workers/wkr-0001/reboot",
        Some("K1-7f3a"),
        "",
    );
    reboot.via_proxy = false;
    let mut replayed = created("wkr-0001", 9);
    replayed
        .headers
        .push(("idempotent-replayed".to_owned(), "true".to_owned()));
    scope.evidence = vec![Evidence {
        request: reboot,
        response: Some(replayed),
        error: None,
        proxy: None,
    }];

    let mut mismatch = outcome(
        "mismatch-status",
        "Which status a fingerprint mismatch gets",
        Level::Should,
        Verdict::Info,
        "recorded the status of a fingerprint mismatch",
    );
    mismatch.notes = vec!["mismatch answered 417 | with a problem body".to_owned()];
    mismatch.duration_ms = 55;

    let mut stuck = outcome(
        "stuck-in-flight",
        "A crash mid-flight does not lock the key out until expiry",
        Level::Must,
        Verdict::Skip,
        "the target profile has no `crash` and `restart` hooks",
    );
    stuck.duration_ms = 0;

    let mut storm = outcome(
        "retry-storm",
        "Many clients retry with backoff: workers created = keys",
        Level::Must,
        Verdict::Unknown,
        "every response to the storm's requests was lost, so whether retries replay could not be observed",
    );
    storm.duration_ms = 61_500;
    storm.evidence = vec![Evidence {
        request: request("storm", "POST", "/v1/workers", Some("storm-01"), body),
        response: None,
        error: Some("timed out after 2000ms".to_owned()),
        proxy: Some(ProxyAction {
            rule: Some("storm-chaos".to_owned()),
            fault: Some("hang".to_owned()),
            upstream_status: None,
            upstream_head_refused: None,
            client_complete: false,
        }),
    }];
    storm.notes = vec!["the proxy answered none of 40 requests".to_owned()];

    let checks = vec![never, lost, scope, mismatch, stuck, storm];
    let mut stats = RunStats::default();
    for check in &checks {
        stats.record(check);
    }
    RunReport {
        version: idemspec::model::RunReport::VERSION,
        target: "leasebroker".to_owned(),
        contract: "article".to_owned(),
        started_at: "2026-11-29T19:30:00Z".to_owned(),
        duration_ms: 63_345,
        checks,
        stats,
        target_log: None,
        tls: Vec::new(),
        served_tls: None,
        warnings: Vec::new(),
    }
}
