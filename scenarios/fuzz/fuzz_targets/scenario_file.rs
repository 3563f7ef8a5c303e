//! The scenario loader: any text loads as a scenario valid by its own rules, or fails with a line
//! and a column for every error it reports.
#![no_main]

use idemspec_scenarios::scenario::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match Scenario::load("fuzz.yaml", text) {
        Ok(s) => assert!(s.validate("fuzz.yaml").is_ok()),
        Err(e) => {
            for e in e.each() {
                assert!(e.line >= 1 && e.column >= 1, "not located: {e}");
            }
        }
    }
});
