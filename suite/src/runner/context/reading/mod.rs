//! The contract's reading of what the target answered: what one answer is (`answer`: a success,
//! a replay and what told it one, a refusal, a crash ...), which statuses a symbolic pattern
//! (`mismatch`, `in_flight`, ...) stands for, whether an answer refused a request as in flight,
//! how long a limit relative to the in-flight TTL is, and how these read in a sentence. Steps,
//! assertions and procedures all read answers through these, so one contract means one thing.

mod answer;

pub(crate) use answer::{read, read_again, read_replay, Reading};

use std::time::Duration;

use idemspec_scenarios::profile::{BodyCondition, Contract, InFlightWait, Refusal, WAIT_SLACK};
use idemspec_scenarios::scenario::{StatusPattern, Within};

use crate::http_client::Exchange;

/// Whether the answer `e` got matches `pattern` under `contract` (never when no response arrived):
/// a refusal pattern (`mismatch`, `in_flight`, `missing_key`) by its declared statuses and, where
/// the profile declares what the refusal's body says, by the body too, so an unrelated 400 is
/// never taken for the mismatch.
///
/// A replay the contract declares under another status (`replay_status`) is a success: it matches
/// `2xx`, and no refusal. A 2xx naming a long-running operation that settled failed
/// ([`Exchange::operation_failed`]) is a failure: it matches `5xx` (and `released`), not `2xx`.
pub(crate) fn answer_matches(pattern: StatusPattern, e: &Exchange, contract: &Contract) -> bool {
    // A 2xx naming an operation that failed is a failure on the server's side: `5xx` reads it.
    if e.operation_failed.is_some() {
        match pattern {
            StatusPattern::Class(5) | StatusPattern::Released => return true,
            StatusPattern::Class(2) => return false,
            _ => {}
        }
    }
    if e.declared_replay.is_some() {
        match pattern {
            StatusPattern::Class(2) | StatusPattern::Released => return true,
            StatusPattern::Exact(_) | StatusPattern::Class(_) => {}
            _ => return false,
        }
    }
    e.status
        .is_some_and(|s| status_matches(pattern, s, e.json.as_deref(), contract))
}

/// Whether `status` with `body` (its JSON, if it parsed) matches `pattern` under `contract`.
pub(crate) fn status_matches(
    pattern: StatusPattern,
    status: u16,
    body: Option<&serde_json::Value>,
    contract: &Contract,
) -> bool {
    match pattern {
        StatusPattern::Exact(code) => code == status,
        StatusPattern::Class(c) => status / 100 == u16::from(c),
        StatusPattern::Mismatch => contract.refuses(Refusal::Mismatch, status, body),
        StatusPattern::InFlight => contract.holds_in_flight(status, body),
        StatusPattern::MissingKey => contract.refuses(Refusal::MissingKey, status, body),
        StatusPattern::EndpointMismatch => {
            !contract.per_endpoint && contract.refuses(Refusal::Mismatch, status, body)
        }
        StatusPattern::Released => {
            !contract.holds_in_flight(status, body) && !(500..600).contains(&status)
        }
    }
}

/// Whether `e` was answered as a request whose key was in flight under `contract`: refused as
/// in flight (a status in its `in_flight_status`, with the body it declares, if any), or held by
/// a declared wait that ran out (`in_flight_wait.then`).
pub(crate) fn refused(e: &Exchange, contract: &Contract) -> bool {
    matches!(
        read(e, contract),
        Reading::InFlightRefusal | Reading::Conflict | Reading::WaitRanOut
    )
}

/// Whether `e` was answered as a request that found its key in flight may be: with the first's
/// answer (a replay), an in-flight refusal, or a declared wait that ran out.
pub(crate) fn answered_as_in_flight(e: &Exchange, contract: &Contract) -> bool {
    matches!(
        read(e, contract),
        Reading::Replay { .. } | Reading::InFlightRefusal | Reading::Conflict | Reading::WaitRanOut
    )
}

