//! A check's scenario file: id, level, source, capabilities, faults, steps and assertions.
//!
//! ```yaml
//! version: 1
//! id: lost-response
//! title: The server did the work, the response was lost; the retry replays it
//! level: MUST
//! reference: "article: lost responses; ietf-draft-07 §2.6"
//! faults:
//!   - {name: lose-first, match: {header: {name: x-idemspec-step, equals: first}}, fault: {drop_response: {}}}
//! steps:
//!   - {name: first, op: create, key: K1}
//!   - {name: retry, op: create, key: K1}
//! assert:
//!   - fault_applied: {step: first, upstream: worked}
//!   - status: {step: retry, in: [2xx]}
//!   - created: {equals: 1}
//! ```
//! Load with [`Scenario::load`]; every error names file, line and column.

mod assertion;
mod isolation;
mod step;

use serde::{Deserialize, Serialize};

pub use assertion::{
    AssertKind, Assertion, Conflict, ConflictKind, ConflictSteps, Consistent, Created, EffectDelta,
    FailureHandled, FaultApplied, HeaderPresent, LockReleased, Overlapped, SameResponse,
    SideEffects, StatusPattern, StatusSet, StepChoice, StepList, StepPair, StepRef, StepRefs,
    SucceededWithin, UpstreamOutcome,
};
pub use isolation::{AloneReason, Isolation};
pub use step::{BodyVariant, HookName, KeySpec, Operation, RetrySpec, Step, Via, Wait, Within};

use crate::load::{check_version, from_yaml, LoadError, LoadErrors, Spanned};
use crate::rules::{duplicate_message, duplicate_name, Fault, Rule};
use crate::value::HumanDuration;

/// How binding a check's rule is, as in RFC 2119: a broken MUST is a FAIL, a broken SHOULD a WARN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// Breaking it fails the run (exit code 1).
    Must,
    /// Breaking it is reported as WARN and does not fail the run.
    Should,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        })
    }
}

/// Something a check needs from the target profile; a check whose capability is missing is SKIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// `operations.get`.
    Get,
    /// `operations.delete`.
    Delete,
    /// `operations.delete` that takes an idempotency key, in a contract that covers DELETE.
    DeleteKey,
    /// `operations.action` in a contract that covers the action with its key.
    ActionKey,
    /// `operations.action`.
    Action,
    /// `operations.action.effect` (and `get` to read it).
    ActionEffect,
    /// `hooks.crash`.
    Crash,
    /// `hooks.restart`.
    Restart,
    /// `hooks.fail_next`.
    FailNext,
    /// A way to make a create fail once with a 5xx: `hooks.fail_next`, or the `fails_once`
    /// request variant.
    FailsOnce,
    /// The `always_fails` request variant.
    AlwaysFails,
    /// The `slow` request variant.
    Slow,
    /// A way to abandon a request mid-flight: `hooks.crash` and `hooks.restart` (or a target
    /// idemspec starts and kills), or the `hangs` request variant.
    Abandon,
    /// `side_effects` probe.
    SideEffects,
    /// A `{{variant}}` in the create body, so a differing request can be sent.
    BodyVariant,
    /// A declared in-flight TTL in the contract.
    InFlightTtl,
    /// A contract whose keys are scoped per principal (`per_principal: true`).
    PerPrincipalKeys,
}

/// Parameters of a scenario's `procedure` (all optional; the retry storm's, each with its default
/// documented).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Parameters {
    /// Number of concurrent clients (retry-storm: 1 to 10000, default 12).
    #[serde(default)]
    pub clients: Option<Spanned<u32>>,
    /// How many keys the clients share (retry-storm: client N uses key N mod `keys`, so
    /// `clients: 1000, keys: 100` is 10 clients per key, released together). 1 to `clients`, and
    /// only with `clients`; default one key per client.
    #[serde(default)]
    pub keys: Option<Spanned<u32>>,
    /// Maximum attempts per client.
    #[serde(default)]
    pub attempts: Option<Spanned<u32>>,
    /// Seed for random choices (backoff jitter).
    #[serde(default)]
    pub seed: Option<Spanned<u64>>,
    /// Overall time budget.
    #[serde(default)]
    pub within: Option<Spanned<HumanDuration>>,
}

