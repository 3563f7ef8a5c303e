//! What a check run sees: the shared run environment and one check's own state (marker, keys,
//! step results).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idemspec_scenarios::profile::{Contract, Principal, TargetProfile};
use idemspec_scenarios::scenario::{KeySpec, Scenario};

use crate::client::{Client, Exchange};
use crate::hooks::HookRunner;

/// Shared by every check of a run.
pub(crate) struct Env {
    /// The target profile.
    pub profile: TargetProfile,
    /// The contract it declares, resolved.
    pub contract: Contract,
    /// The HTTP client.
    pub client: Client,
    /// Crash, restart, fail_next.
    pub hooks: Arc<dyn HookRunner>,
    /// Spreads direct requests over the base URLs.
    next_base: AtomicUsize,
}

impl Env {
    pub(crate) fn new(profile: TargetProfile, hooks: Arc<dyn HookRunner>) -> Self {
        let contract = profile.contract();
        Self {
            profile,
            contract,
            client: Client::new(),
            hooks,
            next_base: AtomicUsize::new(0),
        }
    }

    /// The next base URL of `urls`, round robin (several replicas share the load).
    pub(crate) fn pick<'a>(&self, urls: &'a [String]) -> &'a str {
        let i = self.next_base.fetch_add(1, Ordering::Relaxed);
        urls[i % urls.len()].trim_end_matches('/')
    }

    /// The principal named `name` (`A`/`B` for first/second).
    pub(crate) fn principal(&self, name: Option<&str>) -> Result<&Principal, String> {
        let name = name.unwrap_or("A");
        self.profile
            .principal(name)
            .ok_or_else(|| format!("the target profile has no principal `{name}`"))
    }

    /// The id of a created resource in a response body, via the profile's `create.id` JSONPath.
    pub(crate) fn created_id(&self, exchange: &Exchange) -> Option<String> {
        let json = exchange.json.as_ref()?;
        let node = self.profile.operations.create.id.first(json)?;
        match node {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

/// Everything a step produced.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepResult {
    /// Every request sent, in send order (retries included).
    pub exchanges: Vec<Exchange>,
    /// Why the step could not be carried out (unknown principal, no id to act on, hook failed).
    pub problem: Option<String>,
    /// Whether the step had a `retry` (assertions then judge its last attempt).
    pub retried: bool,
    /// Time from the first attempt's start to the end of the first 2xx response.
    pub succeeded_after: Option<Duration>,
}

impl StepResult {
    /// The responses assertions judge: the last attempt of a retried step, all of a concurrent one.
    pub(crate) fn judged(&self) -> &[Exchange] {
        if self.retried {
            self.exchanges
                .split_last()
                .map_or(&[], |(last, _)| std::slice::from_ref(last))
        } else {
            &self.exchanges
        }
    }

    /// The first exchange with a status.
    pub(crate) fn first_response(&self) -> Option<&Exchange> {
        self.exchanges.iter().find(|e| e.status.is_some())
    }

    /// The first 2xx.
    pub(crate) fn first_success(&self) -> Option<&Exchange> {
        self.exchanges.iter().find(|e| e.is_success())
    }
}

/// One check's state.
pub(crate) struct CheckState {
    /// Unique per check run (`m` + 10 hex digits): labels resources and prefixes keys.
    pub marker: String,
    /// Results by step name.
    pub results: BTreeMap<String, StepResult>,
    /// Side-effect counters before the first step, when a `side_effects` assertion needs them.
    pub counters_before: Option<Result<BTreeMap<String, i64>, String>>,
    /// Whether the profile's `list` saw this check's resources just before its first DELETE
    /// (probed only when a `created` assertion counts after one: after a delete, an empty list
    /// proves nothing about the profile). `Err` says why it did not.
    pub list_before_delete: Option<Result<(), String>>,
}

impl CheckState {
    pub(crate) fn new(scenario: &Scenario) -> Self {
        let _ = scenario;
        let marker = format!("m{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        Self {
            marker,
            results: BTreeMap::new(),
            counters_before: None,
            list_before_delete: None,
        }
    }

    /// The key header value for a key spec under `contract`; `None` when no key is sent.
    pub(crate) fn key_value(&self, key: &KeySpec, contract: &Contract) -> Option<String> {
        match key {
            KeySpec::None => None,
            KeySpec::Empty => Some(String::new()),
            KeySpec::Long(n) => {
                let mut k = format!("{}-", self.marker);
                while k.len() < *n {
                    k.push('x');
                }
                k.truncate(*n);
                Some(k)
            }
            KeySpec::Raw(raw) => Some(raw.clone()),
            KeySpec::Named(name) => Some(format!("{}-{name}", self.marker)),
            KeySpec::SfNamed(name) => Some(format!("\"{}-{name}\"", self.marker)),
            KeySpec::AfterFailure(name) if contract.replays_5xx => {
                Some(format!("{}-{name}-after-5xx", self.marker))
            }
            KeySpec::AfterFailure(name) => Some(format!("{}-{name}", self.marker)),
        }
    }

    /// The step's result (an empty one if it never ran).
    /// Every exchange of every step so far.
    pub(crate) fn exchanges(&self) -> impl Iterator<Item = &Exchange> + Clone {
        self.results.values().flat_map(|r| r.exchanges.iter())
    }

    pub(crate) fn result(&self, step: &str) -> &StepResult {
        const EMPTY: &StepResult = &StepResult {
            exchanges: Vec::new(),
            problem: None,
            retried: false,
            succeeded_after: None,
        };
        self.results.get(step).unwrap_or(EMPTY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::profile::{ContractSpec, Preset};

    #[test]
    fn keys_are_unique_per_check_and_follow_the_contract() {
        let state = CheckState {
            marker: "m1".into(),
            results: BTreeMap::new(),
            counters_before: None,
            list_before_delete: None,
        };
        let article = ContractSpec::default().resolve();
        let stripe = ContractSpec {
            preset: Preset::StripeV1,
            ..ContractSpec::default()
        }
        .resolve();
        let key = |spec: &str, c: &Contract| state.key_value(&KeySpec::parse(spec).unwrap(), c);
        assert_eq!(key("K1", &article).as_deref(), Some("m1-K1"));
        assert_eq!(key("sf:K1", &article).as_deref(), Some("\"m1-K1\""));
        assert_eq!(key("none", &article), None);
        assert_eq!(key("long:300", &article).map(|k| k.len()), Some(300));
        assert_eq!(key("after_5xx:K1", &article).as_deref(), Some("m1-K1"));
        assert_eq!(
            key("after_5xx:K1", &stripe).as_deref(),
            Some("m1-K1-after-5xx")
        );
    }
}
