//! The contract's tests: presets, resolution, what a resolved contract says of an answer, and
//! the contract's own rules.

use super::*;
use crate::profile::KeyAt;

#[test]
fn presets_differ_where_real_apis_do() {
    let article = ContractSpec::default().resolve();
    assert_eq!(
        (article.mismatch_status.clone(), article.replays_5xx),
        (vec![409], false)
    );
    let stripe = ContractSpec {
        preset: Preset::StripeV1,
        mismatch_status: Some(vec![422]),
        ..Default::default()
    }
    .resolve();
    assert_eq!(
        (stripe.mismatch_status, stripe.replays_5xx),
        (vec![422], true)
    );
}

#[test]
fn stores_lists_what_the_layer_keeps_and_replays_5xx_is_its_shorthand() {
    let spec = |text: &str| serde_saphyr::from_str::<ContractSpec>(text);
    let c = spec("stores: [200, 201]\n").expect("parses").resolve();
    assert!(c.stores_status(201) && !c.stores_status(204) && !c.stores_status(422));
    assert!(!c.replays_5xx);
    let article = ContractSpec::default().resolve();
    assert!(article.stores_status(422) && article.stores_status(204));
    // A class never takes in the answers that ask the client to try again; a code does.
    assert!(!article.stores_status(409) && !article.stores_status(429));
    assert!(!article.stores_status(500));
    let c = spec("stores: [2xx, 4xx, 409, \"500\"]\n")
        .expect("parses")
        .resolve();
    assert!(c.stores_status(409) && c.stores_status(500) && !c.stores_status(502));
    assert!(c.replays_5xx, "a 5xx code stores a 5xx");
    assert_eq!(
        serde_json::to_value(&c.stores).expect("serialises"),
        serde_json::json!(["2xx", "4xx", "409", "500"])
    );
    let c = spec("stores: 2xx\n").expect("one class").resolve();
    assert_eq!(c.stores, vec![StoredStatus::Class(2)]);
    // `replays_5xx` alone adds the 5xx class, or takes every 5xx out of the preset's.
    let c = spec("replays_5xx: true\n").expect("parses").resolve();
    assert!(c.stores_status(503));
    let c = spec("preset: stripe-v1\nreplays_5xx: false\n")
        .expect("parses")
        .resolve();
    assert!(!c.stores_status(500) && c.stores_status(201));
    for bad in [
        "stores: []",
        "stores: [3xx]",
        "stores: [301]",
        "stores: [2xx, 99]",
    ] {
        assert!(spec(bad).is_err(), "{bad}");
    }
    let both = spec("stores: [2xx]\nreplays_5xx: true\n").expect("parses");
    let problems = both.problems();
    assert!(
        problems.iter().any(|(_, m)| m.contains("disagree")),
        "{problems:?}"
    );
    assert!(spec("stores: [2xx, 5xx]\nreplays_5xx: true\n")
        .expect("parses")
        .problems()
        .is_empty());
}

