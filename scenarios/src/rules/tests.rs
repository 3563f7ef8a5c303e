//! Unit tests of the rule schema: accepted shapes, and located errors for bad ones.

use super::*;
use crate::from_yaml;

fn rules(yaml: &str) -> Result<Vec<Rule>, crate::LoadError> {
    from_yaml::<Vec<Rule>>("faults.yaml", yaml)
}

fn err(yaml: &str) -> String {
    rules(yaml).expect_err("must be rejected").to_string()
}

#[test]
fn every_fault_verb_parses() {
    let yaml = r#"
- name: a
  fault: {refuse: {}}
- name: b
  fault: {refuse: {reset: true}}
- name: c
  match: {method: post, path: /v1/workers}
  fault: {respond: {status: 502, body: "bad gateway"}}
- name: d
  fault: {delay_request: {duration: 250ms}}
- name: e
  fault: {delay_response: {duration: 3s}}
- name: f
  match: {nth: 2, header: {name: X-Idemspec-Step, equals: lost-1}}
  fault: {drop_response: {}}
- name: g
  fault: {reset_mid_response: {after_bytes: 10}}
- name: h
  fault: {hang: {forward: true}}
- name: i
  match: {probability: 0.5, seed: 7, path_glob: "/v1/workers/*/reboot"}
  fault: {duplicate: {mode: concurrent}}
  times: 3
"#;
    let rules = rules(yaml).expect("valid");
    let verbs: Vec<_> = rules.iter().map(|r| r.fault.verb()).collect();
    assert_eq!(
        verbs,
        [
            "refuse",
            "refuse",
            "respond",
            "delay_request",
            "delay_response",
            "drop_response",
            "reset_mid_response",
            "hang",
            "duplicate"
        ]
    );
    assert_eq!(
        rules[2].matcher.method.as_ref().map(|m| m.as_str()),
        Some("POST")
    );
    assert_eq!(
        rules[5].matcher.header.as_ref().map(|h| h.name.as_str()),
        Some("x-idemspec-step")
    );
    assert_eq!(
        rules[3].fault,
        Fault::DelayRequest {
            duration: std::time::Duration::from_millis(250)
        }
    );
    assert_eq!(rules[8].times.map(Count::get), Some(3));
}

#[test]
fn bare_verb_parses() {
    let rules =
        rules("- name: a\n  fault: refuse\n- name: b\n  fault: drop_response\n").expect("valid");
    assert_eq!(rules[0].fault, Fault::Refuse { reset: false });
    assert_eq!(rules[1].fault, Fault::DropResponse {});
}

#[test]
fn rules_round_trip_through_json() {
    let yaml = "- name: a\n  match: {path_prefix: /v1/, nth: 1}\n  fault: {delay_response: {duration: 1s 500ms}}\n  times: 1\n";
    let parsed = rules(yaml).expect("valid");
    let json = serde_json::to_string(&parsed).expect("serialises");
    let back: Vec<Rule> = serde_json::from_str(&json).expect("reads back");
    assert_eq!(parsed, back, "{json}");
}

#[test]
fn nth_zero_is_located() {
    let e = err("- name: a\n  match: {nth: 0}\n  fault: refuse\n");
    assert!(e.starts_with("faults.yaml:2:"), "{e}");
    assert!(e.contains("at least 1"), "{e}");
}

#[test]
fn probability_out_of_range_is_located() {
    let e = err("- name: a\n  match:\n    probability: 1.5\n    seed: 1\n  fault: refuse\n");
    assert!(e.starts_with("faults.yaml:3:"), "{e}");
    assert!(e.contains("0 < p <= 1"), "{e}");
}

#[test]
fn probability_without_seed_is_rejected() {
    let e = err("- name: a\n  match:\n    probability: 0.5\n  fault: refuse\n");
    assert!(e.contains("explicit `seed`"), "{e}");
    assert!(!e.starts_with("faults.yaml:0:"), "{e}");
}

#[test]
fn two_path_matchers_are_rejected() {
    let e = err("- name: a\n  match: {path: /a, path_prefix: /b}\n  fault: refuse\n");
    assert!(e.contains("at most one of"), "{e}");
}

#[test]
fn unknown_fault_and_unknown_option_are_located() {
    let e = err("- name: a\n  fault: {explode: {}}\n");
    assert!(e.starts_with("faults.yaml:2:"), "{e}");
    let e = err("- name: a\n  fault: {refuse: {rest: true}}\n");
    assert!(e.starts_with("faults.yaml:2:"), "{e}");
    assert!(e.contains("rest"), "{e}");
}

