//! Check procedures implemented in Rust, for logic beyond a linear script. The scenario's YAML still
//! gives level, reference, faults and parameters. A procedure sends through the check's
//! [`CheckRun`] like any step, so its requests are evidence in send order, paired with what the
//! proxy did; each judgement names the steps whose exchanges support it.

mod key_validation;
mod retry_storm;

use idemspec_scenarios::scenario::Procedure;

use super::context::CheckRun;
use crate::engine::Judgement;

/// Runs a procedure and returns its judgements.
pub(crate) async fn run(run: &CheckRun, procedure: Procedure) -> Vec<Judgement> {
    match procedure {
        Procedure::RetryStorm => retry_storm::run(run).await,
        Procedure::KeyValidation => key_validation::run(run).await,
    }
}
