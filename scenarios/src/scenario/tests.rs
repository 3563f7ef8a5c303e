//! Tests of the scenario loader: located errors, the key and step vocabulary, and the rules a
//! scenario's steps and assertions must keep.

use super::*;

const LOST: &str = r#"version: 1
id: lost-response
title: t
level: MUST
reference: "article"
steps:
  - {name: first, op: create, key: K1}
  - {name: retry, op: create, key: K1, retry: {every: 100ms, within: in_flight_ttl + 2s}}
assert:
  - status: {step: retry, in: [2xx, 409, mismatch]}
  - created: {equals: 1}
"#;

#[test]
fn loads_a_scenario() {
    let s = Scenario::load("s.yaml", LOST).unwrap();
    assert_eq!(s.steps.len(), 2);
    assert_eq!(
        s.step("retry").unwrap().key,
        Some(KeySpec::Named("K1".into()))
    );
    let within = s.step("retry").unwrap().retry.as_ref().unwrap().within;
    assert!(within.plus_in_flight_ttl);
    assert_eq!(s.assertions[0].value.steps(), vec!["retry"]);
}

#[test]
fn a_time_limit_adds_the_ttl_the_declared_wait_and_a_duration() {
    let within = |text: &str| serde_saphyr::from_str::<Within>(&format!("{text:?}"));
    let w = within("in_flight_ttl + in_flight_wait + 5s").expect("parses");
    assert!(w.plus_in_flight_ttl && w.plus_in_flight_wait);
    assert_eq!(w.extra, std::time::Duration::from_secs(5));
    let w = within("in_flight_ttl").expect("parses");
    assert!(w.plus_in_flight_ttl && !w.plus_in_flight_wait && w.extra.is_zero());
    for (bad, said) in [
        ("in_flight_wait", "leaves no time"),
        ("in_flight_ttl + in_flight_ttl", "`in_flight_ttl` twice"),
        ("in_flight_ttl + soon", "`soon`"),
    ] {
        let err = within(bad).expect_err(bad).to_string();
        assert!(err.contains(said), "{bad}: {err}");
    }
}

#[test]
fn unknown_assertion_is_located() {
    let text = LOST.replace("created: {equals: 1}", "creatd: {equals: 1}");
    let err = Scenario::load("s.yaml", &text).unwrap_err();
    assert_eq!((err.line, err.column), (11, 5), "{err}");
    assert!(err.message.contains("unknown field `creatd`"), "{err}");
}

#[test]
fn dangling_step_reference_is_located() {
    let text = LOST.replace("step: retry, in", "step: retri, in");
    let err = Scenario::load("s.yaml", &text).unwrap_err();
    assert_eq!(err.line, 10, "{err}");
    assert!(err.message.contains("`retri`"), "{err}");
}

#[test]
fn bad_key_and_status_are_located() {
    let err = Scenario::load("s.yaml", &LOST.replace("key: K1}", "key: \"a b\"}")).unwrap_err();
    assert_eq!(err.line, 7, "{err}");
    let err = Scenario::load("s.yaml", &LOST.replace("409, mismatch", "409, 6xx")).unwrap_err();
    assert_eq!(err.line, 10, "{err}");
    assert!(err.message.contains("invalid status `6xx`"), "{err}");
}

#[test]
fn key_specs_parse() {
    assert_eq!(KeySpec::parse("long:300").unwrap(), KeySpec::Long(300));
    assert_eq!(
        KeySpec::parse("sf:K2").unwrap(),
        KeySpec::SfNamed("K2".into())
    );
    assert_eq!(
        KeySpec::parse("raw:ключ").unwrap(),
        KeySpec::Raw("ключ".into())
    );
    assert_eq!(KeySpec::parse("none").unwrap(), KeySpec::None);
    assert_eq!(
        KeySpec::parse("after_5xx:K1").unwrap(),
        KeySpec::AfterFailure("K1".into())
    );
    assert!(KeySpec::parse("long:x").is_err());
    assert_eq!(
        KeySpec::parse("long:65536").unwrap(),
        KeySpec::Long(KeySpec::LONGEST)
    );
    assert!(KeySpec::parse("long:+5").is_err());
    for too_long in [
        "long:65537",
        "long:100000000",
        "long:0",
        "long:99999999999999999999999",
    ] {
        let err = KeySpec::parse(too_long).unwrap_err();
        assert!(err.contains("N must be 1 to 65536 characters"), "{err}");
    }
}

