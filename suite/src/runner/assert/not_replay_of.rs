//! `not_replay_of: {step, as}`: the step was handled as its own operation, not answered with the
//! other step's response replayed — unless the contract says that is the answer: a key reused on
//! another endpoint by the same principal, where keys are not scoped per endpoint and a reused key
//! with another request gets the original's answer (`per_endpoint: false`, `mismatch_answer:
//! original`, Google Cloud's `requestId`).

use idemspec_scenarios::profile::{Contract, MismatchAnswer};
use idemspec_scenarios::scenario::{Operation, StepPair};

use super::compare::{error_again_words, same_answer, same_error_again};
use super::{responses, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::model::{Claim, RequestRecord};
use crate::runner::context::CheckRun;

/// The `not_replay_of` kind.
pub(super) struct NotReplayOf<'a>(pub &'a StepPair);

impl Judge for NotReplayOf<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        self.judge_claiming(run).0
    }

    fn judge_claiming(&self, run: &CheckRun) -> (Finding, Vec<Claim>) {
        let StepPair { step, other } = self.0;
        let Some(original) = run.step(other).first_response() else {
            let why = format!("step `{other}` got no response to compare with");
            return (Undecided(why), Vec::new());
        };
        let rs = match responses(run, step) {
            Err(e) => return (Undecided(e), Vec::new()),
            Ok(rs) => rs,
        };
        if let Some(again) = rs.iter().find(|r| same_answer(run, r, original)) {
            if same_error_again(run, again, original) {
                return (
                    Held(error_again_words(run, step, other, original)),
                    Vec::new(),
                );
            }
            let (replayed, first) = (&again.evidence.request, &original.evidence.request);
            if answers_original(run.contract(), replayed, first) {
                let held = Held(format!(
                    "`{step}` got `{other}`'s answer ({}): under {}, a key reused with another \
                     request (here on another endpoint, keys not scoped per endpoint) is answered \
                     with the original's",
                    again.describe(),
                    run.contract().who_says("mismatch_answer", "original")
                ));
                return (held, Vec::new());
            }
            let alike = again.status == original.status && again.body == original.body;
            let claim = alike.then(|| Claim::GotAnswerOf {
                step: step.clone(),
                of: other.clone(),
            });
            let finding = Broken(format!(
                "`{step}` got `{other}`'s response replayed ({}): {}",
                original.describe(),
                scope_at_issue(replayed, first)
            ));
            return (finding, claim.into_iter().collect());
        }
        let ctx = run.ctx();
        // Between two principals' creates, the resources their answers name tell operations
        // apart (an action's answer names the resource it acted on, which is the create's; one
        // principal's create after a delete may be given the deleted resource's id again).
        let creates = creates_of_two_principals(run, step, other, original, &rs);
        let other_id = ctx.created_id(original).filter(|_| creates);
        // Two creates answered with one resource: the same resource, whatever the bodies say.
        if let Some((shared, id)) = shared_resource(run, &rs, other_id.as_deref()) {
            let claim = Claim::GotResourceOf {
                step: step.clone(),
                of: other.clone(),
                id,
            };
            let finding = Broken(format!(
                "{claim} ({}): {}",
                shared.describe(),
                scope_at_issue(&shared.evidence.request, &original.evidence.request)
            ));
            return (finding, vec![claim]);
        }
        let answered = rs
            .iter()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join(", ");
        // Only a success was handled; a refusal is no replay, and nothing more.
        if rs.iter().all(|r| r.is_success()) {
            let claim = Claim::OwnOperation {
                step: step.clone(),
                ids: rs
                    .iter()
                    .filter(|_| creates)
                    .filter_map(|r| ctx.created_id(r))
                    .collect(),
                other: other.clone(),
                other_id,
            };
            return (Held(format!("{claim} ({answered})")), vec![claim]);
        }
        let held = Held(format!(
            "`{step}` did not get `{other}`'s response replayed (it answered {answered})"
        ));
        (held, Vec::new())
    }
}

/// Whether `step` and `other` are both creates, sent by different principals (`original` is
/// `other`'s answer, `rs` are `step`'s): a resource both answers name is then one resource given
/// to two principals.
fn creates_of_two_principals(
    run: &CheckRun,
    step: &str,
    other: &str,
    original: &Exchange,
    rs: &[&Exchange],
) -> bool {
    let is_create = |name: &str| {
        run.scenario
            .steps
            .iter()
            .any(|s| s.value.name() == name && s.value.op == Some(Operation::Create))
    };
    let principal = &original.evidence.request.principal;
    is_create(step)
        && is_create(other)
        && rs
            .iter()
            .all(|r| &r.evidence.request.principal != principal)
}

/// The first success among `rs` naming the resource `other_id`, with that id.
fn shared_resource<'a>(
    run: &CheckRun,
    rs: &[&'a Exchange],
    other_id: Option<&str>,
) -> Option<(&'a Exchange, String)> {
    let other_id = other_id?;
    rs.iter()
        .find(|r| r.is_success() && run.ctx().created_id(r).as_deref() == Some(other_id))
        .map(|r| (*r, other_id.to_owned()))
}

/// Whether the contract makes `replayed`'s answer the original's: the same principal sent the key
/// to another endpoint, keys are not scoped per endpoint, and a reused key with another request
/// gets the original's answer.
fn answers_original(
    contract: &Contract,
    replayed: &RequestRecord,
    original: &RequestRecord,
) -> bool {
    contract.mismatch_answer == MismatchAnswer::Original
        && !contract.per_endpoint
        && replayed.principal == original.principal
        && (replayed.method != original.method || replayed.path != original.path)
}

/// What scope the key lacked, read from how the two requests differ: the principal (cross-tenant),
/// the operation (method and path), or neither.
fn scope_at_issue(replayed: &RequestRecord, original: &RequestRecord) -> String {
    if replayed.principal != original.principal {
        format!(
            "the key was not scoped per principal (`{}` got `{}`'s response)",
            replayed.principal, original.principal
        )
    } else if replayed.method != original.method || replayed.path != original.path {
        format!(
            "the key was not scoped to the operation ({} {} got the response of {} {})",
            replayed.method, replayed.path, original.method, original.path
        )
    } else {
        "the same request was answered with another step's response".into()
    }
}
