//! The JSONPath compiler: any text compiles or is refused, never a panic or a stack overflow; what
//! compiles runs against a nested document.
#![no_main]

use idemspec_scenarios::value::JsonPathExpr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(path) = JsonPathExpr::parse(text) {
        let doc = serde_json::json!({"data": [{"id": "a"}, {"id": 2, "n": [1, [2]]}, null], "id": "top"});
        let all = path.select(&doc);
        assert_eq!(path.first(&doc), all.first().copied());
    }
});
