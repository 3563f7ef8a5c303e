//! The proxy file loader under generated YAML (proptest, a bounded number of cases; set
//! `PROPTEST_CASES` for a longer run): it never panics or hangs, every rejection names a line
//! and a column, and what it accepts survives a round trip through JSON (the control API's form).
//! `proxy/fuzz/` has a cargo-fuzz target for open-ended runs.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::mutate::{apply, edit};

/// Valid files to mutate: every verb, both modes.
const SEEDS: &[&str] = &[
    "version: 1\nupstream: http://127.0.0.1:8080\nrules:\n  - name: lose\n    match: {method: POST, path: /v1/workers, nth: 1}\n    fault: {drop_response: {}}\n  - name: gw\n    match: {probability: 0.5, seed: 7}\n    fault: {respond: {status: 502, body: \"x\", content_type: application/json}}\n    times: 2\n",
    "version: 1\nlisten: 127.0.0.1:0\nupstream: http://a:1/api\nrules:\n  - name: slow\n    match:\n      header: {name: X-Idemspec-Step, equals: s1}\n      path_glob: /v1/*/reboot\n    fault:\n      delay_request: {duration: 250ms}\n  - name: twice\n    fault: {duplicate: {mode: concurrent}}\n  - name: cut\n    fault: {reset_mid_response: {after_bytes: 10}}\n  - name: hold\n    fault: hang\n",
    "version: 1\nmode: tcp\nupstream: 127.0.0.1:5432\ntcp_rules:\n  - name: lag\n    fault: {latency: {duration: 20ms, jitter: 5ms, direction: downstream}}\n  - name: cut\n    match: {nth: 3}\n    fault: {close_after: {bytes: 100, reset: true}}\n",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn mutated_proxy_files_load_or_fail_at_a_line_and_column(
        seed in prop::sample::select(SEEDS),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        let text = apply(seed, &edits);
        let started = Instant::now();
        match ProxyFile::load("p.yaml", &text) {
            Ok(file) => {
                let json = serde_json::to_string(&file.rules).expect("rules serialise");
                let back: Vec<Rule> = serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("{text:?} loaded, its rules do not read back: {e}: {json}"));
                prop_assert_eq!(&back, &file.rules);
                let json = serde_json::to_string(&file.tcp_rules).expect("rules serialise");
                let back: Vec<TcpRule> = serde_json::from_str(&json).expect("TCP rules read back");
                prop_assert_eq!(&back, &file.tcp_rules);
            }
            Err(e) => {
                prop_assert!(e.line >= 1 && e.column >= 1, "{:?} is not located: {}", text, e);
                prop_assert!(!e.message.is_empty(), "{:?}", text);
            }
        }
        prop_assert!(started.elapsed() < Duration::from_secs(2), "{:?} took {:?}", text, started.elapsed());
    }
}
