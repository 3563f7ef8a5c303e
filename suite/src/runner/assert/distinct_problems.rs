//! `distinct_problems: {steps}`: two conflicts a client must tell apart — "in flight, retry later"
//! and "mismatch, never retry" — differ in status, in what the contract's `error_shape` names (the
//! problem `type`, RFC 9457 §3.1.1, under `problem`; the vendor's member at `at`), in a vendor's
//! error code, or in `Retry-After`. An entry
//! may list several steps (two same-key requests, either of which may be the one refused as in
//! flight); the first of them that got a refusal stands for it.

use idemspec_scenarios::profile::{Contract, MismatchAnswer};
use idemspec_scenarios::scenario::{ConflictSteps, StepChoice};

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Recorded, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::CheckRun;

/// The `distinct_problems` kind.
pub(super) struct DistinctProblems<'a>(pub &'a ConflictSteps);

impl Judge for DistinctProblems<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        if contract.mismatch_answer == MismatchAnswer::Original {
            return Held(format!(
                "no mismatch refusal to tell from an in-flight one: {} says a reused key with \
                 another request gets the original's answer",
                contract.who_says("mismatch_answer", "original")
            ));
        }
        let mut firsts = Vec::new();
        for choice in &self.0.steps {
            match refusal_of(run, choice) {
                Ok(found) => firsts.push(found),
                Err(finding) => return finding,
            }
        }
        for (i, (a, ea)) in firsts.iter().enumerate() {
            for (b, eb) in &firsts[i + 1..] {
                if tells(ea, contract) == tells(eb, contract) {
                    return Broken(format!(
                        "`{a}` and `{b}` both answered {}, with the same {}error code and \
                         Retry-After: a client cannot tell a retryable conflict from a terminal one",
                        ea.describe(),
                        contract
                            .error_shape
                            .naming()
                            .map_or(String::new(), |n| format!("{n}, "))
                    ));
                }
            }
        }
        let all: Vec<String> = firsts
            .iter()
            .map(|(s, e)| format!("`{s}` {}", e.describe()))
            .collect();
        Held(format!("conflicts are distinguishable: {}", all.join(", ")))
    }
}

/// The first step of `choice` whose first answer was a refusal, with it; or the finding when
/// none was: not compared (every step was answered with a success, and the sentence says what
/// that shows: one step's success is its own assertion's to judge; two same-key requests that
/// were both served did not overlap, or were not refused though they did), or undecided (a step
/// got no answer).
fn refusal_of<'r>(
    run: &'r CheckRun,
    choice: &'r StepChoice,
) -> Result<(&'r str, &'r Exchange), Finding> {
    let mut answered = Vec::new();
    for s in choice.names() {
        match run.step(s).first_response() {
            Some(e) if !e.is_success() => return Ok((s, e)),
            Some(e) => answered.push(format!("`{s}` answered {}", e.describe())),
            None => return Err(Undecided(format!("step `{s}` got no response"))),
        }
    }
    let why = if answered.len() < 2 {
        // One step, answered as a success: the assertion that owns that step judges the answer.
        "not a refusal".to_owned()
    } else if run.ctx().profile.operations.create.variants.slow.is_some() {
        "neither refused, though the profile's `slow` request kept the first running: the API \
         took them up one after the other, or does not refuse a key in flight \
         (concurrent-same-key judges that)"
            .to_owned()
    } else {
        "neither refused: they did not overlap (two same-key requests surely overlap only with \
         the profile's `slow` request variant, which it has none of)"
            .to_owned()
    };
    Err(Recorded(format!(
        "the conflicts could not be compared: {}, {why}",
        answered.join(", ")
    )))
}

/// What a client can tell two conflicts apart by: the status, what the contract's error shape
/// names (the problem `type`, or the value at the vendor's place), an error code in a JSON body
/// (`code`, `error.code`, `error.type`, or `error` as a string, as vendors write them, whatever
/// the shape), and whether `Retry-After` says "come back later".
fn tells(e: &Exchange, contract: &Contract) -> (Option<u16>, Option<String>, Option<String>, bool) {
    let code = e.json.as_deref().and_then(|json| {
        ["/code", "/error/code", "/error/type", "/error"]
            .iter()
            .find_map(|p| json.pointer(p).and_then(|v| v.as_str()).map(str::to_owned))
    });
    (
        e.status,
        contract.error_shape.names(e.json.as_deref()),
        code,
        e.header("retry-after").is_some(),
    )
}
