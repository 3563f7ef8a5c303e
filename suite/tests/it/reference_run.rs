//! The whole catalogue against the clean reference server: every check PASS, on SQLite and on
//! PostgreSQL, with its creates answering `201` and (`async_creates_…`) `202` with an operation.

use crate::support::reference::{all_pass, run_reference_on, table, CreateMode};

/// The whole catalogue against the clean reference in `creates` mode, on PostgreSQL or SQLite:
/// every check PASS.
async fn clean_reference_passes(creates: CreateMode, postgres: bool) {
    let Some(report) = run_reference_on(creates, &[], postgres).await else {
        return;
    };
    println!("{}ms\n{}", report.duration_ms, table(&report));
    assert_eq!(report.checks.len(), idemspec::runner::catalogue().len());
    assert!(
        all_pass(&report),
        "not every check passed ({creates:?} creates):\n{}",
        table(&report)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_passes_every_check_on_sqlite() {
    clean_reference_passes(CreateMode::Sync, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_passes_every_check_on_postgres() {
    clean_reference_passes(CreateMode::Sync, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn async_creates_clean_reference_passes_every_check_on_sqlite() {
    clean_reference_passes(CreateMode::Async, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn async_creates_clean_reference_passes_every_check_on_postgres() {
    clean_reference_passes(CreateMode::Async, true).await;
}

/// Two leasebroker replicas on one PostgreSQL, one profile listing both base URLs: the runner spreads
/// concurrent requests over them, and same-key requests split across replicas still create one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_on_one_postgres_create_once_per_key() {
    use idemspec::reference::ReferenceServer;
    use idemspec::runner::{run, RunOptions, Target};

    let Some(db) = crate::support::postgres::PgDb::create().await else {
        return;
    };
    let opts = crate::support::reference::reference(&[], Some(db.url.clone()));
    let first = ReferenceServer::start(&opts)
        .await
        .expect("replica 1 starts");
    let second = ReferenceServer::start(&opts)
        .await
        .expect("replica 2 starts");
    let mut profile = first.profile().expect("bundled profile loads");
    profile.base_urls.value = vec![first.base_url(), second.base_url()];
    let mut run_opts = RunOptions::new(Target::Profile(Box::new(profile)));
    run_opts.only = [
        "concurrent-same-key",
        "retry-storm",
        "lost-response",
        "fingerprint-mismatch",
        "replay-fidelity",
    ]
    .map(String::from)
    .to_vec();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let report = run(run_opts, tx).await.expect("the run starts");
    first.shutdown().await;
    second.shutdown().await;
    db.drop().await;
    assert_eq!(report.checks.len(), 5);
    assert!(
        all_pass(&report),
        "not every check passed:\n{}",
        table(&report)
    );
}
