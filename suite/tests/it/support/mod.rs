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
    idemspec::report::json::parse(&text).expect("a JSON report of the usual schema")
}
