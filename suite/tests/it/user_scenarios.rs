//! User-written scenarios (`scenarios/examples/`) run with the same vocabulary and machinery as the
//! catalogue: they pass the clean reference and fail the one that ignores keys.

use idemspec::model::Verdict;
use idemspec::runner::{run, RunOptions, Target};
use idemspec_scenarios::scenario::Scenario;

use crate::support::reference::{outcome, reference, table};

const EXAMPLES: [(&str, &str); 2] = [
    (
        "duplicating-intermediary.yaml",
        include_str!("../../../scenarios/examples/duplicating-intermediary.yaml"),
    ),
    (
        "slow-response-retry.yaml",
        include_str!("../../../scenarios/examples/slow-response-retry.yaml"),
    ),
];

async fn run_examples(flaws: &[&str]) -> idemspec::model::RunReport {
    let mut opts = RunOptions::new(Target::Reference(reference(flaws, None)));
    opts.builtin = false;
    opts.scenarios = EXAMPLES
        .iter()
        .map(|(file, text)| Scenario::load(file, text).expect("example loads"))
        .collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    run(opts, tx).await.expect("the run starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn example_scenarios_pass_the_clean_reference() {
    let report = run_examples(&[]).await;
    assert_eq!(report.checks.len(), 2);
    for c in &report.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}", table(&report));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn example_scenarios_fail_a_server_that_ignores_keys() {
    let report = run_examples(&["no-idempotency"]).await;
    for id in ["duplicating-intermediary", "slow-response-retry"] {
        let o = outcome(&report, id);
        assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
        assert!(o.summary.contains("expected exactly 1"), "{}", o.summary);
    }
}

/// A scenario that only records behaviour is INFO, never PASS or FAIL.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scenario_that_only_records_is_info() {
    const RECORD: &str = r#"version: 1
id: what-does-a-mismatch-answer
title: Record how a reused key with a different body is answered
level: MUST
reference: "test"
requires: [body_variant]
steps:
  - {name: original, op: create, key: K1, via: direct}
  - {name: changed, op: create, key: K1, body: alt, via: direct}
assert:
  - status: {step: changed, in: [422]}
    record: true
"#;
    let mut opts = RunOptions::new(Target::Reference(reference(&[], None)));
    opts.builtin = false;
    opts.scenarios = vec![Scenario::load("record.yaml", RECORD).expect("scenario loads")];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let report = run(opts, tx).await.expect("the run starts");
    let o = outcome(&report, "what-does-a-mismatch-answer");
    assert_eq!(o.verdict, Verdict::Info, "{}", table(&report));
    assert!(
        o.summary.contains("409"),
        "the observed status is recorded: {}",
        o.summary
    );
}
