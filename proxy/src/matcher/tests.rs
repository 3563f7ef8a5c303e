//! Property tests for rule matching: nth, times, seeded probability, path conditions.

use super::*;
use idemspec_scenarios::rules::{Count, Fault, Probability};
use proptest::prelude::*;

/// No idempotency key: the requests of these tests carry none unless one says so.
const KEY: Option<&str> = None;

fn parts(method: &str, path: &str) -> Parts {
    http::Request::builder()
        .method(method)
        .uri(path)
        .body(())
        .expect("valid request")
        .into_parts()
        .0
}

fn rule(matcher: Match, times: Option<u64>) -> Rule {
    let mut r = Rule::new("r", matcher, Fault::DropResponse {});
    r.times = times.and_then(Count::new);
    r
}

proptest! {
    #[test]
    fn nth_selects_exactly_the_nth_request(nth in 1u64..50, total in 0u64..60) {
        let set = RuleSet::compile(vec![rule(Match { nth: Count::new(nth), ..Match::default() }, None)]).unwrap();
        let hits: Vec<u64> = (1..=total).filter(|_| set.select(&parts("POST", "/x"), KEY).is_some()).collect();
        let expected: Vec<u64> = if nth <= total { vec![nth] } else { vec![] };
        prop_assert_eq!(hits, expected);
    }

    #[test]
    fn times_bounds_applications(times in 1u64..20, total in 0u64..40) {
        let set = RuleSet::compile(vec![rule(Match::default(), Some(times))]).unwrap();
        let hits = (0..total).filter(|_| set.select(&parts("GET", "/"), KEY).is_some()).count() as u64;
        prop_assert_eq!(hits, times.min(total));
    }

    #[test]
    fn seeded_probability_replays_exactly(seed in any::<u64>(), p in 0.01f64..1.0) {
        let make = || RuleSet::compile(vec![rule(Match {
            probability: Probability::new(p),
            seed: Some(seed),
            ..Match::default()
        }, None)]).unwrap();
        let run = |set: RuleSet| (0..64).map(|_| set.select(&parts("GET", "/"), KEY).is_some()).collect::<Vec<_>>();
        let first = run(make());
        prop_assert_eq!(&first, &run(make()));
        // reset() restarts the same sequence.
        let set = make();
        let _ = run_ref(&set);
        set.rules[0].gate.reset();
        prop_assert_eq!(&first, &run_ref(&set));
    }

    #[test]
    fn non_matching_requests_do_not_count(nth in 1u64..10, noise in 0usize..10) {
        let set = RuleSet::compile(vec![rule(Match { path: Some("/a".into()), nth: Count::new(nth), ..Match::default() }, None)]).unwrap();
        let mut hit_at = None;
        for i in 1..=nth {
            for _ in 0..noise {
                prop_assert!(set.select(&parts("GET", "/b"), KEY).is_none());
            }
            if set.select(&parts("GET", "/a"), KEY).is_some() {
                hit_at = Some(i);
            }
        }
        prop_assert_eq!(hit_at, Some(nth));
    }

    #[test]
    fn prefix_and_exact_paths(path in "/[a-z]{0,4}(/[a-z]{0,4}){0,3}", prefix in "/[a-z]{0,3}") {
        let set = RuleSet::compile(vec![rule(Match { path_prefix: Some(prefix.clone()), ..Match::default() }, None)]).unwrap();
        prop_assert_eq!(set.select(&parts("GET", &path), KEY).is_some(), path.starts_with(&prefix));
        let set = RuleSet::compile(vec![rule(Match { path: Some(prefix.clone()), ..Match::default() }, None)]).unwrap();
        prop_assert_eq!(set.select(&parts("GET", &path), KEY).is_some(), path == prefix);
    }
}

fn run_ref(set: &RuleSet) -> Vec<bool> {
    (0..64)
        .map(|_| set.select(&parts("GET", "/"), KEY).is_some())
        .collect()
}

#[test]
fn first_applicable_rule_wins_and_later_rules_still_count() {
    let set = RuleSet::compile(vec![
        Rule::new(
            "first",
            Match {
                nth: Count::new(2),
                ..Match::default()
            },
            Fault::Refuse { reset: false },
        ),
        Rule::new("second", Match::default(), Fault::DropResponse {}),
    ])
    .unwrap();
    let names: Vec<String> = (0..3)
        .map(|_| {
            set.select(&parts("GET", "/"), KEY)
                .unwrap()
                .rule
                .name
                .clone()
        })
        .collect();
    assert_eq!(names, ["second", "first", "second"]);
}

#[test]
fn glob_and_header_and_key() {
    use idemspec_scenarios::rules::HeaderMatch;
    let set = RuleSet::compile(vec![Rule::new(
        "g",
        Match {
            path_glob: Some("/v1/workers/*/reboot".into()),
            header: Some(HeaderMatch {
                name: "x-idemspec-step".into(),
                equals: Some("s1".into()),
            }),
            idempotency_key: Some("K1".into()),
            ..Match::default()
        },
        Fault::DropResponse {},
    )])
    .unwrap();
    let mut p = parts("POST", "/v1/workers/abc/reboot");
    assert!(set.select(&p, Some("K1")).is_none(), "headers missing");
    p.headers.insert("x-idemspec-step", "s1".parse().unwrap());
    assert!(set.select(&p, Some("K1")).is_some());
    assert!(
        set.select(&p, Some("K2")).is_none(),
        "another key, wherever the proxy found it"
    );
    assert!(set.select(&p, KEY).is_none(), "no key");
    assert!(set.may_apply(&p, Some("K1")));
    let mut deeper = parts("POST", "/v1/workers/a/b/reboot");
    deeper.headers = p.headers.clone();
    assert!(
        set.select(&deeper, Some("K1")).is_none(),
        "* does not cross /"
    );
}
