//! The flaw matrix: for every leasebroker `--flaw`, the whole catalogue runs; the check that owns
//! the flaw's rule FAILs (WARN for the SHOULD-level endpoint scope) naming the broken rule, and no
//! check FAILs whose own rule the flaw leaves intact. The clean server passing
//! every check is `reference_run`; together they show the verdicts are right both ways.
//!
//! It runs with the reference's creates answering `201` (`sync_creates`) and `202` with an
//! operation to poll (`async_creates`, `--creates async`: the boot runs after the answer), on
//! SQLite and PostgreSQL. Each flaw is caught by the same check in both modes, except where the
//! answer's shape changes which rule it breaks ([`case`]). `mutual_tls` runs the synchronous rows
//! once more over mutual TLS (`--reference --tls`, principals named by their client
//! certificates) on SQLite: every fault, hook and principal works the same over TLS.

use idemspec::model::{RunReport, Verdict};

use crate::support::reference::{
    all_pass, outcome, run_reference_on, run_reference_over_mutual_tls, table, CreateMode,
};

/// One row: the flaw, the check that owns its rule with the verdict and words its summary must
/// hold, and the other checks whose own rule the flaw breaks too (a flaw that ignores the key breaks
/// nearly every rule), and the checks that break it only when the server is slower than the check's
/// own pacing (`or_when_slow`: they may FAIL, or PASS). No other check may FAIL or WARN: one defect,
/// one failing check per rule.
struct Case {
    flaw: &'static str,
    owner: &'static str,
    verdict: Verdict,
    says: &'static str,
    also: &'static [&'static str],
    or_when_slow: &'static [&'static str],
}

/// Every flaw's row, with synchronous creates.
const CASES: &[Case] = &[
    Case {
        flaw: "no-idempotency",
        owner: "lost-response",
        verdict: Verdict::Fail,
        says: "expected exactly",
        also: &[
            "client-timeout-in-flight",
            "concurrent-same-key",
            "fingerprint-mismatch",
            "replay-fidelity",
            "replay-after-delete",
            "delete-doom-loop",
            "reboot-once",
            "key-validation",
            "retry-storm",
            "resumable-side-effects",
            "slow-handler-outlives-ttl",
        ],
        or_when_slow: &[],
    },
    Case {
        flaw: "no-fingerprint",
        owner: "fingerprint-mismatch",
        verdict: Verdict::Fail,
        says: "mismatch",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "check-then-act",
        owner: "concurrent-same-key",
        verdict: Verdict::Fail,
        says: "with one key got different resources",
        // Its race is on a key with no record: a retry sent within the 250 ms window runs too.
        // slow-handler-outlives-ttl retries after its slow request holds the key, which a found
        // record's rules then keep (and resume once reclaimed), so its rule holds.
        also: &["client-timeout-in-flight"],
        or_when_slow: &[],
    },
    Case {
        flaw: "no-in-flight-ttl",
        owner: "stuck-in-flight",
        verdict: Verdict::Fail,
        says: "still locked",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "cache-5xx",
        owner: "failed-not-cached",
        verdict: Verdict::Fail,
        says: "stored and replayed",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "global-keyspace",
        owner: "cross-tenant",
        verdict: Verdict::Fail,
        says: "per principal",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "no-delete-replay",
        owner: "delete-doom-loop",
        verdict: Verdict::Fail,
        says: "404",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "non-resumable",
        owner: "resumable-side-effects",
        verdict: Verdict::Fail,
        says: "leaked",
        also: &["slow-handler-outlives-ttl"],
        or_when_slow: &[],
    },
    Case {
        flaw: "proceed-in-flight",
        owner: "client-timeout-in-flight",
        verdict: Verdict::Fail,
        says: "expected exactly 1",
        also: &["concurrent-same-key", "slow-handler-outlives-ttl"],
        or_when_slow: &[],
    },
    Case {
        flaw: "replay-drops-headers",
        owner: "replay-fidelity",
        verdict: Verdict::Fail,
        says: "location missing",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "reclaim-reallocates",
        owner: "slow-handler-outlives-ttl",
        verdict: Verdict::Fail,
        says: "expected exactly 1",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "create-drops-location",
        owner: "create-response-shape",
        verdict: Verdict::Warn,
        says: "without `Location`",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "failed-create-leaves-worker",
        owner: "failed-creates-nothing",
        verdict: Verdict::Fail,
        says: "expected exactly 0",
        also: &[],
        or_when_slow: &[],
    },
    Case {
        flaw: "endpoint-unscoped",
        owner: "endpoint-scope",
        verdict: Verdict::Warn,
        says: "not scoped to the operation",
        also: &[],
        or_when_slow: &[],
    },
];

/// `proceed-in-flight` with asynchronous creates: a create holds its key only until it answers
/// (the boot runs after), so a retry sent once it answered is a replay; the flaw shows only where
/// same-key requests overlap. `client-timeout-in-flight` sends its retry 100 ms after its original
/// was sent whole: they overlap only when the server takes longer than that to answer a create (a
/// loaded machine), and then it fails too.
const PROCEED_IN_FLIGHT_ASYNC: Case = Case {
    flaw: "proceed-in-flight",
    owner: "concurrent-same-key",
    verdict: Verdict::Fail,
    says: "with one key got different resources",
    also: &["slow-handler-outlives-ttl"],
    or_when_slow: &["client-timeout-in-flight"],
};

