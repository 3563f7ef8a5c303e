//! Helpers shared by the integration tests.

pub mod alt_api;
pub mod hostile;
pub mod postgres;
pub mod redact;
pub mod reference;
pub mod sample;
pub mod sigv4_front;
pub mod tls_edge;

/// The JSON report a run wrote at `path` (`--report-json`), read back in the report's schema.
pub fn read_json_report(path: impl AsRef<std::path::Path>) -> idemspec::model::RunReport {
    let path = path.as_ref();
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let report = idemspec::report::json::parse(&text).expect("a JSON report of the usual schema");
    assert_claims_hold(&report);
    report
}

/// Fails the test naming every sentence of `report` whose claims its check's exchanges did not
/// bear out (`CheckOutcome::audit`, idemspec's audit of its own sentences): every report a test
/// reads passes through here.
pub fn assert_claims_hold(report: &idemspec::model::RunReport) {
    let refuted: Vec<String> = report
        .checks
        .iter()
        .flat_map(|c| {
            c.audit
                .iter()
                .map(move |line| format!("{} {}: {line}\n    in: {}", c.id, c.verdict, c.summary))
        })
        .collect();
    assert!(
        refuted.is_empty(),
        "sentences the exchanges do not bear out:\n{}",
        refuted.join("\n")
    );
}
