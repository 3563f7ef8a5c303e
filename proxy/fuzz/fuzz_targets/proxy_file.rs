//! The proxy file loader: any text loads, or fails with a line and a column; what loads reads
//! back from JSON (the control API's form) as the same rules.
#![no_main]

use idemspec_scenarios::rules::{ProxyFile, Rule, TcpRule};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match ProxyFile::load("fuzz.yaml", text) {
        Ok(file) => {
            let json = serde_json::to_string(&file.rules).expect("rules serialise");
            let back: Vec<Rule> = serde_json::from_str(&json).expect("rules read back");
            assert_eq!(back, file.rules, "{json}");
            let json = serde_json::to_string(&file.tcp_rules).expect("rules serialise");
            let back: Vec<TcpRule> = serde_json::from_str(&json).expect("TCP rules read back");
            assert_eq!(back, file.tcp_rules, "{json}");
        }
        Err(e) => assert!(e.line >= 1 && e.column >= 1, "not located: {e}"),
    }
});