impl Parameters {
    /// Each parameter in its range, each error pointing at its value: 1 to 10000 clients, 1 to
    /// `clients` keys, 1 to 1000 attempts, a `within` more than zero and within a step's limit.
    fn check(&self, errors: &mut LoadErrors) {
        if let Some(clients) = self
            .clients
            .as_ref()
            .filter(|n| !(1..=10_000).contains(&n.value))
        {
            errors.at(&clients.referenced, "parameters.clients must be 1 to 10000");
        }
        match (&self.keys, &self.clients) {
            (Some(keys), Some(clients)) if !(1..=clients.value).contains(&keys.value) => errors.at(
                &keys.referenced,
                format!(
                    "parameters.keys must be 1 to parameters.clients ({}), not {}",
                    clients.value, keys.value
                ),
            ),
            (Some(keys), None) => errors.at(
                &keys.referenced,
                "parameters.keys needs parameters.clients (how many clients share the keys)",
            ),
            _ => {}
        }
        if let Some(attempts) = self
            .attempts
            .as_ref()
            .filter(|n| !(1..=1_000).contains(&n.value))
        {
            errors.at(
                &attempts.referenced,
                "parameters.attempts must be 1 to 1000",
            );
        }
        if let Some(within) = &self.within {
            if within.value.0.is_zero() {
                errors.at(
                    &within.referenced,
                    "parameters.within must be positive: a storm with no time budget sends one \
                 attempt per client and proves nothing about retries",
                );
            } else if let Err(m) = step::within_step_limit("parameters.within", within.value.0) {
                errors.at(&within.referenced, m);
            }
        }
    }

    /// The names of the parameters given, in the order of the fields.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("clients", self.clients.is_some()),
            ("keys", self.keys.is_some()),
            ("attempts", self.attempts.is_some()),
            ("seed", self.seed.is_some()),
            ("within", self.within.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// One check: a scenario file (`docs/writing-scenarios.md`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Schema version; must be `1`.
    pub version: Spanned<u32>,
    /// Stable id, kebab-case (`lost-response`).
    pub id: Spanned<String>,
    /// One-line title.
    pub title: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The rule's source: the article's section, the IETF draft section, Stripe's docs.
    pub reference: String,
    /// Capabilities the target profile must offer; otherwise the check is SKIP.
    #[serde(default)]
    pub requires: Vec<Capability>,
    /// Run alone from start to end, not beside other checks; hook steps and `side_effects`
    /// assertions make a check run alone for as long as they need ([`Scenario::isolation`]).
    #[serde(default)]
    pub exclusive: bool,
    /// Proxy rules active during the steps (the proxy's rule schema), with where each was written;
    /// names are unique in the list ([`crate::rules::duplicate_name`]).
    #[serde(default)]
    pub faults: Vec<Spanned<Rule>>,
    /// A check written in Rust that judges instead of the steps, by its name (`retry-storm`,
    /// `key-validation`: docs/writing-scenarios.md). The runner knows the names; it refuses one it
    /// does not know, at its position ([`Scenario::check_procedure`]).
    #[serde(default)]
    pub procedure: Option<Spanned<String>>,
    /// Parameters of the procedure.
    #[serde(default)]
    pub parameters: Parameters,
    /// The requests, waits and hooks, in order.
    #[serde(default)]
    pub steps: Vec<Spanned<Step>>,
    /// What must hold afterwards.
    #[serde(default, rename = "assert")]
    pub assertions: Vec<Spanned<Assertion>>,
}

impl Scenario {
    /// The earliest step before step `index` (0-based) that sends the same named key (`K1`,
    /// `sf:K1`, `after_5xx:K1`) as it: the request step `index` retries, if it retries one.
    pub fn retried_by(&self, index: usize) -> Option<&Step> {
        fn key_of(step: &Step) -> Option<&str> {
            step.op.and(step.key.as_ref()).and_then(KeySpec::name)
        }
        let key = key_of(&self.steps.get(index)?.value)?;
        self.steps[..index]
            .iter()
            .map(|s| &s.value)
            .find(|s| key_of(s) == Some(key))
    }