#[test]
fn a_refusal_declared_by_its_body_is_known_by_status_and_body() {
    let spec: ContractSpec = serde_saphyr::from_str(
        "preset: stripe-v1\nmismatch_body: {at: $.error.type, is: idempotency_error}\n\
         in_flight_body: {at: $.code, is: [1, busy]}\n",
    )
    .expect("parses");
    let c = spec.resolve();
    let body = |v: serde_json::Value| Some(v);
    let reused = body(serde_json::json!({"error": {"type": "idempotency_error"}}));
    let unreadable = body(serde_json::json!({"error": {"type": "invalid_request_error"}}));
    assert!(c.refuses(Refusal::Mismatch, 400, reused.as_ref()));
    assert!(
        !c.refuses(Refusal::Mismatch, 400, unreadable.as_ref()),
        "another 400"
    );
    assert!(
        !c.refuses(Refusal::Mismatch, 400, None),
        "a body that is not JSON"
    );
    assert!(
        !c.refuses(Refusal::Mismatch, 409, reused.as_ref()),
        "another status"
    );
    let numbered = body(serde_json::json!({"code": 1}));
    assert!(
        c.refuses(Refusal::InFlight, 409, numbered.as_ref()),
        "a number as JSON writes it"
    );
    assert!(
        c.refuses(Refusal::MissingKey, 400, None),
        "status alone by default"
    );
    assert!(c.overridden.contains(&"mismatch_body"));
    for bad in [
        "mismatch_body: {at: $.x, is: []}",
        "mismatch_body: {at: '$[', is: a}",
        "mismatch_body: {at: $.x}",
    ] {
        assert!(
            serde_saphyr::from_str::<ContractSpec>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn the_cloud_presets_put_the_key_where_their_apis_document_it() {
    let aws = serde_saphyr::from_str::<ContractSpec>("preset: aws-client-token")
        .expect("parses")
        .resolve();
    assert_eq!(aws.key_at, KeyAt::Json("clientToken".into()));
    assert_eq!((aws.key_max_len, aws.key_required), (64, false));
    let body = serde_json::json!({"__type": "IdempotentParameterMismatch"});
    assert!(aws.refuses(Refusal::Mismatch, 400, Some(&body)));
    assert!(!aws.refuses(Refusal::Mismatch, 400, None), "any other 400");
    let gcp = serde_saphyr::from_str::<ContractSpec>("preset: gcp-request-id")
        .expect("parses")
        .resolve();
    assert_eq!(gcp.key_at, KeyAt::Query("requestId".into()));
    assert_eq!(gcp.key_form, KeyForm::Uuid);
    assert_eq!(gcp.mismatch_answer, MismatchAnswer::Original);
    assert!(gcp.replayed_header.is_empty(), "nothing marks a replay");
    // A header named in the profile still moves the key there.
    let moved =
        serde_saphyr::from_str::<ContractSpec>("preset: gcp-request-id\nheader: X-Request-Id")
            .expect("parses")
            .resolve();
    assert_eq!(moved.key_at, KeyAt::Header("X-Request-Id".into()));
    // A limit shorter than the UUIDs the checks send is refused, the preset's form included.
    for yaml in [
        "key_form: uuid\nkey_max_len: 30",
        "preset: gcp-request-id\nkey_max_len: 30",
    ] {
        let spec = serde_saphyr::from_str::<ContractSpec>(yaml).expect("parses");
        assert!(
            spec.problems()
                .iter()
                .any(|(_, m)| m.contains("36 characters")),
            "{yaml}"
        );
    }
}

/// A replay under the mismatch's own status is told by what the profile declares: the marker,
/// what its body says, or what it carries of the original (which the caller, who saw the
/// original, finds); with only the preset's marker to tell them apart, a warning says so.
#[test]
fn a_replay_under_a_refusal_status_is_told_by_what_the_profile_declares() {
    let spec = |text: &str| {
        serde_saphyr::from_str::<ContractSpec>(text)
            .expect("parses")
            .resolve()
    };
    let marker_only = spec("replay_status: 409\n");
    assert_eq!(marker_only.replays_under(409, false, None, None), None);
    assert_eq!(
        marker_only.replays_under(409, true, None, None),
        Some(ReplayBy::Marker)
    );
    assert!(marker_only
        .replay_marker_warning()
        .is_some_and(|w| w.contains("only the article preset's replay marker")));
    let by_body = spec("replayed_header: \"\"\nreplay_status: 409\nreplay_body: original\n");
    assert_eq!(by_body.replay_marker_warning(), None);
    assert_eq!(by_body.replays_under(409, false, None, None), None);
    assert_eq!(
        by_body.replays_under(409, false, None, Some(ReplayBy::OriginalBody)),
        Some(ReplayBy::OriginalBody)
    );
    assert!(by_body.recognises_replay_by_content());
    let by_id = spec("replayed_header: \"\"\nreplay_status: 409\nreplay_id_at: $.error.id\n");
    assert!(by_id.recognises_replay_by_content() && by_id.ambiguous_replay().is_none());
    // A body the mismatch's declared condition recognises is the mismatch, even when it names
    // the original's id where a replay's id is read.
    let id_and_mismatch_body = spec(
        "replayed_header: \"\"\nreplay_status: 409\nreplay_id_at: $.resource_id\n\
         mismatch_body: {at: $.error, is: mismatch}\n",
    );
    let mismatch = serde_json::json!({"error": "mismatch", "resource_id": "wkr-1"});
    let exists = serde_json::json!({"error": "already_exists", "resource_id": "wkr-1"});
    assert_eq!(
        id_and_mismatch_body.replays_under(409, false, Some(&mismatch), Some(ReplayBy::OriginalId)),
        None
    );
    assert_eq!(
        id_and_mismatch_body.replays_under(409, false, Some(&exists), Some(ReplayBy::OriginalId)),
        Some(ReplayBy::OriginalId)
    );
    let neither = spec("replayed_header: \"\"\nreplay_status: 409\n");
    assert_eq!(neither.ambiguous_replay(), Some((409, "mismatch_status")));
    assert!(spec("replay_status: 200\n")
        .replay_marker_warning()
        .is_none());
}

#[test]
fn a_declared_wait_ends_in_its_own_status_or_the_in_flight_one() {
    let spec = |text: &str| serde_saphyr::from_str::<ContractSpec>(text);
    let c = spec("in_flight_wait: {up_to: 10s, then: [408]}\n")
        .expect("parses")
        .resolve();
    let wait = c.in_flight_wait.clone().expect("declared");
    assert_eq!(wait.up_to, std::time::Duration::from_secs(10));
    assert_eq!(wait.limit(), std::time::Duration::from_secs(11));
    assert!(c.wait_ran_out(408) && c.holds_in_flight(408, None));
    assert!(c.holds_in_flight(409, None) && !c.holds_in_flight(422, None));
    assert!(c.overridden.contains(&"in_flight_wait"));
    // Without `then`, a wait ends in the contract's in-flight status, the profile's if it gives one.
    let c = spec("in_flight_status: 423\nin_flight_wait: {up_to: 60s}\n")
        .expect("parses")
        .resolve();
    assert_eq!(c.in_flight_wait.expect("declared").then, vec![423]);
    assert!(ContractSpec::default().resolve().in_flight_wait.is_none());
    for (bad, said) in [
        (
            "in_flight_wait: {up_to: 121s}",
            "longer than the limit of 2m",
        ),
        ("in_flight_wait: {up_to: 0s}", "leave `in_flight_wait` out"),
        (
            "in_flight_wait: {up_to: 5s, then: [200]}",
            "200 is not a refusal",
        ),
        ("in_flight_wait: {then: [408]}", "up_to"),
        ("in_flight_wait: {up_to: 5s, or: 408}", "unknown field"),
    ] {
        let err = spec(bad).expect_err(bad).to_string();
        assert!(err.contains(said), "{bad}: {err}");
    }
    let shared =
        spec("in_flight_status: 423\nin_flight_wait: {up_to: 5s, then: 409}\n").expect("parses");
    assert!(
        shared
            .problems()
            .iter()
            .any(|(_, m)| m
                .contains("in_flight_wait.then 409 is also the contract's `mismatch_status`")),
        "{:?}",
        shared.problems()
    );
    assert!(spec("in_flight_wait: {up_to: 5s, then: 409}\n")
        .expect("parses")
        .problems()
        .is_empty());
}

/// A refusal's body and `Retry-After` while in flight are promised by the contract that asks
/// them: the article and the IETF draft a problem document, each vendor its own error object; the
/// article alone `Retry-After`. A profile overrides either, and is then named as who promises it.
#[test]
fn each_contract_promises_its_own_error_shape_and_retry_after() {
    let spec = |text: &str| {
        serde_saphyr::from_str::<ContractSpec>(text)
            .expect("parses")
            .resolve()
    };
    let stripe_error = serde_json::json!({"error": {"type": "invalid_request_error"}});
    let aws_error = serde_json::json!({"__type": "ValidationException", "message": "bad"});
    let gcp_error = serde_json::json!({"error": {"code": 400, "message": "bad"}});
    let problem = serde_json::json!({"type": "https://x.test/problems/bad-key"});
    for (preset, fits, misfits, retry_after) in [
        ("article", &problem, &stripe_error, true),
        ("ietf-draft", &problem, &aws_error, false),
        ("stripe-v1", &stripe_error, &problem, false),
        ("aws-client-token", &aws_error, &stripe_error, false),
        ("gcp-request-id", &gcp_error, &aws_error, false),
    ] {
        let c = spec(&format!("preset: {preset}"));
        let shape = &c.error_shape;
        assert!(
            shape.holds(Some("application/json"), Some(fits)),
            "{preset}"
        );
        assert!(
            !shape.holds(Some("application/json"), Some(misfits)),
            "{preset}"
        );
        assert!(!shape.holds(None, None), "{preset}: a refusal with no body");
        assert_eq!(
            c.promises(Promise::InFlightRetryAfter),
            retry_after,
            "{preset}"
        );
    }
    let stripe = spec("preset: stripe-v1");
    assert_eq!(
        stripe.unpromised(Promise::InFlightRetryAfter).as_deref(),
        Some(
            "`Retry-After` on an in-flight refusal is not looked for: the stripe-v1 contract does \
             not promise it (`in_flight_retry_after: false`)"
        )
    );
    assert_eq!(
        stripe.promised_by_profile(Promise::InFlightRetryAfter),
        None
    );
    let promised = spec("preset: stripe-v1\nin_flight_retry_after: true\nerror_shape: none\n");
    assert_eq!(promised.unpromised(Promise::InFlightRetryAfter), None);
    assert_eq!(
        promised
            .promised_by_profile(Promise::InFlightRetryAfter)
            .as_deref(),
        Some("the profile's `in_flight_retry_after: true` (over the stripe-v1 preset)")
    );
    assert_eq!(promised.error_shape, ErrorShape::Unpromised);
    assert!(promised.overridden.contains(&"error_shape"));
    let err = serde_saphyr::from_str::<ContractSpec>("error_shape: rfc9457\n").unwrap_err();
    assert!(err.to_string().contains("none of `problem`"), "{err}");
}

/// Each rule the contract breaks is located at the field to change, where the profile wrote it,
/// not at `contract:`: a conflict at the field that must give way (`replays_5xx` beside `stores`,
/// `key_at` beside `header`), a value that cannot hold at its own field.
#[test]
fn a_broken_rule_is_located_at_the_field_to_change() {
    for (yaml, field, said) in [
        (
            "stores: [2xx]\nreplays_5xx: true\n",
            "replays_5xx",
            "disagree",
        ),
        ("in_flight_ttl: 0s\n", "in_flight_ttl", "zero TTL"),
        (
            "header: X-Key\nkey_at: {query: k}\n",
            "key_at",
            "both say where",
        ),
        (
            "replay_body: {at: $.c, is: true}\nreplay_envelope: \"data[0]\"\n",
            "replay_envelope",
            "names no member",
        ),
        (
            "replayed_header: \"\"\nreplay_status: 409\n",
            "replay_status",
            "nothing tells",
        ),
        (
            "key_form: uuid\nkey_max_len: 30\n",
            "key_max_len",
            "36 characters",
        ),
        (
            "retention: 0s\n",
            "retention",
            "`while_resource_exists` where",
        ),
        (
            "replay_id_at: $.error.id\n",
            "replay_id_at",
            "declares none",
        ),
        ("replay_body: original\n", "replay_body", "declares neither"),
        (
            "replay_body: original\nreplay_envelope: data\nreplayed_header: X-Replayed\n",
            "replay_body",
            "declares neither",
        ),
    ] {
        let text = format!("preset: article\n{yaml}");
        let spec = serde_saphyr::from_str::<ContractSpec>(&text).expect("parses");
        let problems = spec.problems();
        let (at, m) = problems
            .iter()
            .find(|(_, m)| m.contains(said))
            .unwrap_or_else(|| panic!("{yaml}: no problem saying {said:?}: {problems:?}"));
        let line = 1 + text
            .lines()
            .position(|l| l.starts_with(field))
            .expect("field");
        assert_eq!(at.map(|l| l.line()), Some(line as u64), "{yaml}: {m}");
    }
    // A replay_body that says what an envelope's body says is read without a replay_status, and
    // a window of time is a retention.
    for yaml in [
        "replay_body: {at: $.cached, is: true}\nreplay_envelope: data\n",
        "retention: 24h\nreplay_status: 409\nreplay_id_at: $.error.id\nreplayed_header: \"\"\n",
    ] {
        let spec = serde_saphyr::from_str::<ContractSpec>(yaml).expect("parses");
        assert!(spec.problems().is_empty(), "{yaml}: {:?}", spec.problems());
    }
}