#[test]
fn duration_without_unit_is_located() {
    let e = err("- name: a\n  fault:\n    delay_request: {duration: \"250\"}\n");
    assert!(e.starts_with("faults.yaml:3:"), "{e}");
    assert!(e.contains("unit"), "{e}");
}

#[test]
fn status_out_of_range_is_located() {
    let e = err("- name: a\n  fault:\n    respond:\n      status: 700\n");
    assert!(e.starts_with("faults.yaml:4:"), "{e}");
}

#[test]
fn respond_headers_parse_and_what_http_cannot_send_is_located() {
    let ok = rules("- name: a\n  fault: {respond: {status: 429, headers: {Retry-After: \"1\"}}}\n")
        .expect("valid");
    let Fault::Respond { headers, .. } = &ok[0].fault else {
        panic!("respond");
    };
    assert_eq!(headers.iter().collect::<Vec<_>>(), [("Retry-After", "1")]);
    let e = err("- name: a\n  fault:\n    respond: {status: 503, headers: {\"Bad Name\": x}}\n");
    assert!(e.starts_with("faults.yaml:3:"), "{e}");
    assert!(e.contains("not a valid header name"), "{e}");
    let e = err("- name: a\n  fault:\n    respond: {status: 503, headers: {Content-Type: x}}\n");
    assert!(e.contains("give the body's type as `content_type`"), "{e}");
    let e = err("- name: a\n  fault:\n    respond: {status: 503, headers: {Connection: close}}\n");
    assert!(e.contains("about the connection, not the response"), "{e}");
}

#[test]
fn times_zero_is_rejected() {
    let e = err("- name: a\n  fault: refuse\n  times: 0\n");
    assert!(e.starts_with("faults.yaml:3:"), "{e}");
}

#[test]
fn proxy_file_loads() {
    let f = ProxyFile::load(
        "p.yaml",
        "version: 1\nlisten: 127.0.0.1:0\nupstream: http://127.0.0.1:8080\nrules:\n  - name: a\n    fault: refuse\n",
    )
    .expect("valid");
    assert_eq!(f.mode, Mode::Http);
    assert_eq!(f.rules.len(), 1);
}

#[test]
fn proxy_file_errors_are_located() {
    let e = ProxyFile::load("p.yaml", "version: 2\nupstream: http://a:1\n").unwrap_err();
    assert_eq!((e.line, e.column), (1, 10), "{e}");
    let e = ProxyFile::load("p.yaml", "version: 1\nupstream: http://a:1/api?x=1\n").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("query"), "{e}");
    let e = ProxyFile::load("p.yaml", "version: 1\nupstream: http://a:x/api\n").unwrap_err();
    assert!(e.message.contains("port"), "{e}");
    let default_port = ProxyFile::load("p.yaml", "version: 1\nupstream: https://a/api\n");
    assert!(default_port.is_ok(), "the scheme's port: {default_port:?}");
    let ok = ProxyFile::load("p.yaml", "version: 1\nupstream: http://a:1/api/\n")
        .expect("a path prefix is fine");
    assert_eq!(ok.upstream, "http://a:1/api/");
    let e = ProxyFile::load(
        "p.yaml",
        "version: 1\nmode: tcp\nupstream: a:1\nrules:\n  - name: a\n    fault: refuse\n",
    )
    .unwrap_err();
    assert_eq!(e.line, 5, "{e}");
    let e = ProxyFile::load("p.yaml", "version: 1\nupstream: a:1\n").unwrap_err();
    assert!(e.message.contains("http://"), "{e}");
}

#[test]
fn duplicate_rule_names_in_a_proxy_file_are_located() {
    let e = ProxyFile::load(
        "p.yaml",
        "version: 1\nupstream: http://a:1\nrules:\n  - name: a\n    fault: refuse\n  - name: b\n    fault: refuse\n  - name: a\n    fault: drop_response\n",
    )
    .unwrap_err();
    assert_eq!((e.line, e.column), (8, 5), "{e}");
    assert!(
        e.message.contains("`a`") && e.message.contains("rule 1"),
        "{e}"
    );
    let e = ProxyFile::load(
        "p.yaml",
        "version: 1\nmode: tcp\nupstream: a:1\ntcp_rules:\n  - name: t\n    fault: refuse\n  - name: t\n    fault: blackhole\n",
    )
    .unwrap_err();
    assert_eq!(e.line, 7, "{e}");
}

