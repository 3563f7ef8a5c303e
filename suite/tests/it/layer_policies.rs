//! Policies real idempotency layers document, each judged over a real server: an action whose
//! request names its resource in a body the layer hashes.

use idemspec::model::Verdict;

use crate::reach::{assert_passes, profile, run_profile};
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