/// Under a declared wait (`in_flight_wait`), where `e` — a request that may have found its key in
/// flight — was held longer than the wait allows ([`InFlightWait::limit`]): answered as one whose
/// key was in flight ([`answered_as_in_flight`]) after more than that, or given more than that and
/// not answered at all. Says what it got and when, and the wait.
pub(crate) fn held_past_wait(e: &Exchange, contract: &Contract) -> Option<String> {
    let wait = contract.in_flight_wait.as_ref()?;
    let got = match e.status {
        None => format!(
            "got no answer in {:.1} s ({})",
            e.elapsed.as_secs_f64(),
            e.describe()
        ),
        Some(_) if answered_as_in_flight(e, contract) => {
            format!(
                "got {} after {:.1} s",
                e.describe(),
                e.elapsed.as_secs_f64()
            )
        }
        Some(_) => return None,
    };
    (e.elapsed > wait.limit()).then(|| {
        format!(
            "{got}, held past the declared wait (`contract.in_flight_wait`: {}) and {} s of slack",
            wait.describe(),
            WAIT_SLACK.as_secs()
        )
    })
}

/// A [`Within`] as a duration under `contract`; `bound` stands in for an in-flight TTL the contract
/// does not declare (the run's lockout bound), so a lockout is still measured, up to it. A declared
/// wait counts with its slack ([`InFlightWait::limit`]), nothing where none is declared.
pub(crate) fn within(w: &Within, contract: &Contract, bound: Duration) -> Duration {
    let ttl = if w.plus_in_flight_ttl {
        contract.in_flight_ttl.unwrap_or(bound)
    } else {
        Duration::ZERO
    };
    let wait = if w.plus_in_flight_wait {
        contract
            .in_flight_wait
            .as_ref()
            .map_or(Duration::ZERO, InFlightWait::limit)
    } else {
        Duration::ZERO
    };
    ttl + wait + w.extra
}

/// Where `status` met one of `patterns` only as a 5xx the contract declares for a refusal (its
/// `in_flight_status` or `mismatch_status`), a note saying so: the check accepts it, as the
/// contract says, but a 5xx tells a client the server failed, so it retries a request it should
/// stop or wait on (RFC 9110 §15.6). The note is shown whatever the verdict.
pub(crate) fn declared_5xx_note(
    patterns: &[StatusPattern],
    status: u16,
    contract: &Contract,
) -> Option<String> {
    if status < 500 {
        return None;
    }
    let (field, what) = if patterns.contains(&StatusPattern::InFlight)
        && contract.in_flight_status.contains(&status)
    {
        ("in_flight_status", "a request still in flight")
    } else if patterns.contains(&StatusPattern::Mismatch)
        && contract.mismatch_status.contains(&status)
    {
        ("mismatch_status", "a reused key with another request")
    } else {
        return None;
    };
    Some(format!(
        "the contract declares {status} for {what} (`contract.{field}`) and the API answered it: \
         accepted as declared, but a 5xx tells a client the server failed, so a client retries \
         what it should wait on or stop (RFC 9110 §15.6); a refusal is a 4xx"
    ))
}

/// ` where $.error.type is idempotency_error`, or nothing without a body condition.
fn with_body(condition: Option<&BodyCondition>) -> String {
    condition.map_or(String::new(), |c| format!(" where {}", c.describe()))
}