    /// Parses `text` (the contents of `file`), names unnamed steps `step-N` (1-based) and validates.
    ///
    /// # Errors
    /// A located [`LoadError`]: syntax, unknown fields, unknown assertions, and the rules of
    /// [`Scenario::validate`].
    pub fn load(file: &str, text: &str) -> Result<Self, LoadError> {
        let mut scenario: Scenario = from_yaml(file, text)?;
        for (i, step) in scenario.steps.iter_mut().enumerate() {
            step.value.index = i + 1;
        }
        scenario.validate(file)?;
        Ok(scenario)
    }

    /// Refuses a `procedure` that names none of `known` (the runner's procedures, each with the
    /// parameters it reads), or `parameters` the named one does not read, at the procedure's
    /// position.
    ///
    /// # Errors
    /// A located [`LoadError`] naming the procedures there are, or the parameters it reads.
    pub fn check_procedure(&self, file: &str, known: &[(&str, &[&str])]) -> Result<(), LoadError> {
        let Some(name) = &self.procedure else {
            return Ok(());
        };
        let Some((_, reads)) = known.iter().find(|(known, _)| *known == name.value) else {
            let names: Vec<&str> = known.iter().map(|(name, _)| *name).collect();
            // Quoted and escaped (a zero-width or control character shows), and cut short.
            let given: String = name.value.chars().take(64).collect();
            let cut = if given.len() < name.value.len() {
                "…"
            } else {
                ""
            };
            return Err(LoadError::at(
                file,
                &name.referenced,
                format!(
                    "unknown procedure {given:?}{cut}; expected one of: {}",
                    names.join(", ")
                ),
            ));
        };
        let unread: Vec<&str> = self
            .parameters
            .given()
            .into_iter()
            .filter(|p| !reads.contains(p))
            .collect();
        if unread.is_empty() {
            return Ok(());
        }
        let reads = if reads.is_empty() {
            "it reads none".to_owned()
        } else {
            format!("it reads {}", reads.join(", "))
        };
        Err(LoadError::at(
            file,
            &name.referenced,
            format!(
                "the procedure `{}` does not read `parameters.{}` ({reads})",
                name.value,
                unread.join("`, `parameters.")
            ),
        ))
    }

    /// Cross-field rules: version 1; a kebab-case id; steps or a procedure; each step exactly one
    /// of `op`, `wait`, `hook`; unique step names; unique fault rule names; every step reference names an earlier step;
    /// each assertion exactly one kind.
    ///
    /// # Errors
    /// A located [`LoadError`] for the first rule broken, with every other one in
    /// [`LoadError::more`].
    pub fn validate(&self, file: &str) -> Result<(), LoadError> {
        let mut errors = LoadErrors::new(file);
        check_version(&self.version, &mut errors);
        self.check_id_and_body(&mut errors);
        let (names, requests) = self.check_steps(&mut errors);
        self.check_assertions(&names, &requests, &mut errors);
        self.check_twin_names(&names, &mut errors);
        self.check_faults(&mut errors);
        self.parameters.check(&mut errors);
        errors.finish()
    }

    /// A kebab-case id, and either steps (with no `parameters`) or a procedure (with neither
    /// steps nor assertions).
    fn check_id_and_body(&self, errors: &mut LoadErrors) {
        let id = &self.id.value;
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            errors.at(
                &self.id.referenced,
                format!("id `{id}` must be kebab-case (a-z, 0-9, -)"),
            );
        }
        match &self.procedure {
            None if self.steps.is_empty() => errors.at(
                &self.id.referenced,
                "a scenario needs `steps` or a `procedure`",
            ),
            None if self.parameters != Parameters::default() => errors.at(
                &self.id.referenced,
                "`parameters` tune a `procedure`, and this scenario names none",
            ),
            Some(name) if !self.steps.is_empty() || !self.assertions.is_empty() => errors.at(
                &name.referenced,
                format!(
                    "a scenario that runs the procedure `{}` has no `steps` or `assert`: the \
                     procedure sends its requests and judges them",
                    name.value
                ),
            ),
            _ => {}
        }
    }

