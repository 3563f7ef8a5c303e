//! The whole catalogue against the clean reference server: every check PASS, on SQLite and on
//! PostgreSQL.

use crate::support::reference::{all_pass, run_reference, table};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_passes_every_check_on_sqlite() {
    let report = run_reference(&[], None, &[]).await;
    println!("{}ms\n{}", report.duration_ms, table(&report));
    assert_eq!(report.checks.len(), 16);
    assert!(
        all_pass(&report),
        "not every check passed:\n{}",
        table(&report)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_passes_every_check_on_postgres() {
    let Some(db) = crate::support::postgres::PgDb::create().await else {
        return;
    };
    let report = run_reference(&[], Some(db.url.clone()), &[]).await;
    db.drop().await;
    println!("{}ms\n{}", report.duration_ms, table(&report));
    assert_eq!(report.checks.len(), 16);
    assert!(
        all_pass(&report),
        "not every check passed:\n{}",
        table(&report)
    );
}