#[test]
fn every_duration_is_bounded_with_a_located_error() {
    let err = Scenario::load(
        "s.yaml",
        &LOST.replace("{name: first, op: create, key: K1}", "{wait: 10years}"),
    )
    .unwrap_err();
    assert_eq!(err.line, 7, "{err}");
    assert!(err.message.contains("limit of 30 days"), "{err}");
    let err =
        Scenario::load("s.yaml", &LOST.replace("key: K1}", "key: K1, timeout: 2h}")).unwrap_err();
    assert!(
        err.message
            .contains("`timeout: 2h` is longer than the limit of 1h"),
        "{err}"
    );
    let delayed = LOST.replace(
        "steps:",
        "faults:\n  - {name: slow, fault: {delay_request: {duration: 3650d}}}\nsteps:",
    );
    let err = Scenario::load("s.yaml", &delayed).unwrap_err();
    assert!(err.message.contains("fault rule `slow`"), "{err}");
    assert!(err.message.contains("limit of 1h"), "{err}");
    let hot = LOST.replace("retry: {every: 100ms", "retry: {every: 0ms");
    let err = Scenario::load("s.yaml", &hot).unwrap_err();
    assert_eq!((err.line, err.column), (8, 5), "{err}");
    assert!(
        err.message
            .contains("`retry.every: 0s` is shorter than the least interval, 10ms"),
        "{err}"
    );
    let ok = LOST.replace("retry: {every: 100ms", "retry: {every: 10ms");
    Scenario::load("s.yaml", &ok).unwrap();
    let none = LOST.replace("within: in_flight_ttl + 2s", "within: 0s");
    let err = Scenario::load("s.yaml", &none).unwrap_err();
    assert_eq!(err.line, 8, "{err}");
    assert!(err.message.contains("`0s` leaves no time"), "{err}");
    let ttl_only = LOST.replace("within: in_flight_ttl + 2s", "within: in_flight_ttl");
    Scenario::load("s.yaml", &ttl_only).unwrap();
}

#[test]
fn every_validation_error_of_a_file_is_reported() {
    let text = LOST
        .replace("id: lost-response", "id: Lost_Response")
        .replace("step: retry, in", "step: retri, in");
    let err = Scenario::load("s.yaml", &text).unwrap_err();
    let lines: Vec<u64> = err.each().map(|e| e.line).collect();
    assert_eq!(lines, [2, 10], "{err}");
    assert!(err.to_string().contains("kebab-case") && err.to_string().contains("`retri`"));
}

#[test]
fn two_faults_of_one_name_are_rejected_at_the_second() {
    let text = LOST.replace(
        "steps:",
        "faults:\n  - {name: lose, fault: {drop_response: {}}}\n  - {name: lose, fault: refuse}\nsteps:",
    );
    let err = Scenario::load("s.yaml", &text).unwrap_err();
    assert_eq!((err.line, err.column), (8, 5), "{err}");
    assert!(
        err.message.contains("rule 2 is named `lose` like rule 1"),
        "{err}"
    );
}

#[test]
fn storm_keys_are_bounded_by_the_clients() {
    const STORM: &str =
        "version: 1\nid: s\ntitle: t\nlevel: MUST\nreference: r\nprocedure: retry-storm\n";
    let ok = Scenario::load(
        "s.yaml",
        &format!("{STORM}parameters: {{clients: 60, keys: 6}}\n"),
    )
    .expect("60 clients on 6 keys load");
    assert_eq!(ok.parameters.keys.map(|k| k.value), Some(6));
    let err = Scenario::load(
        "s.yaml",
        &format!("{STORM}parameters: {{clients: 6, keys: 7}}\n"),
    )
    .unwrap_err();
    assert!(
        err.message
            .contains("keys must be 1 to parameters.clients (6), not 7"),
        "{err}"
    );
    // At the value, on the `parameters:` line, not at the scenario's id.
    assert_eq!((err.line, err.column), (7, 32), "{err}");
    let err =
        Scenario::load("s.yaml", &format!("{STORM}parameters: {{within: 0s}}\n")).unwrap_err();
    assert!(err.message.contains("within must be positive"), "{err}");
    assert_eq!(err.line, 7, "{err}");
    let err = Scenario::load("s.yaml", &format!("{STORM}parameters: {{keys: 0}}\n")).unwrap_err();
    assert!(
        err.message.contains("keys needs parameters.clients"),
        "{err}"
    );
}

