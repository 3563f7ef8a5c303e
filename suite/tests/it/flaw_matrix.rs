//! The flaw matrix: for every leasebroker `--flaw`, the whole catalogue runs; the check that owns
//! the flaw's rule FAILs (WARN for the SHOULD-level endpoint scope) naming the broken rule, and no
//! check FAILs whose own rule the flaw leaves intact. The clean server passing
//! every check is `reference_run`; together they show the verdicts are right both ways.

use idemspec::model::Verdict;

use crate::support::reference::{outcome, run_reference, table};

/// One row: the flaw, the check that owns its rule with the verdict and words its summary must
/// hold, and the other checks whose own rule the flaw breaks too (a flaw that ignores the key breaks
/// nearly every rule). No other check may FAIL or WARN: one defect, one failing check per rule.
struct Case {
    flaw: &'static str,
    owner: &'static str,
    verdict: Verdict,
    says: &'static str,
    also: &'static [&'static str],
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
    let report = run_reference(&[case.flaw], url, &[]).await;
    if let Some(db) = db {
        db.drop().await;
    }
    let o = outcome(&report, case.owner);
    assert_eq!(
        o.verdict,
        case.verdict,
        "--flaw {}: {} should be {} but is {}:\n{}",
        case.flaw,
        case.owner,
        case.verdict,
        o.verdict,
        table(&report)
    );
    assert!(
        o.summary.contains(case.says),
        "--flaw {}: {}'s summary should name the rule (`{}`): {}",
        case.flaw,
        case.owner,
        case.says,
        o.summary
    );
    for id in std::iter::once(&case.owner).chain(case.also) {
        let o = outcome(&report, id);
        assert!(
            matches!(o.verdict, Verdict::Fail | Verdict::Warn) && !o.evidence.is_empty(),
            "--flaw {}: {id} should fail with evidence:\n{}",
            case.flaw,
            table(&report)
        );
    }
    let failing: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail | Verdict::Warn))
        .map(|c| c.id.as_str())
        .filter(|id| *id != case.owner && !case.also.contains(id))
        .collect();
    assert!(
        failing.is_empty(),
        "--flaw {} breaks the rules of {} and {:?}, but {failing:?} failed too:\n{}",
        case.flaw,
        case.owner,
        case.also,
        table(&report)
    );
}

/// One test per flaw and store, named after the flaw and the check that owns its rule.
macro_rules! flaw_cases {
    ($($name:ident: $flaw:literal => $owner:literal $verdict:ident, says $says:literal, also [$($also:literal),*];)+) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    check(flaw_case!($flaw, $owner, $verdict, $says, [$($also),*]), false).await;
                }
            )+
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    check(flaw_case!($flaw, $owner, $verdict, $says, [$($also),*]), true).await;
                }
            )+
        }
    };
}

macro_rules! flaw_case {
    ($flaw:literal, $owner:literal, $verdict:ident, $says:literal, [$($also:literal),*]) => {
        Case {
            flaw: $flaw,
            owner: $owner,
            verdict: Verdict::$verdict,
            says: $says,
            also: &[$($also),*],
        }
    };
}

flaw_cases! {
    no_idempotency_is_caught_by_lost_response_and_every_rule_it_breaks:
        "no-idempotency" => "lost-response" Fail, says "expected exactly", also [
            "client-timeout-in-flight", "concurrent-same-key", "fingerprint-mismatch",
            "replay-fidelity", "replay-after-delete", "delete-doom-loop", "reboot-once",
            "key-validation", "retry-storm", "resumable-side-effects", "slow-handler-outlives-ttl"
        ];
    no_fingerprint_is_caught_by_fingerprint_mismatch:
        "no-fingerprint" => "fingerprint-mismatch" Fail, says "mismatch", also [];
    check_then_act_is_caught_by_concurrent_same_key:
        "check-then-act" => "concurrent-same-key" Fail, says "with one key got different resources",
        also ["client-timeout-in-flight", "slow-handler-outlives-ttl"];
    no_in_flight_ttl_is_caught_by_stuck_in_flight:
        "no-in-flight-ttl" => "stuck-in-flight" Fail, says "still locked", also [];
    cache_5xx_is_caught_by_failed_not_cached:
        "cache-5xx" => "failed-not-cached" Fail, says "stored and replayed", also [];
    global_keyspace_is_caught_by_cross_tenant:
        "global-keyspace" => "cross-tenant" Fail, says "per principal", also [];
    no_delete_replay_is_caught_by_delete_doom_loop:
        "no-delete-replay" => "delete-doom-loop" Fail, says "404", also [];
    non_resumable_is_caught_by_resumable_side_effects:
        "non-resumable" => "resumable-side-effects" Fail, says "leaked",
        also ["slow-handler-outlives-ttl"];
    proceed_in_flight_is_caught_by_client_timeout_in_flight:
        "proceed-in-flight" => "client-timeout-in-flight" Fail, says "expected exactly 1",
        also ["concurrent-same-key", "slow-handler-outlives-ttl"];
    replay_drops_headers_is_caught_by_replay_fidelity:
        "replay-drops-headers" => "replay-fidelity" Fail, says "location missing", also [];
    reclaim_reallocates_is_caught_by_slow_handler_outlives_ttl:
        "reclaim-reallocates" => "slow-handler-outlives-ttl" Fail, says "expected exactly 1", also [];
    create_drops_location_is_caught_by_create_response_shape:
        "create-drops-location" => "create-response-shape" Warn, says "without `Location`", also [];
    failed_create_leaves_worker_is_caught_by_failed_creates_nothing:
        "failed-create-leaves-worker" => "failed-creates-nothing" Fail, says "expected exactly 0", also [];
    endpoint_unscoped_is_caught_by_endpoint_scope:
        "endpoint-unscoped" => "endpoint-scope" Warn, says "not scoped to the operation", also [];
}