    /// Each step's rules ([`Step::validate`]) against the steps before it, and each name once;
    /// returns every step's name and those of the steps that send requests (what a `wait:
    /// {sent}` waits on and assertions judge).
    fn check_steps(&self, errors: &mut LoadErrors) -> (Vec<String>, Vec<String>) {
        let mut names: Vec<String> = Vec::new();
        // The steps that send requests: what a `wait: {sent}` waits on and assertions judge.
        let mut requests: Vec<String> = Vec::new();
        for step in &self.steps {
            let name = step.value.name();
            let problem = if names.contains(&name) {
                Some(format!("step name `{name}` is used twice"))
            } else {
                step.value.validate(&names, &requests).err()
            };
            if let Some(msg) = problem {
                errors.at(&step.referenced, msg);
            }
            if step.value.op.is_some() {
                requests.push(name.clone());
            }
            names.push(name);
        }
        (names, requests)
    }

    /// Each assertion's rules ([`Assertion::validate`]) against the step `names`; the steps it
    /// judges send requests (`requests`), and a `lock_released` judges a retry that stops at
    /// `released`.
    fn check_assertions(&self, names: &[String], requests: &[String], errors: &mut LoadErrors) {
        for a in &self.assertions {
            if let Err(m) = a.value.validate(names) {
                errors.at(&a.referenced, m);
            } else if let Some(s) = a
                .value
                .steps()
                .into_iter()
                .find(|s| !requests.iter().any(|r| r == s) && self.procedure.is_none())
            {
                errors.at(
                    &a.referenced,
                    format!("assertion names step `{s}`, a wait or a hook, which sends no request to judge"),
                );
            }
            // `lock_released` reads a retry that stops at `released`, with its twins.
            if let Some(l) = &a.value.lock_released {
                let released = self
                    .step(&l.step)
                    .and_then(|s| s.retry.as_ref())
                    .is_some_and(|r| r.until.contains(&StatusPattern::Released));
                if !released && names.contains(&l.step) {
                    errors.at(
                        &a.referenced,
                        format!(
                            "lock_released judges step `{}`, which needs `retry: {{…, until: \
                             [released]}}` (the retries that find the key locked or free)",
                            l.step
                        ),
                    );
                }
            }
        }
    }

    /// No step is named as another's twin (`<name>-twin`, the name a retried step's twins are
    /// recorded under).
    fn check_twin_names(&self, names: &[String], errors: &mut LoadErrors) {
        if let Some(name) = names.iter().find(|n| {
            n.strip_suffix("-twin")
                .is_some_and(|of| names.contains(&of.to_owned()))
        }) {
            errors.at(
                &self.id.referenced,
                format!(
                    "step name `{name}` is taken: a retried step's twins are recorded under \
                     `<name>-twin`; rename it"
                ),
            );
        }
    }

    /// Each fault rule's name once, and each delay within a step's limit.
    fn check_faults(&self, errors: &mut LoadErrors) {
        if let Some((index, name)) =
            duplicate_name(self.faults.iter().map(|r| r.value.name.as_str()))
        {
            let first = self
                .faults
                .iter()
                .position(|r| r.value.name == name)
                .unwrap_or_default();
            errors.at(
                &self.faults[index].referenced,
                duplicate_message(index, name, first),
            );
        }
        for Spanned { value: rule, .. } in &self.faults {
            let delay = match &rule.fault {
                Fault::DelayRequest { duration } => Some(("delay_request.duration", duration)),
                Fault::DelayResponse { duration } => Some(("delay_response.duration", duration)),
                _ => None,
            };
            if let Some(Err(m)) = delay.map(|(field, d)| step::within_step_limit(field, *d)) {
                errors.at(
                    &self.id.referenced,
                    format!("fault rule `{}`: {m}", rule.name),
                );
            }
        }
    }

    /// The step with this name.
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps
            .iter()
            .map(|s| &s.value)
            .find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests;
