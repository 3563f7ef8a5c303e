//! The sentences a report prints state facts about the exchanges only through claims
//! (`idemspec::model::Claim`), and every claim is audited against the check's exchanges: every
//! run a test makes through `support::reference::run_options` or reads back with
//! `support::read_json_report` fails on a claim its exchanges refute. These are the sentences that
//! once stated what the exchanges did not show.

use idemspec::model::{Claim, Verdict};

use crate::support::reference::{outcome, run_reference, table};

/// A second principal that sent one request with the first principal's key and got the first
/// principal's resource: a leak across principals, and nothing merged (one key is never "different
/// keys merged"); the claims name the answer it got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leak_across_principals_is_not_called_a_merge_of_different_keys() {
    let report = run_reference(&["global-keyspace"], None, &["cross-tenant"]).await;
    let cross = outcome(&report, "cross-tenant");
    assert_eq!(cross.verdict, Verdict::Fail, "{}", table(&report));
    let said = format!("{} {}", cross.summary, cross.notes.join(" "));
    assert!(!said.contains("merged"), "{said}");
    assert!(
        cross.claims.iter().any(|c| matches!(
            c,
            Claim::GotAnswerOf { step, of } | Claim::GotResourceOf { step, of, .. }
                if step == "second-principal" && of == "first-principal"
        )),
        "the leak is stated as a claim: {:?}",
        cross.claims
    );
    assert!(cross.audit.is_empty(), "{:?}", cross.audit);
}

/// A clean run states its facts as claims too (each own operation names its resource), and every
/// one of them holds on the exchanges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_runs_claims_hold_on_its_exchanges() {
    let report = run_reference(&[], None, &["cross-tenant", "endpoint-scope"]).await;
    let cross = outcome(&report, "cross-tenant");
    assert_eq!(cross.verdict, Verdict::Pass, "{}", table(&report));
    let own = cross.claims.iter().find_map(|c| match c {
        Claim::OwnOperation { step, ids, .. } if step == "second-principal" => Some(ids),
        _ => None,
    });
    let ids = own.unwrap_or_else(|| panic!("an own-operation claim: {:?}", cross.claims));
    assert_eq!(ids.len(), 1, "the one resource it made: {ids:?}");
    assert!(
        cross.summary.contains(&ids[0]),
        "the sentence names the resource the claim holds: {}",
        cross.summary
    );
}

/// A server that stores its 500 and replays it: failed-not-cached FAILs citing the rule the
/// article contract holds (a 5xx is re-run), not Stripe's (which replays it); and no sentence
/// beside a retry that got the stored 500 says the retry ran again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_500_is_judged_by_the_rule_that_applies_and_never_said_to_run_again() {
    let checks = [
        "failed-not-cached",
        "failed-creates-nothing",
        "resumable-side-effects",
    ];
    let report = run_reference(&["cache-5xx"], None, &checks).await;
    let failed = outcome(&report, "failed-not-cached");
    assert_eq!(failed.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        failed
            .summary
            .contains("article: only terminal outcomes are stored"),
        "{}",
        failed.summary
    );
    assert!(!failed.summary.contains("stripe"), "{}", failed.summary);
    for check in &report.checks {
        let said = format!("{} {}", check.summary, check.notes.join(" "));
        assert!(
            !said.contains("a retry of it runs again"),
            "{}: {said}",
            check.id
        );
    }
}
