//! retry-storm with clients sharing keys (`parameters.keys`): 60 clients on 6 keys, 10 per key
//! released at one barrier, through dropped responses and refused connections. The clean reference
//! ends with one resource per key; a reference that looks a key up before inserting it
//! (`check-then-act`) lets clients of one key race past each other and is caught.

use idemspec::model::Verdict;
use idemspec::runner::{run, RunOptions, Target};
use idemspec_scenarios::scenario::Scenario;

use crate::support::postgres::PgDb;
use crate::support::reference::{outcome, reference, table};

const SHARED: &str = r#"version: 1
id: storm-shared-keys
title: 60 clients on 6 keys through dropped responses and refused connections
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 60, keys: 6, attempts: 40, seed: 3, within: 60s}
faults:
  - {name: drop, match: {probability: 0.3, seed: 11}, fault: {drop_response: {}}}
  - {name: refuse, match: {probability: 0.1, seed: 12}, fault: refuse}
"#;

async fn storm(flaws: &[&str], database_url: Option<String>) -> idemspec::model::RunReport {
    let mut opts = RunOptions::new(Target::Reference(reference(flaws, database_url)));
    opts.builtin = false;
    opts.scenarios = vec![Scenario::load("shared.yaml", SHARED).expect("the storm loads")];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let report = run(opts, tx).await.expect("the run starts");
    drain.await.expect("event drain ends");
    report
}

fn assert_one_resource_per_key(report: &idemspec::model::RunReport) {
    let o = outcome(report, "storm-shared-keys");
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(report));
    assert!(
        o.summary.contains("6 resources for 6 accepted keys"),
        "{}",
        o.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_clients_on_six_keys_make_six_resources_on_sqlite() {
    assert_one_resource_per_key(&storm(&[], None).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_clients_on_six_keys_make_six_resources_on_postgres() {
    let Some(db) = PgDb::create().await else {
        return;
    };
    let report = storm(&[], Some(db.url.clone())).await;
    db.drop().await;
    assert_one_resource_per_key(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_sharing_a_key_catch_check_then_act() {
    let report = storm(&["check-then-act"], None).await;
    let o = outcome(&report, "storm-shared-keys");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary.contains("different ids") || o.summary.contains("expected exactly 6"),
        "{}",
        o.summary
    );
}