#[test]
fn a_check_runs_alone_only_for_as_long_as_its_reason_lasts() {
    let all = |_: HookName| true;
    let plain = Scenario::load("s.yaml", LOST).unwrap();
    assert_eq!(plain.isolation(all), Isolation::Shared);
    let said =
        Scenario::load("s.yaml", &LOST.replace("steps:", "exclusive: true\nsteps:")).unwrap();
    assert_eq!(said.isolation(all), Isolation::Alone(AloneReason::Declared));
    let hooked = LOST.replace(
        "steps:",
        "requires: [fails_once]\nsteps:\n  - {name: arm, hook: fail_next}",
    );
    let hooked = Scenario::load("s.yaml", &hooked).unwrap();
    assert_eq!(
        hooked.isolation(all),
        Isolation::Alone(AloneReason::FailNext)
    );
    // Without the hook, the `fails_once` variant fails only the check's own request.
    assert_eq!(hooked.isolation(|_| false), Isolation::Shared);
    let counted = LOST
        .replace("steps:", "requires: [side_effects]\nsteps:")
        .replace("  - created: {equals: 1}", "  - side_effects: {equals: 1}");
    assert_eq!(
        Scenario::load("s.yaml", &counted).unwrap().isolation(all),
        Isolation::Alone(AloneReason::SideEffects)
    );
    // A crash and a restart: alone through the restart (the third step), then beside the others.
    let crashed = LOST.replace(
        "steps:",
        "requires: [abandon]\nsteps:\n  - {hook: crash}\n  - {name: cut, op: create, key: K2}\n  - {hook: restart}",
    );
    let crashed = Scenario::load("s.yaml", &crashed).unwrap();
    assert_eq!(crashed.isolation(all), Isolation::AloneThrough(2));
    assert_eq!(crashed.isolation(|_| false), Isolation::Shared);
    let down = LOST.replace("steps:", "requires: [abandon]\nsteps:\n  - {hook: crash}");
    assert_eq!(
        Scenario::load("s.yaml", &down).unwrap().isolation(all),
        Isolation::Alone(AloneReason::CrashWithoutRestart)
    );
}

#[test]
fn the_fidelity_owner_is_also_read_under_its_older_name() {
    for field in ["fidelity_judged_by", "headers_judged_by"] {
        let text = LOST.replace(
            "  - created: {equals: 1}",
            &format!("  - same_response: {{step: retry, as: first, {field}: replay-fidelity}}"),
        );
        let s = Scenario::load("s.yaml", &text).unwrap();
        let AssertKind::SameResponse(a) = s.assertions[1].value.kind() else {
            panic!("a same_response assertion");
        };
        assert_eq!(
            a.fidelity_judged_by.as_deref(),
            Some("replay-fidelity"),
            "{field}"
        );
    }
    let text = LOST.replace(
        "  - created: {equals: 1}",
        "  - consistent: {step: retry, owner: replay-fidelity}",
    );
    let err = Scenario::load("s.yaml", &text).unwrap_err().to_string();
    assert!(err.contains("fidelity_judged_by"), "{err}");
}

