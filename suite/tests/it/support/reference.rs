//! Running the catalogue against the bundled leasebroker, as `idemspec run --reference` does.

use idemspec::model::{CheckOutcome, RunReport, Verdict};
use idemspec::reference::ReferenceOptions;
use idemspec::runner::{run, RunOptions, Target};
pub use leasebroker::fleet::CreateMode;

/// Options that start the reference through the `idemspec` binary's hidden `__leasebroker`
/// subcommand (or, when `IDEMSPEC_TEST_LEASEBROKER_BIN` names a leasebroker binary, that binary).
pub fn reference(flaws: &[&str], database_url: Option<String>) -> ReferenceOptions {
    let mut opts = ReferenceOptions {
        flaws: flaws.iter().map(|f| (*f).to_owned()).collect(),
        database_url,
        ..ReferenceOptions::default()
    };
    match std::env::var("IDEMSPEC_TEST_LEASEBROKER_BIN") {
        Ok(bin) => {
            opts.program = Some(bin.into());
            opts.subcommand = Vec::new();
        }
        Err(_) => opts.program = Some(env!("CARGO_BIN_EXE_idemspec").into()),
    }
    opts
}

/// Runs `only` (all checks when empty) against the reference with `flaws`.
pub async fn run_reference(
    flaws: &[&str],
    database_url: Option<String>,
    only: &[&str],
) -> RunReport {
    run_reference_in(CreateMode::Sync, flaws, database_url, only).await
}

/// Runs `only` (all checks when empty) against the reference with `flaws`, its creates answering
/// as `creates` says.
pub async fn run_reference_in(
    creates: CreateMode,
    flaws: &[&str],
    database_url: Option<String>,
    only: &[&str],
) -> RunReport {
    let mut reference = reference(flaws, database_url);
    reference.creates = creates;
    let mut opts = RunOptions::new(Target::Reference(reference));
    opts.only = only.iter().map(|s| (*s).to_owned()).collect();
    run_options(opts).await
}

/// Runs every check against the reference with `flaws`, its creates answering as `creates` says,
/// on a throwaway PostgreSQL database (dropped after) or on SQLite; `None` where PostgreSQL is
/// wanted and unreachable outside CI.
pub async fn run_reference_on(
    creates: CreateMode,
    flaws: &[&str],
    postgres: bool,
) -> Option<RunReport> {
    let db = if postgres {
        Some(crate::support::postgres::PgDb::create().await?)
    } else {
        None
    };
    let report = run_reference_in(creates, flaws, db.as_ref().map(|d| d.url.clone()), &[]).await;
    if let Some(db) = db {
        db.drop().await;
    }
    Some(report)
}

/// Runs `only` (every check when empty) against the reference with `flaws` over mutual TLS
/// (`--reference --tls`: a throwaway CA, principals named by their client certificates), its
/// creates answering `201`, on SQLite.
pub async fn run_reference_over_mutual_tls(flaws: &[&str], only: &[&str]) -> RunReport {
    let mut reference = reference(flaws, None);
    reference.tls = true;
    let mut opts = RunOptions::new(Target::Reference(reference));
    opts.only = only.iter().map(|s| (*s).to_owned()).collect();
    run_options(opts).await
}

/// Runs `opts`, draining its progress events.
pub async fn run_options(opts: RunOptions) -> RunReport {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let report = run(opts, tx).await.expect("the run starts");
    drain.await.expect("event drain ends");
    super::assert_claims_hold(&report);
    report
}

/// One line per check with verdict and summary, for assertion messages.
pub fn table(report: &RunReport) -> String {
    report
        .checks
        .iter()
        .map(|c| format!("{:<26} {:<7} {}\n", c.id, c.verdict.label(), c.summary))
        .collect()
}

/// The outcome of check `id`.
pub fn outcome<'a>(report: &'a RunReport, id: &str) -> &'a CheckOutcome {
    report
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no outcome for {id}:\n{}", table(report)))
}

/// Whether every check passed.
pub fn all_pass(report: &RunReport) -> bool {
    report.checks.iter().all(|c| c.verdict == Verdict::Pass)
}