#[test]
fn rules_built_in_code_get_the_same_checks() {
    let mut rule = Rule::new("r", Match::default(), Fault::Refuse { reset: false });
    assert_eq!(rule.check(), Ok(()));
    rule.name = String::new();
    assert!(rule.check().unwrap_err().contains("empty"));
    rule.name = "r".into();
    rule.fault = Fault::Respond {
        status: Status::new(503).expect("a final status"),
        body: String::new(),
        content_type: Some("text/plain\r\nx-injected: 1".into()),
        headers: Default::default(),
    };
    assert!(rule.check().unwrap_err().contains("media type"));
    assert_eq!(Status::new(101), None, "an interim status is no answer");
    assert_eq!(duplicate_name(["a", "b", "a", "b"]), Some((2, "a")));
    assert_eq!(duplicate_name(["a", "b"]), None);
}

#[test]
fn tcp_rules_parse() {
    let f = ProxyFile::load(
        "p.yaml",
        "version: 1\nmode: tcp\nupstream: 127.0.0.1:5432\ntcp_rules:\n  - name: slow\n    fault: {latency: {duration: 20ms, jitter: 5ms, direction: downstream}}\n  - name: cut\n    match: {nth: 3}\n    fault: {close_after: {bytes: 100, direction: upstream, reset: true}}\n  - name: hole\n    fault: blackhole\n",
    )
    .expect("valid");
    assert_eq!(f.tcp_rules.len(), 3);
    assert_eq!(f.tcp_rules[2].fault, TcpFault::Blackhole {});
}

#[test]
fn example_proxy_files_load() {
    for (name, text) in [
        (
            "proxy-lost-response.yaml",
            include_str!("../../examples/proxy-lost-response.yaml"),
        ),
        (
            "proxy-flaky-gateway.yaml",
            include_str!("../../examples/proxy-flaky-gateway.yaml"),
        ),
        (
            "proxy-tcp-database.yaml",
            include_str!("../../examples/proxy-tcp-database.yaml"),
        ),
    ] {
        let file = ProxyFile::load(name, text).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !file.rules.is_empty() || !file.tcp_rules.is_empty(),
            "{name}"
        );
    }
}

/// Every kind of rule error, rendered as the user sees it.
#[test]
fn error_messages_snapshot() {
    let cases = [
        (
            "nth-zero",
            "- name: a\n  match: {nth: 0}\n  fault: refuse\n",
        ),
        (
            "probability-range",
            "- name: a\n  match: {probability: 2, seed: 1}\n  fault: refuse\n",
        ),
        (
            "probability-without-seed",
            "- name: a\n  match: {probability: 0.5}\n  fault: refuse\n",
        ),
        (
            "two-paths",
            "- name: a\n  match: {path: /a, path_glob: /b/*}\n  fault: refuse\n",
        ),
        (
            "bad-glob",
            "- name: a\n  match: {path_glob: \"/a/[\"}\n  fault: refuse\n",
        ),
        ("unknown-verb", "- name: a\n  fault: explode\n"),
        ("verb-needs-options", "- name: a\n  fault: respond\n"),
        (
            "unknown-option",
            "- name: a\n  fault: {hang: {forwrd: true}}\n",
        ),
        (
            "duration-unit",
            "- name: a\n  fault: {delay_request: {duration: 250}}\n",
        ),
        (
            "unknown-match-field",
            "- name: a\n  match: {methd: POST}\n  fault: refuse\n",
        ),
        (
            "bad-method",
            "- name: a\n  match: {method: \"PO ST\"}\n  fault: refuse\n",
        ),
        ("missing-fault", "- name: a\n  match: {path: /a}\n"),
        (
            "content-type-not-a-media-type",
            "- name: a\n  fault: {respond: {status: 502, content_type: \"a\\nb\"}}\n",
        ),
        (
            "interim-status",
            "- name: a\n  fault: {respond: {status: 101}}\n",
        ),
        ("empty-name", "- name: \"\"\n  fault: refuse\n"),
        (
            "control-character-in-name",
            "- name: \"a\\tb\"\n  fault: refuse\n",
        ),
    ];
    let rendered: Vec<String> = cases
        .iter()
        .map(|(name, yaml)| format!("## {name}\n{}\n", err(yaml)))
        .collect();
    insta::assert_snapshot!(rendered.join("\n"));
}