/// Patterns as a reader sees them (`2xx, 409`).
pub(crate) fn describe_patterns(patterns: &[StatusPattern], contract: &Contract) -> String {
    let list = |v: &[u16]| v.iter().map(u16::to_string).collect::<Vec<_>>().join("/");
    patterns
        .iter()
        .map(|p| match p {
            StatusPattern::Exact(c) => c.to_string(),
            StatusPattern::Class(2) if !contract.replay_status.is_empty() => format!(
                "2xx (or a replay under {}, as {} declares)",
                list(&contract.replay_status),
                contract.who_says("replay_status", &format!("{:?}", contract.replay_status))
            ),
            StatusPattern::Class(c) => format!("{c}xx"),
            StatusPattern::Mismatch => format!(
                "mismatch ({}{})",
                list(&contract.mismatch_status),
                with_body(contract.body_of(Refusal::Mismatch))
            ),
            StatusPattern::InFlight => format!(
                "in flight ({}{}{})",
                list(&contract.in_flight_status),
                with_body(contract.body_of(Refusal::InFlight)),
                contract
                    .in_flight_wait
                    .as_ref()
                    .map_or(String::new(), |w| format!(
                        ", or {} when a wait of up to {} runs out",
                        list(&w.then),
                        humantime::format_duration(w.up_to)
                    ))
            ),
            StatusPattern::MissingKey => format!(
                "missing key ({}{})",
                list(&contract.missing_key_status),
                with_body(contract.body_of(Refusal::MissingKey))
            ),
            StatusPattern::EndpointMismatch if contract.per_endpoint => format!(
                "no refusal: under {} the same key on another endpoint is an operation of its own",
                contract.who_says("per_endpoint", "true")
            ),
            StatusPattern::EndpointMismatch => format!(
                "mismatch ({}{}), which {} allows for a key reused on another endpoint",
                list(&contract.mismatch_status),
                with_body(contract.body_of(Refusal::Mismatch)),
                contract.who_says("per_endpoint", "false")
            ),
            StatusPattern::Released => {
                format!(
                    "released (not in flight {}, not 5xx)",
                    list(&contract.in_flight_status)
                )
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::profile::{ContractSpec, Preset};

    fn contract(preset: Preset) -> Contract {
        ContractSpec {
            preset,
            ..ContractSpec::default()
        }
        .resolve()
    }

    #[test]
    fn symbolic_statuses_follow_the_declared_contract() {
        let article = contract(Preset::Article);
        let ietf = contract(Preset::IetfDraft);
        assert!(status_matches(StatusPattern::Mismatch, 409, None, &article));
        assert!(!status_matches(StatusPattern::Mismatch, 409, None, &ietf));
        assert!(status_matches(StatusPattern::Mismatch, 422, None, &ietf));
        assert!(status_matches(StatusPattern::Class(2), 204, None, &ietf));
        assert!(!status_matches(StatusPattern::Class(2), 304, None, &ietf));
        assert_eq!(
            describe_patterns(&[StatusPattern::Class(2), StatusPattern::Mismatch], &ietf),
            "2xx, mismatch (422)"
        );
    }

    #[test]
    fn limits_relative_to_the_ttl_use_the_declared_ttl() {
        let mut c = contract(Preset::Article);
        c.in_flight_ttl = Some(Duration::from_secs(3));
        let mut w = Within {
            plus_in_flight_ttl: true,
            plus_in_flight_wait: false,
            extra: Duration::from_secs(5),
        };
        assert_eq!(
            within(&w, &c, Duration::from_secs(60)),
            Duration::from_secs(8)
        );
        c.in_flight_ttl = None;
        assert_eq!(
            within(&w, &c, Duration::from_secs(60)),
            Duration::from_secs(65)
        );
        // A declared wait adds itself and its slack; none declared adds nothing.
        w.plus_in_flight_wait = true;
        assert_eq!(
            within(&w, &c, Duration::from_secs(60)),
            Duration::from_secs(65)
        );
        c.in_flight_wait = Some(InFlightWait {
            up_to: Duration::from_secs(10),
            then: vec![408],
        });
        assert_eq!(
            within(&w, &c, Duration::from_secs(60)),
            Duration::from_secs(76)
        );
    }

    #[test]
    fn a_declared_wait_ends_in_an_answer_that_holds_the_key() {
        let mut c = contract(Preset::Article);
        assert!(!status_matches(StatusPattern::InFlight, 408, None, &c));
        c.in_flight_wait = Some(InFlightWait {
            up_to: Duration::from_secs(2),
            then: vec![408],
        });
        assert!(status_matches(StatusPattern::InFlight, 408, None, &c));
        assert!(!status_matches(StatusPattern::Released, 408, None, &c));
        assert!(status_matches(StatusPattern::InFlight, 409, None, &c));
        assert_eq!(
            describe_patterns(&[StatusPattern::InFlight], &c),
            "in flight (409, or 408 when a wait of up to 2s runs out)"
        );
    }
}
