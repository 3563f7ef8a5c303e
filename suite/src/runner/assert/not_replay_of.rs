//! `not_replay_of: {step, as}`: the step was handled as its own operation, not answered with the
//! other step's response replayed — unless the contract says that is the answer: a key reused on
//! another endpoint by the same principal, where keys are not scoped per endpoint and a reused key
//! with another request gets the original's answer (`per_endpoint: false`, `mismatch_answer:
//! original`, Google Cloud's `requestId`).

use idemspec_scenarios::profile::{Contract, MismatchAnswer};
use idemspec_scenarios::scenario::StepPair;

use super::compare::{error_again_words, same_answer, same_error_again};
use super::{responses, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::model::RequestRecord;
use crate::runner::context::CheckRun;

/// The `not_replay_of` kind.
pub(super) struct NotReplayOf<'a>(pub &'a StepPair);

impl Judge for NotReplayOf<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let StepPair { step, other } = self.0;
        let Some(original) = run.step(other).first_response() else {
            return Undecided(format!("step `{other}` got no response to compare with"));
        };
        match responses(run, step) {
            Err(e) => Undecided(e),
            Ok(rs) => match rs.iter().find(|r| same_answer(run, r, original)) {
                Some(again) if same_error_again(run, again, original) => {
                    Held(error_again_words(run, step, other, original))
                }
                Some(replayed)
                    if answers_original(
                        run.contract(),
                        &replayed.evidence.request,
                        &original.evidence.request,
                    ) =>
                {
                    Held(format!(
                        "`{step}` got `{other}`'s answer ({}): under {}, a key reused with \
                         another request (here on another endpoint, keys not scoped per \
                         endpoint) is answered with the original's",
                        replayed.describe(),
                        run.contract().who_says("mismatch_answer", "original")
                    ))
                }
                Some(replayed) => Broken(format!(
                    "`{step}` got `{other}`'s response replayed ({}): {}",
                    original.describe(),
                    scope_at_issue(&replayed.evidence.request, &original.evidence.request)
                )),
                // Only a success was handled; a refusal is no replay, and nothing more.
                None if rs.iter().all(|r| r.is_success()) => Held(format!(
                    "`{step}` was handled as its own operation ({})",
                    rs.iter()
                        .map(|r| r.describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                None => Held(format!(
                    "`{step}` did not get `{other}`'s response replayed (it answered {})",
                    rs.iter()
                        .map(|r| r.describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            },
        }
    }
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
