//! The scenario, target-profile and client-profile loaders, `${VAR}` expansion and the JSONPath and
//! template compilers under generated input (proptest, a bounded number of cases; set
//! `PROPTEST_CASES` for a longer run): mutations of the bundled valid files ([`crate::mutate`]) and
//! any bytes. None panics or hangs, and every rejection of a file names a line and a column.
//! `scenarios/fuzz/` has cargo-fuzz targets for open-ended runs. (Proxy files: `rules/fuzz.rs`.)

use proptest::prelude::*;

use crate::catalogue::{LEASEBROKER_ASYNC_PROFILE, LEASEBROKER_PROFILE, SOURCES};
use crate::client_profile::ClientProfile;
use crate::mutate::{apply, assert_located, edit, input};
use crate::profile::{expand_env, TargetProfile};
use crate::scenario::Scenario;
use crate::template::{Template, TemplateVars};
use crate::value::JsonPathExpr;

/// Every built-in check and the example scenarios users copy.
fn scenarios() -> Vec<&'static str> {
    SOURCES
        .iter()
        .map(|(_, text)| *text)
        .chain([
            include_str!("../examples/duplicating-intermediary.yaml"),
            include_str!("../examples/slow-response-retry.yaml"),
        ])
        .collect()
}

/// The bundled target profiles: leasebroker's (both modes), the example for another API, and
/// `idemspec init`'s.
const PROFILES: &[&str] = &[
    LEASEBROKER_PROFILE,
    LEASEBROKER_ASYNC_PROFILE,
    include_str!("../examples/my-api.yaml"),
    include_str!("../../suite/src/cli/init-profile.yaml"),
];

/// The example client's profile and the SDK matrix's.
const CLIENT_PROFILES: &[&str] = &[
    include_str!("../../clients/example/client.yaml"),
    include_str!("../../clients/sdks/profiles/stripe.yaml"),
    include_str!("../../clients/sdks/profiles/pydo.yaml"),
];

/// An environment where `X` and the bundled profiles' variables without defaults are set; `NL`
/// holds a newline (refused), `LONG` 64 KiB.
fn env(name: &str) -> Option<String> {
    match name {
        "X" | "MY_API_KEY_A" | "MY_API_KEY_B" => Some("v".into()),
        "NL" => Some("a\nb".into()),
        "LONG" => Some("x".repeat(65_536)),
        _ => None,
    }
}

/// What `${…}` expansion is fed: text made of its syntax, names and comment and quote characters.
fn env_text() -> impl Strategy<Value = String> {
    const PARTS: &[&str] = &[
        "${",
        "}",
        ":-",
        "X",
        "NL",
        "LONG",
        "UNSET",
        "${X}",
        "${UNSET:-d}",
        "${NL}",
        "#",
        " #",
        "\"",
        "'",
        "\n",
        " ",
        "a: ",
        "é",
        "$",
        "{",
        "${${X}}",
    ];
    prop::collection::vec(prop::sample::select(PARTS), 0..40).prop_map(|p| p.concat())
}

/// What the JSONPath compiler is fed: RFC 9535's syntax in pieces, including sizes past every bound.
fn jsonpath_text() -> impl Strategy<Value = String> {
    const PARTS: &[&str] = &[
        "$",
        ".",
        "..",
        "[",
        "]",
        "*",
        "?",
        "@",
        "(",
        ")",
        "'",
        "\"",
        ",",
        ":",
        "a",
        "data",
        "id",
        "0",
        "-1",
        "99999999999999999999",
        "::",
        "::-1",
        "::0",
        "==",
        "!=",
        "<",
        "&&",
        "||",
        "!",
        "length(",
        "count(",
        "match(",
        "search(",
        "value(",
        "true",
        "null",
        " ",
        "\\u0000",
        "é",
    ];
    prop_oneof![
        prop::collection::vec(prop::sample::select(PARTS), 0..30).prop_map(|p| p.concat()),
        any::<String>(),
        (1usize..5_000).prop_map(|n| format!("${}", "[0]".repeat(n))),
        (1usize..5_000).prop_map(|n| format!("$[?{}@.a{}]", "(".repeat(n), ")".repeat(n))),
    ]
}

