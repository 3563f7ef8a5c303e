//! `${VAR}` expansion and the target-profile loader: any text loads as a valid profile, or fails
//! with a line and a column for every error it reports; expansion keeps the line count.
#![no_main]

use idemspec_scenarios::profile::{expand_env, TargetProfile};
use libfuzzer_sys::fuzz_target;

fn env(name: &str) -> Option<String> {
    match name {
        "X" | "MY_API_KEY_A" | "MY_API_KEY_B" => Some("v".into()),
        "NL" => Some("a\nb".into()),
        _ => None,
    }
}

fuzz_target!(|text: &str| {
    match expand_env("fuzz.yaml", text, &env) {
        Ok(out) => assert_eq!(out.matches('\n').count(), text.matches('\n').count()),
        Err(e) => assert!(e.line >= 1 && e.column >= 1, "not located: {e}"),
    }
    match TargetProfile::load("fuzz.yaml", text, &env) {
        Ok(p) => assert!(p.validate("fuzz.yaml").is_ok()),
        Err(e) => {
            for e in e.each() {
                assert!(e.line >= 1 && e.column >= 1, "not located: {e}");
            }
        }
    }
});
