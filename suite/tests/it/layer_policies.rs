//! Policies real idempotency layers document, each judged over a real server: an action whose
//! request names its resource in a body the layer hashes, a session the layer opens on its first
//! answer.

use idemspec::model::Verdict;
use idemspec::runner::{run, RunOptions, Target};

use crate::reach::{assert_passes, load, profile, run_profile};
use crate::support::alt_api;
use crate::support::reference::{outcome, table};

/// The alt profile's action line, which the edits below rewrite.
const ACTION: &str = "action: {path: \"/api/machines/{id}/restart\", effect: $.data.restarts}";

/// The checks that send actions.
const ACTION_CHECKS: &[&str] = &["reboot-once", "endpoint-scope"];

/// An action the API reads its machine from (`{"machine": UUID}`), behind a layer that
/// fingerprints the body alone: with the `action.body` the profile gives, every action request
/// carries it, rendered with the machine's id, and reboot-once and endpoint-scope PASS; without
/// one, the action is refused `400` and reboot-once is UNKNOWN naming it (its lost action did no
/// work).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_action_is_sent_with_the_body_the_profile_gives_it() {
    let api = alt_api::start_with(alt_api::Options {
        actions_by_body: true,
        ..alt_api::Options::default()
    })
    .await;
    let with_body = |t: &str| {
        assert!(t.contains(ACTION), "the fixture's action");
        t.replace(
            ACTION,
            "action: {path: \"/api/machines/{id}/restart\", body: '{\"machine\":\"{id}\"}', \
             effect: $.data.restarts}",
        )
    };
    let report = run_profile(profile(&api, with_body), ACTION_CHECKS).await;
    assert_passes(&report, ACTION_CHECKS.len());
    let bodies = api.action_bodies();
    // reboot-once's action and retry, endpoint-scope's action and control.
    assert!(bodies.len() >= 4, "{bodies:?}");
    for body in &bodies {
        let named: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
        assert!(
            named["machine"].as_str().is_some_and(|m| m.len() == 36),
            "{body}"
        );
    }

    let report = run_profile(profile(&api, |t| t.to_owned()), &["reboot-once"]).await;
    let reboot = outcome(&report, "reboot-once");
    assert_eq!(reboot.verdict, Verdict::Unknown, "{}", table(&report));
    assert!(reboot.summary.contains("400"), "{}", reboot.summary);
}

/// The alt profile with `cookies` as its `cookies:` line and, where `first_answer`, each
/// principal's session opened by its first answer.
fn sessions(cookies: Option<&'static str>, first_answer: bool) -> impl Fn(&str) -> String {
    move |text: &str| {
        let mut out = text.to_owned();
        if first_answer {
            for key in ["alpha-key", "beta-key"] {
                let headers = format!("    headers: {{X-Api-Key: {key}}}\n");
                assert!(out.contains(&headers), "the fixture's principal");
                out = out.replace(&headers, &format!("{headers}    session: first_answer\n"));
            }
        }
        match cookies {
            Some(scope) => format!("{out}cookies: {scope}\n"),
            None => out,
        }
    }
}

/// The checks whose first request's answer a session opened by it would be lost with, or
/// whose requests go out at once.
const SESSION_CHECKS: &[&str] = &["lost-response", "concurrent-same-key", "cross-tenant"];

/// A layer that opens the caller's session on its first answer and keeps its records per
/// session: with a jar per check and nothing to open it, lost-response's first request opens the
/// session and its answer is lost with its cookie, so the retry runs in another session (FAIL);
/// with `session: first_answer` each jar is opened by the principal's list before the check's
/// first request, and the checks PASS, one session per principal and check; by default
/// (`per_principal`) one session per principal serves the whole run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_the_first_answer_opens_is_opened_before_any_check() {
    let api = alt_api::start_with(alt_api::Options {
        first_answer_sessions: true,
        ..alt_api::Options::default()
    })
    .await;
    let report = run_profile(
        profile(&api, sessions(Some("per_check"), false)),
        &["lost-response"],
    )
    .await;
    assert_eq!(
        outcome(&report, "lost-response").verdict,
        Verdict::Fail,
        "{}",
        table(&report)
    );

    let before = api.sessions_opened();
    let report = run_profile(
        profile(&api, sessions(Some("per_check"), true)),
        SESSION_CHECKS,
    )
    .await;
    assert_passes(&report, SESSION_CHECKS.len());
    // The preflight's two jars, and two per check (cross-tenant's and the others' second
    // principal open theirs only where they send as it).
    let opened = api.sessions_opened() - before;
    assert!(
        (2 + SESSION_CHECKS.len()..=2 + 2 * SESSION_CHECKS.len()).contains(&opened),
        "{opened} sessions"
    );

    let before = api.sessions_opened();
    let report = run_profile(profile(&api, sessions(None, true)), &[]).await;
    assert_passes(&report, 15);
    assert_eq!(
        api.sessions_opened() - before,
        2,
        "one session per principal"
    );
}

/// A principal whose `session: first_answer` is answered without a `Set-Cookie` stops the run
/// before any check, naming the principal, the request and the field; `session` beside a
/// `login`, or under `cookies: off`, is refused at load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_first_answer_that_opens_no_session_stops_the_run() {
    let api = alt_api::start().await;
    let opts = RunOptions::new(Target::Profile(Box::new(profile(
        &api,
        sessions(None, true),
    ))));
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = run(opts, tx)
        .await
        .expect_err("a session that cannot open stops the run");
    let said = err.to_string();
    assert!(
        said.contains("principal `alpha`'s first answer (GET /api/machines?tag=preflight)")
            && said.contains("without a `Set-Cookie`")
            && said.contains("check `principals[].session`"),
        "{said}"
    );

    let off = sessions(Some("off"), true)(alt_api::PROFILE);
    let err = load(&api, &off).expect_err("a session with cookies off is refused");
    assert!(
        err.to_string()
            .contains("has `session: first_answer` but the profile says `cookies: off`"),
        "{err}"
    );
    let both = sessions(None, true)(alt_api::PROFILE).replace(
        "    session: first_answer\n",
        "    session: first_answer\n    login: {path: /login}\n",
    );
    let err = load(&api, &both).expect_err("a session beside a login is refused");
    assert!(
        err.to_string()
            .contains("has both a `login` and `session: first_answer`"),
        "{err}"
    );
}