/// What the template compiler is fed.
fn template_text() -> impl Strategy<Value = String> {
    const PARTS: &[&str] = &[
        "{{", "}}", "{", "}", "marker", "uuid", "variant", " ", "nope", "\"", "é", "{{{", "}}}",
        "x",
    ];
    prop_oneof![
        prop::collection::vec(prop::sample::select(PARTS), 0..30).prop_map(|p| p.concat()),
        any::<String>(),
    ]
}

/// The JSON a compiled path is run against: shaped like a list response, nested.
fn document() -> serde_json::Value {
    serde_json::json!({
        "data": [{"id": "a", "labels": {"suite": "m1"}}, {"id": 2, "n": [1, 2, [3]]}, null],
        "id": "top", "a": {"a": {"a": true}}
    })
}

/// YAML breaks a line at a lone CR too: an error after two of them is on line 3, inside the file
/// (proptest found `" \r \r\0\0"` judged against `str::lines`, which counts one line).
#[test]
fn a_lone_carriage_return_counts_as_a_line_break() {
    for text in [" \r \r\0\0", "version: 1\rname: x\r\0"] {
        assert_located(text, |t| TargetProfile::load("p.yaml", t, &env)).expect("located");
        assert_located(text, |t| Scenario::load("s.yaml", t)).expect("located");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn scenarios_load_or_fail_at_a_line_and_column(text in input(scenarios())) {
        if let Some(s) = assert_located(&text, |t| Scenario::load("s.yaml", t))? {
            // What loads is valid by its own rules, and survives a round trip through YAML's
            // data model (JSON) with its steps and assertions.
            prop_assert!(s.validate("s.yaml").is_ok());
            prop_assert!(serde_json::to_value(&s).is_ok());
        }
    }

    #[test]
    fn target_profiles_load_or_fail_at_a_line_and_column(text in input(PROFILES.to_vec())) {
        if let Some(p) = assert_located(&text, |t| TargetProfile::load("p.yaml", t, &env))? {
            prop_assert!(p.validate("p.yaml").is_ok());
            prop_assert!(!p.base_urls.value.is_empty());
        }
    }

    #[test]
    fn client_profiles_load_or_fail_at_a_line_and_column(text in input(CLIENT_PROFILES.to_vec())) {
        if let Some(p) = assert_located(&text, |t| ClientProfile::load("c.yaml", t, &env))? {
            prop_assert!(p.validate("c.yaml").is_ok());
        }
    }

    #[test]
    fn env_expansion_keeps_lines_or_fails_at_the_reference(text in env_text()) {
        if let Some(out) = assert_located(&text, |t| expand_env("p.yaml", t, &env))? {
            // Line numbers are kept, so later parse errors point at the line the user wrote.
            prop_assert_eq!(out.matches('\n').count(), text.matches('\n').count(), "{:?}", text);
        }
    }

    #[test]
    fn env_expansion_of_mutated_profiles_keeps_lines(
        seed in prop::sample::select(PROFILES),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        let text = apply(seed, &edits);
        if let Some(out) = assert_located(&text, |t| expand_env("p.yaml", t, &env))? {
            prop_assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        }
    }

    #[test]
    fn jsonpaths_compile_or_are_refused_and_never_panic(text in jsonpath_text()) {
        let doc = document();
        if let Ok(path) = JsonPathExpr::parse(&text) {
            prop_assert_eq!(path.source(), text.as_str());
            let all = path.select(&doc);
            prop_assert_eq!(path.first(&doc), all.first().copied());
        }
        // In a profile, a refused path is a located error at its value.
        let yaml = format!("version: 1\nname: x\nbase_urls: [http://127.0.0.1:1]\noperations:\n  create:\n    path: /w\n    body: '{{}}'\n    id: {}\n", serde_json::to_string(&text).expect("a string serialises"));
        assert_located(&yaml, |t| TargetProfile::load("p.yaml", t, &env))?;
    }

    #[test]
    fn templates_compile_or_are_refused_and_render_what_they_hold(text in template_text()) {
        match Template::parse(&text) {
            Ok(t) => {
                let vars = TemplateVars::new("MARK", 2);
                let out = t.render(&vars, || "UUID".into());
                prop_assert_eq!(t.source(), text.as_str());
                prop_assert_eq!(t.has_variant(), out != t.render(&TemplateVars { variant: 1, ..vars.clone() }, || "UUID".into()));
                if !text.contains("{{") {
                    prop_assert_eq!(out, text);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
