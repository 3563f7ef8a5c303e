//! Check procedures implemented in Rust, for logic beyond a linear script. The scenario's YAML still
//! gives level, reference, faults and parameters.

mod key_validation;
mod retry_storm;

use std::sync::Arc;

use idemspec_scenarios::scenario::{Procedure, Scenario};

use super::context::{CheckState, Env};
use super::verdict::Judgement;
use crate::model::Evidence;

/// Runs a procedure; returns its judgements and the evidence to show if it does not pass.
pub(crate) async fn run_procedure(
    env: &Arc<Env>,
    scenario: &Scenario,
    procedure: Procedure,
    state: &CheckState,
    proxy_urls: Option<&[String]>,
) -> (Vec<Judgement>, Vec<Evidence>) {
    match procedure {
        Procedure::RetryStorm => retry_storm::run(env, scenario, state, proxy_urls).await,
        Procedure::KeyValidation => key_validation::run(env, scenario, state).await,
    }
}

/// A judgement at the scenario's level and reference.
pub(crate) fn judgement(scenario: &Scenario, finding: super::verdict::Finding) -> Judgement {
    Judgement {
        finding,
        level: scenario.level,
        reference: scenario.reference.clone(),
        steps: vec![],
        precondition: false,
    }
}
