//! The flaw matrix: for every leasebroker `--flaw`, the check made to catch it FAILs (WARN for the
//! SHOULD-level endpoint scope), and its summary names the broken rule. The clean server passing
//! every check is `reference_run`; together they show the verdicts are right both ways.

use idemspec::model::Verdict;

use crate::support::reference::{outcome, run_reference, table};

/// One row: the flaw, the checks that must catch it, the verdict, and words the summary must hold.
struct Case {
    flaw: &'static str,
    catches: &'static [&'static str],
    verdict: Verdict,
    says: &'static str,
}

async fn check(case: Case, postgres: bool) {
    let db = if postgres {
        match crate::support::postgres::PgDb::create().await {
            Some(db) => Some(db),
            None => return,
        }
    } else {
        None
    };
    let url = db.as_ref().map(|d| d.url.clone());
    let report = run_reference(&[case.flaw], url, case.catches).await;
    if let Some(db) = db {
        db.drop().await;
    }
    for id in case.catches {
        let o = outcome(&report, id);
        assert_eq!(
            o.verdict,
            case.verdict,
            "--flaw {}: {id} should be {} but is {}:\n{}",
            case.flaw,
            case.verdict,
            o.verdict,
            table(&report)
        );
        assert!(
            o.summary.contains(case.says),
            "--flaw {}: {id}'s summary should name the rule (`{}`): {}",
            case.flaw,
            case.says,
            o.summary
        );
        assert!(
            !o.evidence.is_empty(),
            "--flaw {}: {id} shows no evidence",
            case.flaw
        );
    }
}

/// One test per flaw and store, named after the flaw and the check that catches it.
macro_rules! flaw_cases {
    ($($name:ident: $flaw:literal => [$($check:literal),+] $verdict:ident, says $says:literal;)+) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    check(flaw_case!($flaw, [$($check),+], $verdict, $says), false).await;
                }
            )+
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    check(flaw_case!($flaw, [$($check),+], $verdict, $says), true).await;
                }
            )+
        }
    };
}

macro_rules! flaw_case {
    ($flaw:literal, [$($check:literal),+], $verdict:ident, $says:literal) => {
        Case {
            flaw: $flaw,
            catches: &[$($check),+],
            verdict: Verdict::$verdict,
            says: $says,
        }
    };
}

flaw_cases! {
    no_idempotency_is_caught_by_lost_response_and_concurrency:
        "no-idempotency" => ["lost-response", "concurrent-same-key"] Fail, says "expected exactly";
    no_fingerprint_is_caught_by_fingerprint_mismatch:
        "no-fingerprint" => ["fingerprint-mismatch"] Fail, says "mismatch";
    check_then_act_is_caught_by_concurrent_same_key:
        "check-then-act" => ["concurrent-same-key"] Fail, says "with one key got different resources";
    no_in_flight_ttl_is_caught_by_stuck_in_flight:
        "no-in-flight-ttl" => ["stuck-in-flight"] Fail, says "locked out";
    cache_5xx_is_caught_by_failed_not_cached:
        "cache-5xx" => ["failed-not-cached"] Fail, says "stored and replayed";
    global_keyspace_is_caught_by_cross_tenant:
        "global-keyspace" => ["cross-tenant"] Fail, says "replayed";
    no_delete_replay_is_caught_by_delete_doom_loop:
        "no-delete-replay" => ["delete-doom-loop"] Fail, says "404";
    non_resumable_is_caught_by_resumable_side_effects:
        "non-resumable" => ["resumable-side-effects"] Fail, says "leaked";
    proceed_in_flight_is_caught_by_client_timeout_in_flight:
        "proceed-in-flight" => ["client-timeout-in-flight"] Fail, says "expected exactly 1";
    replay_drops_headers_is_caught_by_replay_fidelity:
        "replay-drops-headers" => ["replay-fidelity"] Fail, says "location missing";
    endpoint_unscoped_is_caught_by_endpoint_scope:
        "endpoint-unscoped" => ["endpoint-scope"] Warn, says "not scoped to the operation";
}
