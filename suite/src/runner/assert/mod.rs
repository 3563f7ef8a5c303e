//! Evaluates a scenario's assertions against what its steps observed, judged by the profile's
//! declared contract (never by one server's shape).

mod compare;
mod conflicts;
mod effects;
mod kinds;

pub(crate) use compare::{differences, same_response};
pub(crate) use kinds::evaluate;

use std::time::Duration;

use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{StatusPattern, Within};

/// Whether `status` matches `pattern` under `contract`.
pub(crate) fn status_matches(pattern: StatusPattern, status: u16, contract: &Contract) -> bool {
    match pattern {
        StatusPattern::Exact(code) => code == status,
        StatusPattern::Class(c) => status / 100 == u16::from(c),
        StatusPattern::Mismatch => contract.mismatch_status.contains(&status),
        StatusPattern::InFlight => contract.in_flight_status.contains(&status),
        StatusPattern::MissingKey => contract.missing_key_status.contains(&status),
    }
}

/// A [`Within`] as a duration under `contract` (an undeclared TTL counts as zero; scenarios that use
/// it require the `in_flight_ttl` capability).
pub(crate) fn within(w: &Within, contract: &Contract) -> Duration {
    let ttl = if w.plus_in_flight_ttl {
        contract.in_flight_ttl.unwrap_or_default()
    } else {
        Duration::ZERO
    };
    ttl + w.extra
}

/// Patterns as a reader sees them (`2xx, 409`).
pub(crate) fn describe_patterns(patterns: &[StatusPattern], contract: &Contract) -> String {
    let list = |v: &[u16]| v.iter().map(u16::to_string).collect::<Vec<_>>().join("/");
    patterns
        .iter()
        .map(|p| match p {
            StatusPattern::Exact(c) => c.to_string(),
            StatusPattern::Class(c) => format!("{c}xx"),
            StatusPattern::Mismatch => format!("mismatch ({})", list(&contract.mismatch_status)),
            StatusPattern::InFlight => format!("in flight ({})", list(&contract.in_flight_status)),
            StatusPattern::MissingKey => {
                format!("missing key ({})", list(&contract.missing_key_status))
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
        assert!(status_matches(StatusPattern::Mismatch, 409, &article));
        assert!(!status_matches(StatusPattern::Mismatch, 409, &ietf));
        assert!(status_matches(StatusPattern::Mismatch, 422, &ietf));
        assert!(status_matches(StatusPattern::Class(2), 204, &ietf));
        assert!(!status_matches(StatusPattern::Class(2), 304, &ietf));
        assert_eq!(
            describe_patterns(&[StatusPattern::Class(2), StatusPattern::Mismatch], &ietf),
            "2xx, mismatch (422)"
        );
    }

    #[test]
    fn limits_relative_to_the_ttl_use_the_declared_ttl() {
        let mut c = contract(Preset::Article);
        c.in_flight_ttl = Some(Duration::from_secs(3));
        let w = Within {
            plus_in_flight_ttl: true,
            extra: Duration::from_secs(5),
        };
        assert_eq!(within(&w, &c), Duration::from_secs(8));
    }
}