/// The row of `flaw` with creates answering as `creates` says; `None` where the flaw breaks no
/// rule in that mode: with asynchronous creates, `create-drops-location` (a `202` names its
/// operation in its body, `selfLink`; RFC 9110 §15.3.3 asks no `Location` of it), so every check
/// passes.
fn case(flaw: &str, creates: CreateMode) -> Option<&'static Case> {
    match (creates, flaw) {
        (CreateMode::Async, "create-drops-location") => None,
        (CreateMode::Async, "proceed-in-flight") => Some(&PROCEED_IN_FLIGHT_ASYNC),
        _ => Some(
            CASES
                .iter()
                .find(|c| c.flaw == flaw)
                .unwrap_or_else(|| panic!("no row for --flaw {flaw}")),
        ),
    }
}

/// Runs the catalogue against the reference with `flaw`, on PostgreSQL or SQLite, its creates
/// answering as `creates` says, and judges the report by the flaw's row.
async fn check(flaw: &str, postgres: bool, creates: CreateMode) {
    let Some(report) = run_reference_on(creates, &[flaw], postgres).await else {
        return;
    };
    match case(flaw, creates) {
        Some(case) => judge(case, &report),
        None => assert!(
            all_pass(&report),
            "--flaw {flaw} breaks no rule with {creates:?} creates, but:\n{}",
            table(&report)
        ),
    }
}

/// Runs the catalogue against the reference with `flaw` over mutual TLS, on SQLite with
/// synchronous creates, and judges the report by the flaw's row.
async fn check_over_mutual_tls(flaw: &str) {
    let report = run_reference_over_mutual_tls(&[flaw], &[]).await;
    assert!(
        !report.tls.is_empty(),
        "the reference was not reached over TLS"
    );
    match case(flaw, CreateMode::Sync) {
        Some(case) => judge(case, &report),
        None => assert!(all_pass(&report), "--flaw {flaw}:\n{}", table(&report)),
    }
}

/// The owner FAILs (or WARNs) naming the rule, the `also` checks fail with evidence, and nothing
/// else fails but the `or_when_slow` checks.
fn judge(case: &Case, report: &RunReport) {
    let o = outcome(report, case.owner);
    assert_eq!(
        o.verdict,
        case.verdict,
        "--flaw {}: {} should be {} but is {}:\n{}",
        case.flaw,
        case.owner,
        case.verdict,
        o.verdict,
        table(report)
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
        let o = outcome(report, id);
        assert!(
            matches!(o.verdict, Verdict::Fail | Verdict::Warn) && !o.evidence.is_empty(),
            "--flaw {}: {id} should fail with evidence:\n{}",
            case.flaw,
            table(report)
        );
    }
    let failing: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail | Verdict::Warn))
        .map(|c| c.id.as_str())
        .filter(|id| {
            *id != case.owner && !case.also.contains(id) && !case.or_when_slow.contains(id)
        })
        .collect();
    assert!(
        failing.is_empty(),
        "--flaw {} breaks the rules of {} and {:?}, but {failing:?} failed too:\n{}",
        case.flaw,
        case.owner,
        case.also,
        table(report)
    );
}

/// One test per flaw, store and create mode (and over mutual TLS), named after the flaw.
macro_rules! flaw_tests {
    ($($name:ident: $flaw:literal;)+) => {
        flaw_tests!(@mode sync_creates, CreateMode::Sync; $($name: $flaw;)+);
        flaw_tests!(@mode async_creates, CreateMode::Async; $($name: $flaw;)+);
        mod mutual_tls {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    check_over_mutual_tls($flaw).await;
                }
            )+
        }
    };
    (@mode $mode:ident, $creates:expr; $($name:ident: $flaw:literal;)+) => {
        mod $mode {
            use super::*;
            mod sqlite {
                use super::*;
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                    async fn $name() {
                        check($flaw, false, $creates).await;
                    }
                )+
            }
            mod postgres {
                use super::*;
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                    async fn $name() {
                        check($flaw, true, $creates).await;
                    }
                )+
            }
        }
    };
}

flaw_tests! {
    no_idempotency: "no-idempotency";
    no_fingerprint: "no-fingerprint";
    check_then_act: "check-then-act";
    no_in_flight_ttl: "no-in-flight-ttl";
    cache_5xx: "cache-5xx";
    global_keyspace: "global-keyspace";
    no_delete_replay: "no-delete-replay";
    non_resumable: "non-resumable";
    proceed_in_flight: "proceed-in-flight";
    replay_drops_headers: "replay-drops-headers";
    reclaim_reallocates: "reclaim-reallocates";
    create_drops_location: "create-drops-location";
    failed_create_leaves_worker: "failed-create-leaves-worker";
    endpoint_unscoped: "endpoint-unscoped";
}

/// Every `--flaw` leasebroker has is in the table.
#[test]
fn every_flaw_has_a_row() {
    for flaw in <leasebroker::flaw::Flaw as clap::ValueEnum>::value_variants() {
        let name = flaw.name();
        assert!(
            CASES.iter().any(|c| c.flaw == name),
            "--flaw {name} has no row in the flaw matrix"
        );
    }
}
