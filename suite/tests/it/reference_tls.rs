//! `idemspec run --reference --tls`: leasebroker over mutual TLS with a throwaway CA per run, its
//! two principals named by their client certificates (no bearer token), every request (direct,
//! and through the fault proxy) showing its principal's certificate. Every flaw still failing its
//! check over mutual TLS is the flaw matrix's `mutual_tls` mode.

use idemspec::model::{RunReport, Verdict};

use crate::support::reference::{all_pass, outcome, run_reference_over_mutual_tls, table};

/// Asserts the report says the reference was reached over TLS with the run's CA.
fn assert_reached_over_tls(report: &RunReport) {
    let [reached] = report.tls.as_slice() else {
        panic!("one https base URL expected: {:?}", report.tls);
    };
    assert!(reached.url.starts_with("https://127.0.0.1:"), "{reached:?}");
    assert!(reached.version.starts_with("TLS 1."), "{reached:?}");
    assert_eq!(reached.subject, "CN=127.0.0.1", "{reached:?}");
    assert!(
        reached.issuer.starts_with("CN=idemspec throwaway CA"),
        "{reached:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_passes_every_check_over_mutual_tls_on_sqlite() {
    let report = run_reference_over_mutual_tls(&[], &[]).await;
    println!("{}ms\n{}", report.duration_ms, table(&report));
    assert_reached_over_tls(&report);
    assert_eq!(report.checks.len(), idemspec::runner::catalogue().len());
    assert!(
        all_pass(&report),
        "not every check passed over mutual TLS:\n{}",
        table(&report)
    );
}

/// A server that keys records by key alone leaks alice's answer to bob: over mutual TLS, where
/// the certificates alone tell them apart, cross-tenant must still FAIL.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn global_keyspace_fails_cross_tenant_over_mutual_tls() {
    let report = run_reference_over_mutual_tls(&["global-keyspace"], &["cross-tenant"]).await;
    assert_reached_over_tls(&report);
    let o = outcome(&report, "cross-tenant");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
}