#[test]
fn lock_released_needs_a_released_retry_and_twins_keep_their_names() {
    const STUCK: &str = r#"version: 1
id: stuck
title: t
level: MUST
reference: "article"
steps:
  - {name: doomed, op: create, key: K1, timeout: 2s}
  - {name: retry, op: create, key: K1, retry: {every: 250ms, within: in_flight_ttl + 10s, until: [released]}}
assert:
  - lock_released: {step: retry, since: doomed, within: in_flight_ttl + 5s}
"#;
    Scenario::load("s.yaml", STUCK).expect("a released retry loads");
    let err = Scenario::load(
        "s.yaml",
        &STUCK.replace("until: [released]", "until: [2xx]"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("lock_released judges step `retry`, which needs"),
        "{err}"
    );
    let text = STUCK.replace(
        "assert:",
        "  - {name: retry-twin, op: create, key: K2}\nassert:",
    );
    let err = Scenario::load("s.yaml", &text).unwrap_err().to_string();
    assert!(err.contains("step name `retry-twin` is taken"), "{err}");
}

#[test]
fn a_wait_is_a_pause_or_until_an_earlier_request_was_sent() {
    let with_wait = |wait: &str| {
        LOST.replace(
            "  - {name: retry,",
            &format!("  - {{wait: {wait}}}\n  - {{name: retry,"),
        )
    };
    let s = Scenario::load("s.yaml", &with_wait("200ms")).unwrap();
    assert_eq!(
        s.steps[1].value.wait,
        Some(Wait::For(crate::value::HumanDuration(
            std::time::Duration::from_millis(200)
        )))
    );
    let s = Scenario::load("s.yaml", &with_wait("{sent: first, then: 50ms}")).unwrap();
    assert_eq!(
        s.steps[1].value.wait,
        Some(Wait::Sent {
            sent: "first".into(),
            then: Some(crate::value::HumanDuration(
                std::time::Duration::from_millis(50)
            )),
        })
    );
    for (wait, said) in [
        (
            "{sent: later}",
            "`wait: {sent: later}` does not name an earlier step",
        ),
        (
            "{sent: first, then: 2h}",
            "`wait: 2h` is longer than the limit of 1h",
        ),
        ("{sent: first, after: 1s}", "unknown field `after`"),
        (
            "[first]",
            "a duration such as `200ms`, or `{sent: <earlier step>",
        ),
        ("soon", "invalid duration `soon`"),
    ] {
        let err = Scenario::load("s.yaml", &with_wait(wait)).unwrap_err();
        assert_eq!(err.line, 8, "{wait}: {err}");
        assert!(err.message.contains(said), "{wait}: {err}");
    }
}

#[test]
fn a_distinct_problems_entry_is_a_step_or_a_list_of_steps() {
    let text = LOST.replace(
        "  - created: {equals: 1}",
        "  - distinct_problems: {steps: [[first], [retry]]}",
    );
    let s = Scenario::load("s.yaml", &text).unwrap();
    assert_eq!(s.assertions[1].value.steps(), vec!["first", "retry"]);
    for (entry, said) in [
        ("[first]", "at least two entries"),
        ("[[first, retry]]", "at least two entries"),
        ("[first, first]", "names step `first` twice"),
        ("[first, [retry, first]]", "names step `first` twice"),
        ("[first, [retry, nope]]", "nope"),
        ("[first, []]", "a list of steps needs at least one step"),
        ("[first, {a: b}]", "a step name, or a list of step names"),
    ] {
        let text = LOST.replace(
            "  - created: {equals: 1}",
            &format!("  - distinct_problems: {{steps: {entry}}}"),
        );
        let err = Scenario::load("s.yaml", &text).unwrap_err();
        assert!(err.message.contains(said), "{entry}: {err}");
    }
}

#[test]
fn wait_and_hook_steps_take_no_request_fields_and_are_not_judged() {
    let text = LOST.replace(
        "  - {name: retry,",
        "  - {name: pause, wait: 10ms}\n  - {wait: {sent: pause}}\n  - {name: retry,",
    );
    let err = Scenario::load("s.yaml", &text).unwrap_err();
    assert!(
        err.message
            .contains("names a wait or a hook, which sends nothing"),
        "{err}"
    );
    for extra in [
        "concurrency: 5",
        "key: K9",
        "via: direct",
        "background: true",
        "principal: B",
    ] {
        let text = LOST.replace(
            "  - {name: retry,",
            &format!("  - {{wait: 10ms, {extra}}}\n  - {{name: retry,"),
        );
        let err = Scenario::load("s.yaml", &text).unwrap_err();
        assert!(
            err.message.contains("belongs to a request step"),
            "{extra}: {err}"
        );
    }
    let text = LOST
        .replace(
            "  - {name: retry,",
            "  - {name: pause, wait: 10ms}\n  - {name: retry,",
        )
        .replace(
            "  - created: {equals: 1}",
            "  - status: {step: pause, in: [2xx]}",
        );
    let err = Scenario::load("s.yaml", &text).unwrap_err();
    assert!(
        err.message
            .contains("a wait or a hook, which sends no request"),
        "{err}"
    );
}
