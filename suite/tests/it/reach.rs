//! Reaching real APIs: keys of the form the API accepts, failures by what is sent, a process
//! nemesis for any target, the conventions libraries document, lockouts measured without a
//! declared TTL.

use idemspec::model::{RunReport, Verdict};
use idemspec::runner::{run, RunOptions, Target};
use idemspec_scenarios::profile::TargetProfile;

use crate::support::alt_api;
use crate::support::reference::table;

/// Runs the catalogue (or `only`) against `profile`.
async fn run_profile(profile: TargetProfile, only: &[&str]) -> RunReport {
    let mut opts = RunOptions::new(Target::Profile(Box::new(profile)));
    opts.only = only.iter().map(|s| (*s).to_owned()).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let report = run(opts, tx).await.expect("the run starts");
    drain.await.expect("drain ends");
    report
}

/// The alt-api profile with `edit` applied to its text, aimed at `api`.
fn profile(api: &alt_api::AltApi, edit: impl Fn(&str) -> String) -> TargetProfile {
    let env = api.env();
    TargetProfile::load("alt-api.yaml", &edit(alt_api::PROFILE), &|var| {
        env.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone())
    })
    .expect("profile loads")
}

/// An API that accepts only UUID keys passes the whole catalogue once its profile says so: every
/// check sends UUID keys, unique per check and run, and key-validation still sends the invalid
/// ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_uuid_only_api_passes_the_catalogue_with_uuid_keys() {
    let api = alt_api::start_with(alt_api::Options { uuid_keys: true }).await;
    let uuid = |text: &str| {
        text.replace(
            "  in_flight_ttl: 2s",
            "  in_flight_ttl: 2s\n  key_form: uuid",
        )
    };
    let report = run_profile(profile(&api, uuid), &[]).await;
    let not_passed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| c.id.as_str())
        .collect();
    assert!(not_passed.is_empty(), "{}", table(&report));
    // Without the declaration the same API is judged for the wrong reason: its keys are refused.
    let report = run_profile(profile(&api, str::to_owned), &["lost-response"]).await;
    assert_ne!(
        report.checks[0].verdict,
        Verdict::Pass,
        "{}",
        table(&report)
    );
}
